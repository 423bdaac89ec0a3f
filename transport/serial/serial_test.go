package serial_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/client"
	"senseboard/clock"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newDevice starts a device on real time with a TCP listener and a pty.
func newDevice(t *testing.T) (*senseboard.Device, string, string) {
	t.Helper()
	return newServedDevice(t, &serial.Server{})
}

// newServedDevice is newDevice with srv, whose Device it sets.
func newServedDevice(t *testing.T, srv *serial.Server) (*senseboard.Device, string, string) {
	t.Helper()
	dir := t.TempDir()
	d, err := senseboard.New(senseboard.Config{StateDir: filepath.Join(dir, "state"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pt, err := serial.OpenPTY(filepath.Join(dir, "tty"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Device = d.Core
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { srv.Serve(ctx, ln); done <- struct{}{} }()
	go func() { srv.ServeLine(ctx, pt); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		await.Within(t, done, "the device is served on after the context ended")
		await.Within(t, done, "the device is served on after the context ended")
		pt.Close()
		d.Close()
	})
	return d, ln.Addr().String(), pt.Link()
}

// raw is a protocol-level client for tests that break the rules.
type raw struct {
	t    *testing.T
	conn net.Conn
	dec  *wire.Decoder
	got  []wire.Frame
}

func dialRaw(t *testing.T, addr string) *raw {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t: t, conn: c, dec: wire.NewDecoder(0)}
}

func (r *raw) send(b []byte) {
	r.t.Helper()
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *raw) hello(session string, version int) {
	b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: version, Client: "raw test", Session: session})
	r.send(b)
}

// next returns the next frame, waiting up to a minute (a hang guard).
func (r *raw) next() wire.Frame {
	r.t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(time.Minute)
	for len(r.got) == 0 {
		r.conn.SetReadDeadline(deadline)
		n, err := r.conn.Read(buf)
		r.dec.Feed(buf[:n], func(f wire.Frame) {
			f.Payload = append([]byte(nil), f.Payload...)
			r.got = append(r.got, f)
		})
		if err != nil && len(r.got) == 0 {
			r.t.Fatalf("no frame: %v", err)
		}
	}
	f := r.got[0]
	r.got = r.got[1:]
	return f
}

// nextKind skips notifications until a frame of kind comes.
func (r *raw) nextKind(k wire.Kind) wire.Frame {
	r.t.Helper()
	for {
		if f := r.next(); f.Kind == k {
			return f
		} else if f.Kind != wire.Notification {
			r.t.Fatalf("got a %s frame (%s), want %s", f.Kind, f.Payload, k)
		}
	}
}

func request(id uint32, op, path string) []byte {
	b, _ := wire.AppendJSONFrame(nil, wire.Request, id, &wire.RequestMsg{Op: op, Path: path})
	return b
}

func TestGarbageBrokenAndOversizedFrames(t *testing.T) {
	_, addr, _ := newDevice(t)
	r := dialRaw(t, addr)
	r.send([]byte("line noise \xa5\x00 more noise"))
	r.hello("s1", 1)
	if f := r.next(); f.Kind != wire.Welcome {
		t.Fatalf("got %s %s", f.Kind, f.Payload)
	}
	bad := request(5, "get", "/Info")
	bad[len(bad)-2] ^= 0x40 // wrong checksum: dropped
	r.send(bad)
	r.send(request(6, "get", "/Info")[:20]) // truncated: the next frame still decodes
	r.send(request(7, "get", "/Info"))
	f := r.next()
	var env client.Envelope
	json.Unmarshal(f.Payload, &env)
	if f.Kind != wire.Response || f.ID != 7 || env.Response != 200 || env.URI != "/net/000123/Info" {
		t.Fatalf("after broken frames got %s id %d: %s", f.Kind, f.ID, f.Payload)
	}
	big := wire.AppendFrame(nil, wire.Request, 8, nil)
	big[8], big[9], big[10] = 0x00, 0x00, 0x10 // claims 1 MiB
	r.send(big)
	f = r.next()
	if f.Kind != wire.Error || f.ID != 8 || !strings.Contains(string(f.Payload), "exceeds the maximum payload") {
		t.Fatalf("oversized frame: %s id %d %s", f.Kind, f.ID, f.Payload)
	}
	r.send(wire.AppendFrame(nil, wire.Kind(0x53), 9, nil))
	f = r.next()
	if f.Kind != wire.Error || f.ID != 9 || !strings.Contains(string(f.Payload), "kind 0x53") {
		t.Fatalf("unknown kind: %s id %d %s", f.Kind, f.ID, f.Payload)
	}
	r.send(wire.AppendFrame(nil, wire.Request, 10, []byte("{not json")))
	if f = r.next(); f.Kind != wire.Error || f.ID != 10 {
		t.Fatalf("bad JSON: %s %s", f.Kind, f.Payload)
	}
	r.send(wire.AppendFrame(nil, wire.Ping, 11, nil))
	if f = r.next(); f.Kind != wire.Pong || f.ID != 11 {
		t.Fatalf("ping: %s %d", f.Kind, f.ID)
	}
}

// TestRequestsThatWouldBeRepairedAreRefused: a request whose JSON a
// decoder would quietly change (bytes that are not UTF-8, half a surrogate
// pair, keys in another case, unknown or repeated keys, a value that is
// ignored) is refused with what was wrong.
func TestRequestsThatWouldBeRepairedAreRefused(t *testing.T) {
	_, addr, _ := newDevice(t)
	r := dialRaw(t, addr)
	r.hello("strict", 1)
	r.nextKind(wire.Welcome)
	tests := []struct {
		payload string
		kind    wire.Kind
		msg     string
	}{
		{"{\"op\":\"get\",\"path\":\"/Info\xff\"}", wire.Error, "request: byte 25 (0xff) is not UTF-8"},
		{`{"op":"get","path":"/Info\ud800"}`, wire.Error, `request: the escape \\uD800 at byte 25 is half of a surrogate pair`},
		{`{"op":"get","Path":"/Info"}`, wire.Error, `request: unknown field \"Path\"; allowed: op, path, params`},
		{`{"op":"get","path":"/Info","parms":[]}`, wire.Error, `unknown field \"parms\"`},
		{`{"op":"get","path":"/Info","path":"/Nope"}`, wire.Error, `field \"path\" given twice`},
		{`{"op":"get","path":"/Info","params":[{"type":"uint8","value":1,"unit":"s"}]}`, wire.Error, `value 1: unknown field \"unit\"`},
		{`{"op":"get","path":"/Info","params":[{"type":"null","value":5}]}`, wire.Response, "value 1: null parameter: its value is 5; want null"},
		{`{"op":"get","path":"/Info"}`, wire.Response, `"response":200`},
	}
	for i, tt := range tests {
		r.send(wire.AppendFrame(nil, wire.Request, uint32(i+1), []byte(tt.payload)))
		f := r.nextKind(tt.kind)
		if f.ID != uint32(i+1) || !strings.Contains(string(f.Payload), tt.msg) {
			t.Errorf("%s: %s %s, want %s containing %s", tt.payload, f.Kind, f.Payload, tt.kind, tt.msg)
		}
	}
}

// TestClientRefusesPathThatIsNotUTF8: the client does not send a path
// whose bytes JSON would replace; it says what is wrong.
func TestClientRefusesPathThatIsNotUTF8(t *testing.T) {
	_, addr, _ := newDevice(t)
	c, err := clienttest.Dial(context.Background(), "TCP"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if env, err := c.Do(context.Background(), resource.Get, "/Info\xff"); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("GET /Info\\xff: %+v, %v; want an error saying the path is not UTF-8", env, err)
	}
	if _, _, err := c.Subscribe(context.Background(), "/Meas/Temp\xfe"); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("subscribe: %v", err)
	}
}

func TestHelloRules(t *testing.T) {
	_, addr, _ := newDevice(t)
	r := dialRaw(t, addr)
	r.send(request(1, "get", "/Info"))
	// the code that tells a client its session is over (client.ErrNoSession)
	if f := r.next(); f.Kind != wire.Error || !strings.Contains(string(f.Payload), "send hello first") || !strings.Contains(string(f.Payload), `"code":"`+wire.CodeNoSession+`"`) {
		t.Fatalf("request before hello: %s %s", f.Kind, f.Payload)
	}
	r.hello("s", 2)
	f := r.next()
	var m wire.RefuseMsg
	json.Unmarshal(f.Payload, &m)
	if f.Kind != wire.Refuse || m.Session != "s" || !strings.Contains(m.Error, "protocol version 2 is not supported; this device speaks version 1") {
		t.Fatalf("version mismatch: %s %s", f.Kind, f.Payload)
	}
}

func TestInterleavedRequestsAndSubscriptions(t *testing.T) {
	t.Parallel()
	_, addr, _ := newDevice(t)
	ctx := context.Background()
	c, err := clienttest.Dial(ctx, "tcp://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if w := c.Welcome(); w.Serial != "000123" || w.Protocol != 1 || w.URIPrefix != "/net/000123" {
		t.Errorf("welcome %+v", w)
	}
	acc, env, err := c.Subscribe(ctx, "/Meas/Acc/52")
	if err != nil || !env.OK() {
		t.Fatalf("subscribe acc: %v %+v", err, env)
	}
	tm, env, err := c.Subscribe(ctx, "/Time")
	if err != nil || !env.OK() {
		t.Fatalf("subscribe time: %v %+v", err, env)
	}
	for range 5 { // requests between notifications
		env, err := c.Do(ctx, resource.Get, "/Comm/Ble/Addr")
		if err != nil || !env.OK() {
			t.Fatalf("get during subscriptions: %v", err)
		}
	}
	for i := range 3 {
		n := await.Within(t, acc.C(), fmt.Sprintf("acc notification %d has not come", i))
		if !strings.Contains(string(n.Payload), `"ArrayAcc"`) {
			t.Fatalf("acc notification %s", n.Payload)
		}
	}
	n := await.Within(t, tm.C(), "no time notification came")
	var us int64
	if err := json.Unmarshal(n.Payload, &us); err != nil || us <= 0 {
		t.Fatalf("time notification %s", n.Payload)
	}
	if env, err := acc.Unsubscribe(ctx); err != nil || !env.OK() {
		t.Fatalf("unsubscribe: %v %+v", err, env)
	}
	await.Drained(t, acc.C(), "the subscription has not ended") // what was in flight is drained
	if env, _ := c.Do(ctx, resource.Delete, "/Time/Subscription"); !env.OK() {
		t.Errorf("DELETE /Time/Subscription: %+v", env)
	}
}

func TestVanishedClientEndsItsSubscriptions(t *testing.T) {
	ended := make(chan error, 1)
	d, addr, _ := newServedDevice(t, &serial.Server{OnSessionEnd: func(_ string, why error) { ended <- why }})
	r := dialRaw(t, addr)
	r.hello("gone", 1)
	r.nextKind(wire.Welcome)
	r.send(request(1, "subscribe", "/Meas/IMU9/104"))
	r.nextKind(wire.Response)
	if d.Hub().Count() != 1 {
		t.Fatalf("%d subscriptions", d.Hub().Count())
	}
	r.conn.Close() // the client vanishes mid-subscription
	select {
	case why := <-ended:
		if !errors.Is(why, serial.ErrStreamClosed) {
			t.Errorf("the session ended: %v; want %v", why, serial.ErrStreamClosed)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("the session outlived its client")
	}
	if n := d.Hub().Count(); n != 0 {
		t.Fatalf("%d subscriptions outlived their client's session", n)
	}
	// the device goes on serving the next client
	c, err := clienttest.Dial(context.Background(), "TCP"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if env, err := c.Do(context.Background(), resource.Get, "/Info"); err != nil || !env.OK() {
		t.Fatalf("next client: %v", err)
	}
}

func TestOneSessionPerPTY(t *testing.T) {
	t.Parallel()
	d, _, tty := newDevice(t)
	ctx := context.Background()
	first, err := clienttest.Dial(ctx, tty, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := first.Subscribe(ctx, "/Meas/Temp")
	if err != nil {
		t.Fatal(err)
	}
	// a second client of the same pty is refused: it cannot take the line
	if _, err := clienttest.Dial(ctx, tty, nil); err == nil || !strings.Contains(err.Error(), "port busy") {
		t.Errorf("second client: %v", err)
	}
	// a second session that ignores the lock is refused by the device
	f, err := os.OpenFile(tty, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: 1, Client: "intruder", Session: "other"})
	f.Write(b)
	f.Close()
	// the line carries bytes in order: the device reads the intruder's
	// hello before the request that follows
	if env, err := first.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
		t.Fatalf("the first session suffered: %v", err)
	}
	if d.Hub().Count() != 1 {
		t.Errorf("%d subscriptions, want the first client's one", d.Hub().Count())
	}
	sub.Unsubscribe(ctx)
	first.Close()
	// the line is free again
	again, err := clienttest.Dial(ctx, tty, nil)
	if err != nil {
		t.Fatalf("after the first client left: %v", err)
	}
	again.Close()
}

func TestDeviceOffDoesNotAnswer(t *testing.T) {
	d, addr, _ := newDevice(t)
	ctx := context.Background()
	c, err := client.Dial(ctx, "TCP"+addr, &client.Options{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, _, _ := c.Subscribe(ctx, "/Time")
	d.PowerOff()
	await.Drained(t, sub.C(), "the subscription has not ended")
	if err := sub.Err(); err == nil || !strings.Contains(err.Error(), "device powered off") {
		t.Errorf("subscription end: %v", err)
	}
	_, err = c.Do(ctx, resource.Get, "/Info")
	if err == nil || !strings.Contains(err.Error(), "device not answering") {
		t.Errorf("request to a device that is off: %v", err)
	}
	d.Wake()
	if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
		t.Errorf("after wake: %v", err)
	}
}

// TestSessionEndReasons: a session's end comes with a reason that code can
// tell apart with errors.Is.
func TestSessionEndReasons(t *testing.T) {
	type end struct {
		stream string
		why    error
	}
	ends := make(chan end, 8)
	_, addr, tty := newServedDevice(t, &serial.Server{OnSessionEnd: func(stream string, why error) { ends <- end{stream, why} }})
	next := func(want error) {
		t.Helper()
		select {
		case e := <-ends:
			if !errors.Is(e.why, want) {
				t.Errorf("session %s ended: %v; want %v", e.stream, e.why, want)
			}
		case <-time.After(time.Minute): // a hang guard
			t.Fatalf("no session ended; want %v", want)
		}
	}
	bye, _ := wire.AppendJSONFrame(nil, wire.Bye, 0, nil)

	r := dialRaw(t, addr)
	r.hello("bye", 1)
	r.nextKind(wire.Welcome)
	r.send(bye)
	next(serial.ErrBye)

	r = dialRaw(t, addr)
	r.hello("gone", 1)
	r.nextKind(wire.Welcome)
	r.conn.Close()
	next(serial.ErrStreamClosed)

	f := lockedClient(t, tty, "locker")
	f.Write(request(1, "get", "/Info"))
	f.Close() // the lock goes with the file
	next(serial.ErrLockReleased)

	c, err := clienttest.Dial(context.Background(), tty, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	next(serial.ErrBye)
}

// TestModeSwitchAnsweredFirst: over the line, PUT /System/Mode 5 is
// answered before the reset ends the session's subscriptions, as on every
// path (docs/behaviour.md).
func TestModeSwitchAnsweredFirst(t *testing.T) {
	_, addr, _ := newDevice(t)
	r := dialRaw(t, addr)
	r.hello("mode", 1)
	r.nextKind(wire.Welcome)
	r.send(request(1, "subscribe", "/Meas/Acc/13"))
	r.nextKind(wire.Response)
	put, _ := wire.AppendJSONFrame(nil, wire.Request, 2, &wire.RequestMsg{Op: "put", Path: "/System/Mode", Params: []wire.Param{wire.EncodeParam(resource.Uint8(5))}})
	r.send(put)
	for {
		f := r.next()
		if f.Kind == wire.Ended {
			t.Fatalf("the reset's end of the subscription (%s) came before the answer", f.Payload)
		}
		if f.Kind == wire.Response && f.ID == 2 {
			break
		}
	}
	if f := r.nextKind(wire.Ended); f.ID != 1 || !strings.Contains(string(f.Payload), "device reset") {
		t.Errorf("after the answer: %s %d %s; want the subscription ended by the reset", f.Kind, f.ID, f.Payload)
	}
}

// TestSubscribeAgainAfterTheEnd: once a subscription ended, by the
// client (unsubscribe, or DELETE of /X/Subscription) or by the device (a
// reset ends them all), subscribing to the same resource again is a new
// subscription, whose notifications carry the id of the request that made
// it, not the old one's.
func TestSubscribeAgainAfterTheEnd(t *testing.T) {
	reset, _ := wire.AppendJSONFrame(nil, wire.Request, 2, &wire.RequestMsg{Op: "put", Path: "/System/Mode", Params: []wire.Param{wire.EncodeParam(resource.Uint8(5))}})
	for _, tt := range []struct {
		name      string
		op, path  string // of the subscription
		end       []byte // request 2, which ends it
		deviceEnd bool   // the device tells of the end
	}{
		{"unsubscribe", "subscribe", "/Meas/Acc/13", request(2, "unsubscribe", "/Meas/Acc/13"), false},
		{"delete", "post", "/Meas/Acc/13/Subscription", request(2, "delete", "/Meas/Acc/13/Subscription"), false},
		{"a reset", "subscribe", "/Meas/Acc/13", reset, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, addr, _ := newDevice(t)
			r := dialRaw(t, addr)
			r.hello("again", 1)
			r.nextKind(wire.Welcome)
			r.send(request(1, tt.op, tt.path))
			r.nextKind(wire.Response)
			if f := r.nextKind(wire.Notification); f.ID != 1 {
				t.Fatalf("a notification of request 1's subscription has id %d", f.ID)
			}
			r.send(tt.end)
			r.nextKind(wire.Response)
			if tt.deviceEnd {
				if f := r.nextKind(wire.Ended); f.ID != 1 {
					t.Fatalf("the device ended subscription %d, want 1", f.ID)
				}
			}
			r.send(request(3, tt.op, tt.path))
			for {
				f := r.next()
				if f.Kind == wire.Response && f.ID == 3 {
					break
				}
			}
			// a notification of the old subscription may still be on its
			// way; then come the new one's
			for stale := 0; ; stale++ {
				f := r.nextKind(wire.Notification)
				if f.ID == 3 {
					break
				}
				if f.ID != 1 || stale == 3 {
					t.Fatalf("after the subscription made again by request 3: notifications of request %d", f.ID)
				}
			}
		})
	}
}

// lockedClient opens the pty as a client that holds the line's lock, and
// says hello as one, in session; it returns the terminal, which it does
// not read.
func lockedClient(t *testing.T, tty, session string) *os.File {
	t.Helper()
	f, err := os.OpenFile(tty, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unixFlock(f); err != nil {
		t.Fatal(err)
	}
	b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, map[string]any{"protocol": 1, "client": session, "session": session, "lock": true})
	f.Write(b)
	return f
}

// TestCrashedClientRedials: a client of a pty that dies without a bye
// (its lock goes with it) and dials again at once is let in at its first
// hello: the new client holds the lock, so the old one let go of it. The
// old session ends as a released lock, with its subscriptions.
func TestCrashedClientRedials(t *testing.T) {
	ends := make(chan error, 4)
	d, _, tty := newServedDevice(t, &serial.Server{OnSessionEnd: func(_ string, why error) { ends <- why }})
	f := lockedClient(t, tty, "crasher")
	f.Write(request(1, "subscribe", "/Meas/Acc/13"))
	for deadline := time.Now().Add(time.Minute); d.Hub().Count() != 1; time.Sleep(time.Millisecond) { // the subscription is made
		if time.Now().After(deadline) { // a hang guard
			t.Fatal("the crashing client's subscription was not made")
		}
	}
	f.Close() // the crash: the lock goes, no bye
	// A client that holds the lock while the old session lasts is refused
	// as busy (wire.RefuseBusy) and retries for a second with the lock
	// held: the line's probe cannot see the old client gone meanwhile.
	c, err := clienttest.Dial(context.Background(), tty, nil)
	if err != nil {
		t.Fatalf("redial after a crash: %v", err)
	}
	defer c.Close()
	if why := await.Within(t, ends, "the crashed client's session has not ended"); !errors.Is(why, serial.ErrLockReleased) {
		t.Errorf("the crashed client's session ended: %v; want %v", why, serial.ErrLockReleased)
	}
	if n := d.Hub().Count(); n != 0 {
		t.Errorf("%d subscriptions of the crashed client outlived its session", n)
	}
	if env, err := c.Do(context.Background(), resource.Get, "/Info"); err != nil || !env.OK() {
		t.Fatalf("the new session: %v %v", env, err)
	}
}

// smallSendBuffers gives each accepted connection a small send buffer, so
// that a client that does not read blocks the device's writes soon.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(1024)
	}
	return c, err
}

// serveOn serves a new device with srv on a loopback TCP listener, which
// wrap (when not nil) wraps, until the test ends; it returns the address.
func serveOn(t *testing.T, srv *serial.Server, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	d, err := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	srv.Device = d.Core
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := await.Within(t, done, "the device is served on after the context ended"); err != nil {
			t.Error(err)
		}
		d.Close()
	})
	return addr
}

// TestSlowClientDoesNotStallOthers: while a client that never reads holds
// the device's writes to it until they time out, another client's requests
// are answered, every one, until the device gives up on the slow one.
func TestSlowClientDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	slowEnded := make(chan error, 1)
	addr := serveOn(t, &serial.Server{OnSessionEnd: func(stream string, why error) {
		if errors.Is(why, serial.ErrSlowConsumer) {
			select {
			case slowEnded <- why:
			default:
			}
		}
	}}, func(ln net.Listener) net.Listener { return smallSendBuffers{ln} })
	// a client that never reads, subscribed to the fastest stream; small
	// buffers on both ends fill soon
	r := dialRaw(t, addr)
	r.conn.(*net.TCPConn).SetReadBuffer(1024)
	r.hello("slow", 1)
	r.nextKind(wire.Welcome)
	r.send(request(1, "subscribe", "/Meas/IMU9/1666"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang protection
	defer cancel()
	c, err := clienttest.Dial(ctx, "TCP"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	answered := 0
	for {
		if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
			t.Fatalf("request %d while the slow client was served: %v", answered, err)
		}
		answered++
		select {
		case <-slowEnded:
			if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
				t.Fatalf("request after the slow client was dropped: %v", err)
			}
			return
		case <-ctx.Done():
			t.Fatalf("the slow client was never dropped (%d requests answered meanwhile)", answered)
		default:
		}
	}
}

func ExampleServer() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	d, _ := senseboard.New(senseboard.Config{StateDir: dir})
	defer d.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (&serial.Server{Device: d.Core}).Serve(ctx, ln); close(done) }()

	c, _ := client.Dial(ctx, "TCP"+ln.Addr().String(), nil)
	env, _ := c.Do(ctx, resource.Get, "/Info")
	fmt.Println(env.Response, env.URI)
	c.Close()
	cancel()
	<-done
	// Output: 200 /net/000123/Info
}

// A client that subscribes to the fastest stream and then stops reading
// fills the terminal's buffer: the device ends its session as a slow
// consumer rather than wait on it, and when the client goes, the line
// serves the next client.
func TestLineSurvivesClientThatStopsReading(t *testing.T) {
	t.Parallel()
	ended := make(chan error, 1)
	_, _, tty := newServedDevice(t, &serial.Server{OnSessionEnd: func(_ string, why error) { ended <- why }})
	f := lockedClient(t, tty, "stuck")
	f.Write(request(1, "subscribe", "/Meas/IMU9/1666"))
	select { // never read: the terminal's buffer fills, and a write times out
	case why := <-ended:
		if !errors.Is(why, serial.ErrSlowConsumer) {
			t.Errorf("the session ended: %v; want %v", why, serial.ErrSlowConsumer)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("the session of a client that stopped reading did not end")
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	c, err := clienttest.Dial(ctx, tty, nil)
	if err != nil {
		t.Fatalf("the line did not recover: %v", err)
	}
	defer c.Close()
	if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
		t.Fatalf("next client: %v", err)
	}
}

// TestConcurrentRequests: requests from many goroutines, with and without a
// subscription running, take turns reading the stream and each gets its
// own answer; a cancelled request leaves the connection usable.
func TestConcurrentRequests(t *testing.T) {
	_, addr, _ := newDevice(t)
	ctx := context.Background()
	c, err := clienttest.Dial(ctx, "TCP"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	paths := []string{"/Info", "/Comm/Ble/Addr", "/Time", "/System/Mode"}
	burst := func(label string) {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 40 {
					p := paths[(g+i)%len(paths)]
					env, err := c.Do(ctx, resource.Get, p)
					if err != nil || !env.OK() || !strings.HasSuffix(strings.ToLower(env.URI), strings.ToLower(p)) {
						t.Errorf("%s: GET %s: %+v %v", label, p, env, err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	burst("no subscription")
	acc, _, err := c.Subscribe(ctx, "/Meas/Acc/104")
	if err != nil {
		t.Fatal(err)
	}
	burst("while subscribed")
	if _, err := acc.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	burst("after unsubscribing")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Do(cctx, resource.Get, "/Info"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v", err)
	}
	if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
		t.Errorf("after a cancelled request: %+v %v", env, err)
	}
}

// pipeLine is a serial line over an in-memory pipe.
type pipeLine struct{ net.Conn }

func (pipeLine) ClientGone() bool { return false }
func (pipeLine) SessionEnded()    {}
func (pipeLine) Name() string     { return "pipe" }

func TestRefusalCodes(t *testing.T) {
	d, addr, _ := newDevice(t)
	r := dialRaw(t, addr)
	r.send(wire.AppendFrame(nil, wire.Hello, 0, []byte("{not json")))
	r.hello("s", 2)
	for _, want := range []wire.RefuseCode{wire.RefuseMalformed, wire.RefuseVersion} {
		var m wire.RefuseMsg
		if f := r.nextKind(wire.Refuse); json.Unmarshal(f.Payload, &m) != nil || m.Code != want || m.Error == "" {
			t.Errorf("refusal %s, want code %q and words", f.Payload, want)
		}
	}

	// a line carries one session: another client's hello is refused as busy
	dev, client := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	srv := &serial.Server{Device: d.Core}
	go func() { srv.ServeLine(ctx, pipeLine{dev}); close(done) }()
	t.Cleanup(func() {
		cancel()
		client.Close()
		await.Within(t, done, "the line is served on after the context ended")
	})
	line := &raw{t: t, conn: client, dec: wire.NewDecoder(0)}
	line.hello("first", 1)
	line.nextKind(wire.Welcome)
	line.hello("second", 1)
	var m wire.RefuseMsg
	if f := line.nextKind(wire.Refuse); json.Unmarshal(f.Payload, &m) != nil || m.Code != wire.RefuseBusy || m.Session != "second" || !strings.Contains(m.Error, "in use") {
		t.Errorf("second session on a line: %s", f.Payload)
	}
}

// TestSlowReadersDoNotHoldOthersNotifications: clients that never read,
// five streams each at 833 to 1666 Hz, block the device's writes to them
// until WriteTimeout ends their sessions; meanwhile a client that reads
// gets each step of device time's notifications, without waiting for the
// blocked writes to end. The device runs on a virtual clock: each step's
// notifications are made at once when the test advances it, and must
// arrive while the slow sessions last (they end only when a write has been
// blocked for WriteTimeout).
func TestSlowReadersDoNotHoldOthersNotifications(t *testing.T) {
	t.Parallel()
	vc := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Seed: 1, Clock: vc})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var slowEnded atomic.Int32
	srv := &serial.Server{Device: d.Core, OnSessionEnd: func(_ string, why error) {
		if errors.Is(why, serial.ErrSlowConsumer) {
			slowEnded.Add(1)
		}
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, smallSendBuffers{ln}) }()
	defer func() { cancel(); await.Within(t, served, "the device is served on after the context ended") }()
	addr := ln.Addr().String()

	paths := []string{"/Meas/Acc/1666", "/Meas/Gyro/833", "/Meas/IMU9/833", "/Meas/IMU6/1666", "/Meas/Gyro/1666"}
	for i := range 5 {
		r := dialRaw(t, addr)
		r.conn.(*net.TCPConn).SetReadBuffer(1024)
		r.hello(fmt.Sprintf("slow%d", i), 1)
		for j, p := range paths {
			r.send(request(uint32(j+1), "subscribe", p))
		}
	}
	reader, err := clienttest.Dial(ctx, "TCP"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	sub, _, err := reader.Subscribe(ctx, "/Meas/Acc/52")
	if err != nil {
		t.Fatal(err)
	}
	for d.Hub().Count() < 5*len(paths)+1 { // every slow subscription is made
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
		}
	}
	held := 0
	for step := range 20 {
		vc.Advance(100 * time.Millisecond)
		want := int64((vc.Now() - 300*time.Millisecond) / time.Millisecond) // the last batch may still be filling
		alive := slowEnded.Load() == 0
		for got := int64(-1); got < want; {
			var n client.Notification
			select {
			case n = <-sub.C():
			case <-time.After(time.Minute): // a hang guard
				t.Fatalf("step %d: no notification of /Meas/Acc/52 for a minute", step)
			}
			var acc struct{ Timestamp int64 }
			json.Unmarshal(n.Payload, &acc)
			got = acc.Timestamp
		}
		if alive && slowEnded.Load() > 0 {
			held++ // the notifications came only once a blocked write gave up
		}
	}
	if held > 0 {
		t.Errorf("in %d of 20 steps the reader's notifications came only when a blocked writer to a client that does not read gave up", held)
	}
	for slowEnded.Load() < 5 { // the slow writers were blocked: WriteTimeout ends their sessions
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// A client that half-closes its TCP connection (it has sent all it will)
// gets the answers to what it sent before the device closes: the pong to
// its last ping too, which a device with a write interval holds for the
// next write of a session that subscribes.
func TestHalfClosedClientGetsItsLastPong(t *testing.T) {
	_, addr, _ := newServedDevice(t, &serial.Server{WriteInterval: time.Hour})
	r := dialRaw(t, addr)
	r.hello("half", wire.Version)
	if f := r.nextKind(wire.Welcome); f.Kind != wire.Welcome {
		t.Fatalf("hello: %v", f.Kind)
	}
	sub, _ := wire.AppendJSONFrame(nil, wire.Request, 1, &wire.RequestMsg{Op: "SUBSCRIBE", Path: "/Meas/Acc/52"})
	r.send(sub)
	// The first notification leaves at once, and holds the session's
	// next write, the pong's, for the interval.
	for answered, notified := false, false; !answered || !notified; {
		switch f := r.next(); f.Kind {
		case wire.Response:
			answered = f.ID == 1
		case wire.Notification:
			notified = true
		default:
			t.Fatalf("got a %s frame (%s), want the subscription's response and notification", f.Kind, f.Payload)
		}
	}
	r.send(wire.AppendFrame(nil, wire.Ping, 7, nil))
	if err := r.conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r.conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard
	buf := make([]byte, 4096)
	pong := false
	for {
		n, err := r.conn.Read(buf)
		r.dec.Feed(buf[:n], func(f wire.Frame) { pong = pong || f.Kind == wire.Pong && f.ID == 7 })
		if err != nil {
			break
		}
	}
	if !pong {
		t.Error("the connection closed without the pong to the ping sent before the half-close")
	}
}
