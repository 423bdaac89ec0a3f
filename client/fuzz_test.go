package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/frametest"
	"senseboard/wire"
)

// FuzzHandshake gives the client any welcome or refusal, and any frame in
// answer to a ping: it returns a session or an error, never crashes or
// hangs, takes a session only from a Welcome of its protocol, and a ping's
// answer only from a Pong or a Response.
func FuzzHandshake(f *testing.F) {
	welcome := `{"protocol":1,"session":"SESSION","serial":"000123","product":"Senseboard","sw":"1.0","uriPrefix":"/net/000123","maxPayload":65536}`
	f.Add(byte(wire.Welcome), []byte(welcome), byte(wire.Pong), []byte(nil))
	f.Add(byte(wire.Refuse), []byte(`{"session":"SESSION","error":"line busy","code":"busy"}`), byte(wire.Pong), []byte(nil))
	f.Add(byte(wire.Refuse), []byte(`{"session":"SESSION","error":"full","code":"limit"}`), byte(wire.Error), []byte(`{"error":"x"}`))
	f.Add(byte(wire.Welcome), []byte(`{"protocol":2,"session":"SESSION"}`), byte(wire.Pong), []byte(`[`))
	f.Add(byte(wire.Welcome), []byte(welcome), byte(0x38), []byte(`{"reason":"gone"}`))
	f.Add(byte(wire.Welcome), []byte(welcome), byte(wire.Error), []byte(`{"error":7}`))
	f.Add(byte(wire.Welcome), []byte(`{"session":"SESSION","protocol":1e400}`), byte(wire.Response), []byte(`null`))
	f.Fuzz(func(t *testing.T, helloKind byte, helloPayload []byte, pingKind byte, pingPayload []byte) {
		if len(helloPayload) > wire.MaxPayload || len(pingPayload) > wire.MaxPayload {
			return
		}
		dev, central := net.Pipe()
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			frametest.Script(dev, map[wire.Kind]frametest.Answer{
				wire.Hello: {Kind: wire.Kind(helloKind), Payload: helloPayload},
				wire.Ping:  {Kind: wire.Kind(pingKind), Payload: pingPayload},
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang protection
		defer cancel()
		c, err := client.Open(ctx, "fuzz", central, &client.Options{Timeout: 20 * time.Millisecond})
		if err != nil {
			if wire.Kind(helloKind) == wire.Refuse && bytes.Contains(helloPayload, []byte(`"SESSION"`)) && json.Valid(helloPayload) &&
				!errors.Is(err, client.ErrRefused) && !errors.Is(err, client.ErrNoAnswer) {
				t.Errorf("a refusal gave %v", err)
			}
			central.Close()
			return
		}
		defer c.Close()
		if wire.Kind(helloKind) != wire.Welcome {
			t.Fatalf("a session from a %s frame", wire.Kind(helloKind))
		}
		if w := c.Welcome(); w.Protocol != wire.Version {
			t.Fatalf("a session with protocol %d", w.Protocol)
		}
		if err := c.Ping(ctx); err == nil && wire.Kind(pingKind) != wire.Pong && wire.Kind(pingKind) != wire.Response {
			t.Fatalf("a ping answered by a %s frame", wire.Kind(pingKind))
		}
	})
}

// FuzzTCPAddress: a TCP port form gives back its address and serial
// number, which make the same port again; the serial holds no slash.
func FuzzTCPAddress(f *testing.F) {
	for _, s := range []string{"TCP127.0.0.1:7809", "TCP127.0.0.1:7809/000123", "tcp://[::1]:7809/000123",
		"tcp://host:1/", "TCPnocolon", "/dev/ttyUSB0", "TCP:/", "tcp://a/b/c:1/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, port string) {
		addr, serial, ok := client.TCPAddress(port)
		if !ok {
			if addr != "" || serial != "" {
				t.Errorf("%q is no TCP port but gives %q, %q", port, addr, serial)
			}
			return
		}
		if strings.Contains(serial, "/") {
			t.Errorf("%q: serial %q holds a slash", port, serial)
		}
		again := addr
		if serial != "" || strings.HasSuffix(port, "/") {
			again += "/" + serial
		}
		if port != "TCP"+again && port != "tcp://"+again {
			t.Errorf("%q gives %q and %q, which do not make it again", port, addr, serial)
		}
	})
}
