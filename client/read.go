package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"senseboard/wire"
)

// Reading the stream. One goroutine at a time reads it, holding readMu, and
// hands each frame to dispatch. On a stream with read deadlines (TCP) a
// request's own goroutine reads while it waits for its answer and nothing
// else needs reading: an answer then costs no hand-over between goroutines,
// which is most of a request's time on a fast link. A background goroutine
// reads while subscriptions run, and always on streams without deadlines
// (ttys, the radio link, whose unsolicited frames must be seen at once).
// Whoever lets go of the stream broadcasts on c.free, when a request
// waits, so that it can take over. A stream that pushes what it receives
// (pusher, with Options.Push) is not read at all: it hands the bytes to
// feed on its own goroutine.

// deadliner is a stream whose reads can be given a deadline.
type deadliner interface {
	SetReadDeadline(t time.Time) error
}

// pusher is a stream that hands what it receives to data as it arrives,
// one call at a time and in order, beginning with what it holds unread,
// and calls end once with why it ended (io.EOF for an orderly end), as a
// stream of the radio link does.
type pusher interface {
	Push(data func([]byte), end func(error))
}

// needBackground says whether a background goroutine must read; c.mu is held.
func (c *Conn) needBackground() bool { return !c.pushed && (!c.direct || len(c.subs) > 0) }

// startBackground starts the background reader when it is needed and not
// running; c.mu is held.
func (c *Conn) startBackground() {
	if c.bgOn || !c.needBackground() || c.err != nil {
		return
	}
	c.bgOn = true
	c.wg.Add(1)
	go c.background()
}

// background reads while it is needed. It exits when it is not, or when the
// stream fails.
func (c *Conn) background() {
	defer c.wg.Done()
	for {
		c.readMu.Lock()
		if c.direct {
			c.rw.(deadliner).SetReadDeadline(time.Time{})
		}
		c.mu.Lock()
		need := c.needBackground() && c.err == nil
		if !need {
			c.bgOn = false
		}
		c.mu.Unlock()
		if !need {
			c.release()
			return
		}
		err := c.readOnce()
		c.release()
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
}

// readOnce reads what the stream has and dispatches the frames in it;
// readMu is held. An error other than a deadline closes the connection.
func (c *Conn) readOnce() error {
	n, err := c.rw.Read(c.rbuf)
	if n > 0 {
		c.feed(c.rbuf[:n])
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.ended(err)
	}
	return err
}

// feed decodes what the stream brought and dispatches the frames in it;
// one call at a time.
func (c *Conn) feed(b []byte) {
	c.dec.Feed(b, c.dispatch)
	if o := c.dec.Oversized; o.OK {
		c.dec.Oversized.OK = false
		c.oversized(o.Kind, o.ID, o.Length)
	}
}

// ended closes the connection whose stream failed or ended with err.
func (c *Conn) ended(err error) { c.shut(fmt.Errorf("%w: %w", ErrClosed, err)) }

// release lets go of the stream and tells the requests that wait.
func (c *Conn) release() {
	c.readMu.Unlock()
	c.mu.Lock()
	if c.waiting {
		close(c.free)
		c.free = make(chan struct{})
		c.waiting = false
	}
	c.mu.Unlock()
}

// errTimeout is a wait that reached its deadline.
var errTimeout = errors.New("timeout")

// await waits until ch has a frame, reading the stream itself when it may.
// It fails with errTimeout at deadline, or with ctx's error or the
// connection's, named with the port.
func (c *Conn) await(ctx context.Context, ch <-chan wire.Frame, deadline time.Time) (wire.Frame, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case f := <-ch:
			return f, nil
		default:
		}
		c.mu.Lock()
		free, bg, err := c.free, c.bgOn, c.err
		c.waiting = true
		c.mu.Unlock()
		if err != nil {
			return wire.Frame{}, fmt.Errorf("%s: %w", c.port, err)
		}
		if c.direct && !bg && c.readMu.TryLock() {
			f, ok, err := c.lead(ctx, ch, deadline)
			c.release()
			if ok || err != nil {
				return f, err
			}
			continue
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case f := <-ch:
			return f, nil
		case <-free: // the reader let go: take over, perhaps
		case <-c.done:
			return wire.Frame{}, fmt.Errorf("%s: %w", c.port, c.Err())
		case <-ctx.Done():
			return wire.Frame{}, fmt.Errorf("%s: %w", c.port, ctx.Err())
		case <-timer.C:
			return wire.Frame{}, errTimeout
		}
	}
}

// lead reads the stream until ch has a frame; readMu is held. It returns
// with ok false when a background reader is wanted meanwhile.
func (c *Conn) lead(ctx context.Context, ch <-chan wire.Frame, deadline time.Time) (f wire.Frame, ok bool, err error) {
	d := c.rw.(deadliner)
	d.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { d.SetReadDeadline(time.Unix(1, 0)) })
	defer func() {
		stop()
		d.SetReadDeadline(time.Time{})
	}()
	for {
		select {
		case f := <-ch:
			return f, true, nil
		default:
		}
		c.mu.Lock()
		bg := c.bgOn
		c.mu.Unlock()
		if bg {
			return wire.Frame{}, false, nil
		}
		if err := c.readOnce(); err != nil {
			select {
			case f := <-ch: // the last read brought it
				return f, true, nil
			default:
			}
			switch {
			case ctx.Err() != nil:
				return wire.Frame{}, false, fmt.Errorf("%s: %w", c.port, ctx.Err())
			case errors.Is(err, os.ErrDeadlineExceeded):
				return wire.Frame{}, false, errTimeout
			}
			return wire.Frame{}, false, fmt.Errorf("%s: %w", c.port, c.Err())
		}
	}
}

// oversized fails the request whose answer the decoder dropped for its
// length, at once and with the reason, instead of letting it wait for an
// answer that will not come.
func (c *Conn) oversized(kind wire.Kind, id, length uint32) {
	if kind != wire.Response {
		return
	}
	b, _ := json.Marshal(wire.ErrorMsg{Error: fmt.Sprintf("the device's answer of %d bytes exceeds the protocol's maximum payload of %d bytes and was dropped", length, wire.MaxPayload)})
	c.dispatch(wire.Frame{Kind: wire.Error, ID: id, Payload: b})
}
