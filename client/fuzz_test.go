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
	"senseboard/wire"
)

// fakeDevice answers a client on a stream with what a fuzz input says: its
// hello with a frame of helloKind and helloPayload, a scan with a frame of
// scanKind and scanPayload. "SESSION" in a payload becomes the client's
// session token, so that answers reach the client's handshake.
func fakeDevice(conn net.Conn, helloKind wire.Kind, helloPayload []byte, scanKind wire.Kind, scanPayload []byte) {
	defer conn.Close()
	dec := wire.NewDecoder(0)
	buf := make([]byte, 4096)
	token := []byte("SESSION")
	for {
		n, err := conn.Read(buf)
		dec.Feed(buf[:n], func(f wire.Frame) {
			switch f.Kind {
			case wire.Hello:
				var h wire.HelloMsg
				json.Unmarshal(f.Payload, &h)
				token = []byte(h.Session)
				conn.Write(wire.AppendFrame(nil, helloKind, f.ID, bytes.ReplaceAll(helloPayload, []byte("SESSION"), token)))
			case wire.Scan:
				conn.Write(wire.AppendFrame(nil, scanKind, f.ID, bytes.ReplaceAll(scanPayload, []byte("SESSION"), token)))
			case wire.Ping:
				conn.Write(wire.AppendFrame(nil, wire.Pong, f.ID, nil))
			}
		})
		if err != nil {
			return
		}
	}
}

// FuzzHandshakeAndScan gives the client any welcome or refusal, and any
// advertisement (or error, or disconnection) in answer to a scan: it
// returns a session or an error, never crashes or hangs, and takes a
// session only from a Welcome of its protocol.
func FuzzHandshakeAndScan(f *testing.F) {
	welcome := `{"protocol":1,"session":"SESSION","serial":"000123","product":"Senseboard","sw":"1.0","uriPrefix":"/net/000123","maxPayload":65536}`
	advert := `{"serial":"000123","address":"F8:21:B0:5A:10:98","advertising":true,"adv":"020106","scanResp":"0909"}`
	f.Add(byte(wire.Welcome), []byte(welcome), byte(wire.Advert), []byte(advert))
	f.Add(byte(wire.Refuse), []byte(`{"session":"SESSION","error":"line busy","code":"busy"}`), byte(wire.Advert), []byte(advert))
	f.Add(byte(wire.Refuse), []byte(`{"session":"SESSION","error":"full","code":"limit"}`), byte(wire.Error), []byte(`{"error":"x"}`))
	f.Add(byte(wire.Welcome), []byte(`{"protocol":2,"session":"SESSION"}`), byte(wire.Advert), []byte(`[`))
	f.Add(byte(wire.Welcome), []byte(welcome), byte(wire.Disconnected), []byte(`{"reason":"gone"}`))
	f.Add(byte(wire.Welcome), []byte(welcome), byte(wire.Advert), []byte(`{"advertising":"yes","adv":7}`))
	f.Add(byte(wire.Welcome), []byte(`{"session":"SESSION","protocol":1e400}`), byte(wire.Advert), []byte(`null`))
	f.Fuzz(func(t *testing.T, helloKind byte, helloPayload []byte, scanKind byte, scanPayload []byte) {
		if len(helloPayload) > wire.MaxPayload || len(scanPayload) > wire.MaxPayload {
			return
		}
		dev, central := net.Pipe()
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { fakeDevice(dev, wire.Kind(helloKind), helloPayload, wire.Kind(scanKind), scanPayload) })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang protection
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
		m, err := c.Scan(ctx)
		if err == nil && wire.Kind(scanKind) != wire.Advert {
			t.Fatalf("an advertisement %+v from a %s frame", m, wire.Kind(scanKind))
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
