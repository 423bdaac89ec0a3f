package client_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/wire"
)

// TestKeepalive: an idle connection pings, no sooner than PingInterval
// after the last frame it sent, and again after the pong.
func TestKeepalive(t *testing.T) {
	t.Parallel()
	dev, cen := net.Pipe()
	pings := make(chan time.Time, 4)
	served := make(chan struct{})
	go func() { // a device that welcomes and answers pings
		defer close(served)
		dec := wire.NewDecoder(0)
		b := make([]byte, 4096)
		for {
			n, err := dev.Read(b)
			if err != nil {
				return
			}
			dec.Feed(b[:n], func(f wire.Frame) {
				switch f.Kind {
				case wire.Hello:
					var h wire.HelloMsg
					json.Unmarshal(f.Payload, &h)
					out, _ := wire.AppendJSONFrame(nil, wire.Welcome, 0, &wire.WelcomeMsg{Protocol: wire.Version, Session: h.Session})
					dev.Write(out)
				case wire.Ping:
					pings <- time.Now()
					dev.Write(wire.AppendFrame(nil, wire.Pong, f.ID, nil))
				}
			})
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	last := time.Now() // before the hello goes
	c, err := client.Open(ctx, "pipe", cen, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close(); dev.Close(); <-served }()
	for i := range 2 {
		select {
		case at := <-pings:
			if at.Sub(last) < wire.PingInterval {
				t.Errorf("ping %d came %v after the frame before; the least is %v", i+1, at.Sub(last), wire.PingInterval)
			}
			last = at
		case <-ctx.Done():
			t.Fatalf("ping %d did not come", i+1)
		}
	}
}
