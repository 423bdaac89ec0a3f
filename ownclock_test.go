package senseboard_test

import (
	"io"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
)

// A device and a fleet that made a real clock for want of one in their
// Config close it: the calls pending on it are dropped. A clock they were
// given is their giver's to close.
func TestOwnRealClockClosed(t *testing.T) {
	given := clock.NewReal()
	defer given.Close()
	for _, tt := range []struct {
		name string
		cfg  senseboard.Config
		own  bool
		open func(cfg senseboard.Config) (clock.Clock, io.Closer, error)
	}{
		{"device", senseboard.Config{}, true, openDevice},
		{"device on a clock given", senseboard.Config{Clock: given}, false, openDevice},
		{"fleet", senseboard.Config{}, true, openFleet},
		{"fleet on a clock given", senseboard.Config{Clock: given}, false, openFleet},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.StateDir = t.TempDir()
			c, closer, err := tt.open(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tm := c.AfterFunc(time.Hour, func() {})
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			if pending := tm.Stop(); pending == tt.own {
				t.Errorf("after Close a call an hour away was pending %v on the devices' clock (their own %v)", pending, tt.own)
			}
		})
	}
}

func openDevice(cfg senseboard.Config) (clock.Clock, io.Closer, error) {
	d, err := senseboard.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return d.Clock(), d, nil
}

func openFleet(cfg senseboard.Config) (clock.Clock, io.Closer, error) {
	f, err := senseboard.NewFleet(cfg, senseboard.FleetOptions{Devices: 1, PTY: "none", Listen: "none"})
	if err != nil {
		return nil, nil, err
	}
	return f.Members[0].Device.Clock(), f, nil
}
