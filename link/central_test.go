package link_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/frametest"
	"senseboard/link"
	"senseboard/wire"
)

// scripted opens a stream named "device 000123" to a device that answers
// a scan with scan; the stream closes when the test ends.
func scripted(t *testing.T, scan frametest.Answer) *link.Conn {
	t.Helper()
	dev, central := net.Pipe()
	var wg sync.WaitGroup
	welcome := `{"protocol":1,"session":"SESSION","serial":"000123","uriPrefix":"/net/000123","maxPayload":65536}`
	wg.Go(func() {
		frametest.Script(dev, map[wire.Kind]frametest.Answer{
			wire.Hello: {Kind: wire.Welcome, Payload: []byte(welcome)},
			link.Scan:  scan,
		})
	})
	t.Cleanup(wg.Wait)
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang protection
	defer cancel()
	c, err := (&link.Central{Timeout: await.Guard}).Open(ctx, "device 000123", central, link.Handlers{})
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A refusal of the radio's operations names the device once, whether the
// device's words name it or not, and is the device's *client.RemoteError;
// a refusal because the device holds no session for the stream is
// client.ErrNoSession too, as the line protocol's calls give it.
func TestRefusalNamesTheDeviceOnce(t *testing.T) {
	for _, tt := range []struct {
		name      string
		payload   string
		want      string // the error's text
		noSession bool
	}{
		{"words that name the device", `{"error":"device 000123 is not advertising"}`, "device 000123 is not advertising", false},
		{"words that do not", `{"error":"pairing refused by bonding policy BondingOnce"}`, "device 000123: pairing refused by bonding policy BondingOnce", false},
		{"no session", `{"error":"no session: send hello first","code":"no-session"}`, "device 000123: " + client.ErrNoSession.Error() + " (no session: send hello first)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := scripted(t, frametest.Answer{Kind: wire.Error, Payload: []byte(tt.payload)})
			ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang protection
			defer cancel()
			_, err := c.Scan(ctx)
			var re *client.RemoteError
			if err == nil {
				t.Fatalf("scan: no error; want %q", tt.want)
			}
			if err.Error() != tt.want || !errors.As(err, &re) || errors.Is(err, client.ErrNoSession) != tt.noSession {
				t.Errorf("scan: %v; want %q, a RemoteError, ErrNoSession %t", err, tt.want, tt.noSession)
			}
			if n := strings.Count(err.Error(), "000123"); n != 1 {
				t.Errorf("scan: %v names the device %d times; want once", err, n)
			}
		})
	}
}

// A disconnection the caller gives up waiting for says why, naming the
// device once: the context's end, which errors.Is finds.
func TestDisconnectGivenUpNamesTheDevice(t *testing.T) {
	for _, tt := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"past its deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Unix(0, 0))
		}, context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := scripted(t, frametest.Answer{}) // it never answers a Disconnect
			ctx, cancel := tt.ctx()
			defer cancel()
			err := c.Disconnect(ctx)
			if !errors.Is(err, tt.want) || err.Error() != "device 000123: "+tt.want.Error() {
				t.Errorf("disconnect: %v; want %v, naming the device once", err, tt.want)
			}
		})
	}
}
