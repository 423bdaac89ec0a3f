package phone

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"senseboard/link"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/wire"
)

// holdingDevice is a device at the other end of the radio link's
// streams: it answers hello, scan, connect and every request (200, no
// content), and holds its answer to a disconnect (closing the stream)
// until let is closed, having said so on disconnecting. It counts the
// streams dialled.
type holdingDevice struct {
	dials         atomic.Int32
	disconnecting chan struct{}
	let           chan struct{}
	wg            sync.WaitGroup
}

func (h *holdingDevice) dial(context.Context) (net.Conn, error) {
	h.dials.Add(1)
	dev, central := net.Pipe()
	h.wg.Go(func() { h.serve(dev) })
	return central, nil
}

func (h *holdingDevice) serve(conn net.Conn) {
	defer conn.Close()
	dec := wire.NewDecoder(0)
	send := func(kind wire.Kind, id uint32, v any) {
		b, _ := wire.AppendJSONFrame(nil, kind, id, v)
		conn.Write(b)
	}
	adv := radio.DefaultAdvertisement("Holding", "000777", false, false, false)
	p := adv.Packets()
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		closed := false
		dec.Feed(buf[:n], func(f wire.Frame) {
			switch f.Kind {
			case wire.Hello:
				var m wire.HelloMsg
				json.Unmarshal(f.Payload, &m)
				send(wire.Welcome, 0, &wire.WelcomeMsg{Protocol: wire.Version, Session: m.Session, Serial: "000777", URIPrefix: "/net/000777", MaxPayload: wire.MaxPayload})
			case link.Scan:
				send(link.Advert, f.ID, &link.AdvertMsg{Serial: "000777", Address: "0C:8C:DC:00:07:77", Advertising: true, Adv: p.Adv, ScanResp: p.ScanResp})
			case link.Connect:
				send(link.Connected, f.ID, &link.ConnectedMsg{Handle: 1})
			case wire.Ping:
				conn.Write(wire.AppendFrame(nil, wire.Pong, f.ID, nil))
			case wire.Request:
				b, _ := wire.AppendEnvelope(nil, f.ID, &resource.Envelope{Status: resource.StatusOK, Op: resource.Get, URI: "/net/000777/Info"})
				conn.Write(b)
			case link.Disconnect:
				h.disconnecting <- struct{}{}
				<-h.let
				closed = true
			}
		})
		if err != nil || closed {
			return
		}
	}
}

// A use of a device that comes while the phone lets go of its connection
// (a release: nobody used it for Idle; or a user's disconnect) waits for
// the connection to end and connects anew: it does not fail on the link
// being closed. Where the phone connects only when asked (Manual), the
// use fails at once as not connected.
func TestUseDuringARelease(t *testing.T) {
	for _, tt := range []struct {
		name   string
		manual bool
		idle   time.Duration
		letGo  func(context.Context, *Phone)
	}{
		// nobody used it for Idle: the scan releases it
		{"release", false, time.Nanosecond, func(ctx context.Context, ph *Phone) { ph.Scan(ctx) }},
		{"disconnect", false, time.Hour, func(ctx context.Context, ph *Phone) { ph.Disconnect(ctx, "000777") }},
		{"manual release", true, time.Nanosecond, func(ctx context.Context, ph *Phone) { ph.Scan(ctx) }},
		{"manual disconnect", true, time.Hour, func(ctx context.Context, ph *Phone) { ph.Disconnect(ctx, "000777") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dev := &holdingDevice{disconnecting: make(chan struct{}, 1), let: make(chan struct{})}
			ph, err := New(Config{Local: []Peripheral{{Serial: "000777", Dial: dev.dial}}, Manual: tt.manual, Idle: tt.idle, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.wg.Wait()
			defer ph.Close()
			ctx := context.Background()
			ph.Scan(ctx)
			if tt.manual {
				if err := ph.Connect(ctx, "000777"); err != nil {
					t.Fatal(err)
				}
			}
			u, err := ph.Use(ctx, "000777")
			if err != nil {
				t.Fatal(err)
			}
			u.Done()

			var letGo sync.WaitGroup
			letGo.Go(func() { tt.letGo(ctx, ph) })
			<-dev.disconnecting
			if tt.manual {
				// the link is closing and the device holds it open
				err := useDuring(ctx, ph, dev)
				letGo.Wait()
				if !errors.Is(err, ErrNotConnected) {
					t.Errorf("a use while the phone let go of the device (%s): %v; want %v", tt.name, err, ErrNotConnected)
				}
				if n := dev.dials.Load(); n != 1 {
					t.Errorf("%d streams dialled, want 1: the ended connection's", n)
				}
				return
			}
			done := make(chan error, 1)
			go func() {
				u, err := ph.Use(ctx, "000777")
				if err != nil {
					done <- err
					return
				}
				defer u.Done()
				_, err = u.Do(ctx, resource.Get, "/Info")
				done <- err
			}()
			d, _ := ph.device("000777")
			for { // until the use has begun
				d.mu.Lock()
				n := d.inUse
				d.mu.Unlock()
				if n == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			close(dev.let)
			letGo.Wait()
			if err := <-done; err != nil {
				t.Errorf("a use while the phone let go of the device (%s): %v", tt.name, err)
			}
			if n := dev.dials.Load(); n != 2 {
				t.Errorf("%d streams dialled, want 2: the ended connection's and the use's", n)
			}
		})
	}
}

// useDuring uses the device while it holds its answer to a disconnect,
// and then lets it answer: the error of the use, or of its request when
// the use took the closing link.
func useDuring(ctx context.Context, ph *Phone, dev *holdingDevice) error {
	u, err := ph.Use(ctx, "000777")
	if err != nil {
		close(dev.let)
		return err
	}
	defer u.Done()
	done := make(chan error, 1)
	go func() {
		_, err := u.Do(ctx, resource.Get, "/Info")
		done <- err
	}()
	close(dev.let)
	return <-done
}
