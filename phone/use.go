package phone

import (
	"context"
	"errors"
	"fmt"
	"time"

	"senseboard/api"
	"senseboard/client"
	"senseboard/link"
	"senseboard/resource"
)

// ErrNotConnected is a use of a device that is not connected, where the
// phone connects only when asked (Config.Manual, Config.ConnectAll).
var ErrNotConnected = errors.New("not connected")

// Use is a client's use of a device, from Phone.Use until Done: a request,
// a subscription, a read. While uses last, the phone keeps the device's
// connection; the last use's end starts its idle time (Config.Idle).
type Use struct {
	d    *peer
	c    *link.Conn
	done func()
}

// Use takes a device into use, connecting to it when it is not connected
// and the phone connects on demand (OnDemand). A use that cannot connect
// says why.
func (ph *Phone) Use(ctx context.Context, serial string) (*Use, error) {
	d, err := ph.device(serial)
	if err != nil {
		return nil, err
	}
	c, done, err := d.use(ctx)
	if err != nil {
		return nil, err
	}
	return &Use{d: d, c: c, done: done}, nil
}

// Done ends the use.
func (u *Use) Done() { u.done() }

// Do makes a request of the device and returns its envelope; an envelope
// with an error status is not an error of Do.
func (u *Use) Do(ctx context.Context, op resource.Op, path string, params ...resource.Value) (*client.Envelope, error) {
	ctx, cancel := context.WithTimeout(ctx, u.d.ph.cfg.Timeout)
	defer cancel()
	env, err := u.c.Do(ctx, op, path, params...)
	if err != nil {
		return nil, u.d.error(err)
	}
	return env, nil
}

// Operation returns the device's own definition of op on path, learning
// its definitions again when they lack it (an app may have added it
// since); nil when the device has none, or cannot say.
func (u *Use) Operation(ctx context.Context, op resource.Op, path string) *api.Operation {
	return u.d.operation(ctx, u.c, op, path)
}

// OnDemand reports whether the phone connects to a device when a client
// uses it: it is neither Manual nor ConnectAll.
func (ph *Phone) OnDemand() bool { return !ph.cfg.Manual && !ph.cfg.ConnectAll }

// Timeout returns the bound of each exchange with a device.
func (ph *Phone) Timeout() time.Duration { return ph.cfg.Timeout }

// error words an error of a request or subscription of a device: the
// device's own words (the line protocol's error frame), named with the
// device, or what happened to the link, which the link names it in.
func (d *peer) error(err error) error {
	var re *client.RemoteError
	if errors.As(err, &re) {
		return fmt.Errorf("device %s: %w", d.serial, re)
	}
	return err
}
