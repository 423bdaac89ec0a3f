package serial_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/client"
	"senseboard/internal/clienttest"
	"senseboard/internal/frametest"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// newFleet makes devices of the serials, whose state directories share a
// parent, and their fleet.
func newFleet(t testing.TB, serials ...string) *serial.Fleet {
	t.Helper()
	state := t.TempDir()
	var servers []*serial.Server
	for i, s := range serials {
		d, err := senseboard.New(senseboard.Config{Profile: profile.Default().WithSerial(s), StateDir: filepath.Join(state, s), Seed: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		servers = append(servers, &serial.Server{Device: d.Core})
	}
	f, err := serial.NewFleet(servers)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// serveFleet serves a fleet on a loopback port until the test ends.
func serveFleet(t testing.TB, f *serial.Fleet) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// TestFleetRoutesBySerial: on one port, each connection reaches the
// device its hello names, and several connections reach it at once.
func TestFleetRoutesBySerial(t *testing.T) {
	serials := []string{"000200", "000201", "000202"}
	addr := serveFleet(t, newFleet(t, serials...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang protection
	defer cancel()
	for _, s := range []string{"000202", "000200", "000201", "000200"} {
		c, err := clienttest.Dial(ctx, "TCP"+addr+"/"+s, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := c.Welcome().Serial; got != s {
			t.Errorf("asked for %s, welcomed by %s", s, got)
		}
		env, err := c.Do(ctx, resource.Get, "/Info")
		if err != nil || !env.OK() || !strings.Contains(string(env.Content), `"serial":"`+s+`"`) {
			t.Errorf("GET /Info of %s: %v %s", s, err, env.Content)
		}
	}
}

// TestFleetRefusesUnknownSerial: a hello that names no device of the
// fleet, or none at all, is refused with code serial, words that say what
// the port serves, and the connection may then name a device it serves.
// A device's own port refuses a hello that names another device.
func TestFleetRefusesUnknownSerial(t *testing.T) {
	addr := serveFleet(t, newFleet(t, "000300", "000301"))
	r := dialRaw(t, addr)
	for _, tt := range []struct{ serial, words string }{
		{"000999", `names device "000999", which this port does not serve`},
		{"", "names no device"},
	} {
		b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: wire.Version, Session: "s", Serial: tt.serial})
		r.send(b)
		var m wire.RefuseMsg
		f := r.nextKind(wire.Refuse)
		if json.Unmarshal(f.Payload, &m) != nil || m.Code != wire.RefuseSerial || !strings.Contains(m.Error, tt.words) ||
			!strings.Contains(m.Error, "2 devices, 000300 to 000301") {
			t.Errorf("hello naming %q: %s", tt.serial, f.Payload)
		}
	}
	b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: wire.Version, Session: "s", Serial: "000301"})
	r.send(b)
	var w wire.WelcomeMsg
	if f := r.nextKind(wire.Welcome); json.Unmarshal(f.Payload, &w) != nil || w.Serial != "000301" {
		t.Errorf("welcome after refusals: %s", f.Payload)
	}
	b, _ = wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: wire.Version, Session: "s", Serial: "000300"})
	r.send(b)
	var m wire.RefuseMsg
	if f := r.nextKind(wire.Refuse); json.Unmarshal(f.Payload, &m) != nil || m.Code != wire.RefuseSerial || !strings.Contains(m.Error, "session is with device 000301, not 000300") {
		t.Errorf("hello naming another device in a session: %s", f.Payload)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang protection
	defer cancel()
	if _, err := clienttest.Dial(ctx, "TCP"+addr+"/000999", nil); !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), "000999") {
		t.Errorf("client dialing an unknown serial: %v, want ErrRefused naming it", err)
	}
	_, own, _ := newDevice(t)
	if _, err := clienttest.Dial(ctx, "TCP"+own+"/000999", nil); !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), "serves device 000123, not 000999") {
		t.Errorf("client naming another serial on a device's own port: %v", err)
	}
	if c, err := clienttest.Dial(ctx, "TCP"+own+"/000123", nil); err != nil {
		t.Errorf("client naming the device of its own port: %v", err)
	} else {
		c.Close()
	}
}

// TestFleetLimits: the fleet's program limit counts connections that have
// not said hello, and each device keeps its own limit.
func TestFleetLimits(t *testing.T) {
	f := newFleet(t, "000400", "000401")
	f.Program = serial.NewConnLimit(3)
	addr := serveFleet(t, f)
	hello := func(r *raw, s string) wire.Frame {
		b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: wire.Version, Session: "s", Serial: s})
		r.send(b)
		return r.next()
	}
	if f := hello(dialRaw(t, addr), "000400"); f.Kind != wire.Welcome {
		t.Fatalf("first connection: %s %s", f.Kind, f.Payload)
	}
	dialRaw(t, addr) // says nothing, and counts
	if f := hello(dialRaw(t, addr), "000401"); f.Kind != wire.Welcome {
		t.Fatalf("third connection: %s %s", f.Kind, f.Payload)
	}
	var m wire.RefuseMsg
	if f := hello(dialRaw(t, addr), "000401"); f.Kind != wire.Refuse || json.Unmarshal(f.Payload, &m) != nil || m.Code != wire.RefuseLimit || !strings.Contains(m.Error, "--max-conns") {
		t.Errorf("fourth connection: %s %s", f.Kind, f.Payload)
	}
}

// TestNewFleetRefusesTwins: two devices of one serial cannot share a port.
func TestNewFleetRefusesTwins(t *testing.T) {
	state := t.TempDir()
	var servers []*serial.Server
	for i := range 2 {
		dev, err := senseboard.New(senseboard.Config{StateDir: filepath.Join(state, string(rune('a'+i))), Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		servers = append(servers, &serial.Server{Device: dev.Core})
	}
	if _, err := serial.NewFleet(servers); err == nil || !strings.Contains(err.Error(), "serial 000123") {
		t.Errorf("NewFleet of twins: %v", err)
	}
	if _, err := serial.NewFleet(nil); err == nil {
		t.Error("NewFleet of no devices: no error")
	}
}

// FuzzFleetHello sends a hello of any payload to a fleet: the device it
// names welcomes it, with its serial; anything else is refused with a code
// and words, a hello that names no device of the fleet with code serial.
func FuzzFleetHello(f *testing.F) {
	serials := []string{"000600", "000601"}
	fleet := newFleet(f, serials...)
	for _, p := range []string{`{"protocol":1,"session":"x","serial":"000601"}`, `{"protocol":1,"serial":"000999"}`,
		`{"protocol":1}`, `{"protocol":2,"serial":"000600"}`, `{"serial":7}`, `not json`, `{"protocol":1,"serial":"000600","serial":"0"}`} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > wire.MaxPayload {
			return
		}
		dev, central := net.Pipe()
		defer central.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		wg.Go(func() { fleet.ServeConn(ctx, dev) })
		got := frametest.ReadUntil(t, central, func(f wire.Frame) bool { return f.ID == 99 }, wire.AppendFrame(nil, wire.Hello, 1, payload), request(99, "get", "/Info"))
		if len(got) == 0 {
			t.Fatalf("no answer to the hello: %v", got)
		}
		var h wire.HelloMsg
		parsed := json.Unmarshal(payload, &h) == nil && h.Protocol == wire.Version
		switch a := got[0]; a.Kind {
		case wire.Welcome:
			var w wire.WelcomeMsg
			if !parsed || json.Unmarshal(a.Payload, &w) != nil || w.Serial != h.Serial {
				t.Errorf("hello %q welcomed as %s", payload, a.Payload)
			}
		case wire.Refuse:
			var m wire.RefuseMsg
			if json.Unmarshal(a.Payload, &m) != nil || m.Code == "" || m.Error == "" {
				t.Errorf("hello %q refused as %s", payload, a.Payload)
			}
			if parsed && !slices.Contains(serials, h.Serial) && m.Code != wire.RefuseSerial {
				t.Errorf("hello %q naming no device of the fleet refused as %s", payload, a.Payload)
			}
			if parsed && slices.Contains(serials, h.Serial) {
				t.Errorf("hello %q naming a device of the fleet refused as %s", payload, a.Payload)
			}
		default:
			t.Errorf("hello %q answered with %s %s", payload, a.Kind, a.Payload)
		}
	})
}
