package serial_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/internal/loopback"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// TestAcceptRetriesTemporaryErrors: running out of file descriptors, or a
// connection aborted before it was accepted, does not stop the device.
func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	t.Parallel()
	addr := serveOn(t, &serial.Server{}, func(ln net.Listener) net.Listener {
		return loopback.Failing(ln, syscall.EMFILE, syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.EMFILE)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang protection
	defer cancel()
	c, err := clienttest.Dial(ctx, "TCP"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
		t.Errorf("GET /Info after the accept errors: %v", err)
	}
}

// helloOn opens a raw session and returns the device's answer to the hello.
func helloOn(t *testing.T, addr, session string) (*raw, wire.Frame) {
	r := dialRaw(t, addr)
	r.hello(session, wire.Version)
	return r, r.next()
}

// TestConnectionLimits: a device and a program serve a bounded number of
// connections; one more is refused with a message, and a connection that
// closes makes room.
func TestConnectionLimits(t *testing.T) {
	program := serial.NewConnLimit(3)
	a := serveOn(t, &serial.Server{MaxConns: 2, Program: program}, nil)
	b := serveOn(t, &serial.Server{MaxConns: 2, Program: program}, nil)
	var held []*raw
	for i, addr := range []string{a, a, b} {
		r, f := helloOn(t, addr, "s")
		if f.Kind != wire.Welcome {
			t.Fatalf("connection %d: %s %s", i, f.Kind, f.Payload)
		}
		held = append(held, r)
	}
	refused := func(addr, want string) {
		t.Helper()
		r, f := helloOn(t, addr, "over")
		var m wire.RefuseMsg
		if f.Kind != wire.Refuse || json.Unmarshal(f.Payload, &m) != nil || m.Session != "over" || m.Code != wire.RefuseLimit || !strings.Contains(m.Error, want) {
			t.Errorf("over the limit: %s %s; want a refusal saying %q", f.Kind, f.Payload, want)
		}
		r.conn.SetReadDeadline(time.Now().Add(await.Guard)) // hang protection
		if _, err := r.conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the refused connection stays open: %v", err)
		}
	}
	refused(a, "serves 2 connections at once")                            // the device's limit
	refused(b, "the program serves 3 connections at once")                // the program's
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang protection
	defer cancel()
	if _, err := clienttest.Dial(ctx, "TCP"+a, nil); !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), "--max-conns-per-device") {
		t.Errorf("client over the limit: %v", err)
	}
	held[0].conn.Close()
	for {
		r, f := helloOn(t, b, "room")
		r.conn.Close()
		if f.Kind == wire.Welcome {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no room after a connection closed: %s %s", f.Kind, f.Payload)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// framesToEnd reads frames until the device closes the stream; it fails the
// test when the hang protection ends it first.
func framesToEnd(t *testing.T, c net.Conn) []wire.Frame {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(await.Guard)) // hang protection
	dec := wire.NewDecoder(0)
	var got []wire.Frame
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		dec.Feed(buf[:n], func(f wire.Frame) {
			f.Payload = append([]byte(nil), f.Payload...)
			got = append(got, f)
		})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the device kept the stream open; frames %v", got)
		}
		if err != nil {
			return got
		}
	}
}

// lastError returns the message of the last Error frame.
func lastError(frames []wire.Frame) string {
	for i := len(frames) - 1; i >= 0; i-- {
		if frames[i].Kind == wire.Error {
			var m wire.ErrorMsg
			json.Unmarshal(frames[i].Payload, &m)
			return m.Error
		}
	}
	return ""
}

// TestSilentClientsAreClosed: a TCP connection or a Stream that does
// not say hello, or whose session goes silent, is closed, and says why.
func TestSilentClientsAreClosed(t *testing.T) {
	srv := &serial.Server{HelloTimeout: 20 * time.Millisecond}
	addr := serveOn(t, srv, nil)
	r := dialRaw(t, addr)
	if got := lastError(framesToEnd(t, r.conn)); !strings.Contains(got, "the client did not say hello for 20ms") {
		t.Errorf("no hello: %q", got)
	}
	r = dialRaw(t, addr)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func(c net.Conn) { // frames other than hello do not keep the stream open
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				c.Write(request(1, "get", "/Info"))
			}
		}
	}(r.conn)
	defer func() { close(stop); await.Within(t, stopped, "the writer of requests did not stop") }()
	if got := lastError(framesToEnd(t, r.conn)); !strings.Contains(got, "did not say hello") {
		t.Errorf("a request instead of hello: %q", got)
	}
	// a session silent after its hello, on a server that waits for the
	// hello as long as the hang guards: a loaded machine can take longer
	// than 20 ms to send it
	ends := make(chan error, 4)
	quiet := serveOn(t, &serial.Server{HelloTimeout: await.Guard, IdleTimeout: 50 * time.Millisecond,
		OnSessionEnd: func(stream string, why error) { ends <- why }}, nil)
	r = dialRaw(t, quiet)
	r.hello("quiet", wire.Version)
	r.nextKind(wire.Welcome)
	if got := lastError(framesToEnd(t, r.conn)); !strings.Contains(got, "nothing heard from the client for 50ms") {
		t.Errorf("silent session: %q", got)
	}
	if why := await.Within(t, ends, "the silent session has not ended"); !errors.Is(why, serial.ErrSilent) {
		t.Errorf("the silent session ended: %v", why)
	}

	// a stream of a protocol carried on the line's frames
	srv = &serial.Server{HelloTimeout: 20 * time.Millisecond}
	dev, central := net.Pipe()
	done := make(chan struct{})
	go func() { srv.NewStream(dev).Read(func([]byte) {}); dev.Close(); close(done) }()
	if got := lastError(framesToEnd(t, central)); !strings.Contains(got, "did not say hello") {
		t.Errorf("silent stream: %q", got)
	}
	await.Within(t, done, "the silent stream's reading has not ended")
}
