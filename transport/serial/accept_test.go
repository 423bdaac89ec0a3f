package serial_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// failingListener fails accepts with temporary errors, as a process out of
// file descriptors does, until it has failed len(errs) times.
type failingListener struct {
	net.Listener
	mu   sync.Mutex
	errs []error
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", err)}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptRetriesTemporaryErrors: running out of file descriptors, or a
// connection aborted before it was accepted, does not stop the device.
func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	addr := serveOn(t, &serial.Server{}, func(ln net.Listener) net.Listener {
		return &failingListener{Listener: ln, errs: []error{syscall.EMFILE, syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.EMFILE}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang protection
	defer cancel()
	c, err := client.Dial(ctx, "TCP"+addr, nil)
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
		if f.Kind != wire.Refuse || json.Unmarshal(f.Payload, &m) != nil || m.Session != "over" || !strings.Contains(m.Error, want) {
			t.Errorf("over the limit: %s %s; want a refusal saying %q", f.Kind, f.Payload, want)
		}
		r.conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang protection
		if _, err := r.conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the refused connection stays open: %v", err)
		}
	}
	refused(a, "serves 2 connections at once")                               // the device's limit
	refused(b, "the program serves 3 connections at once")                   // the program's
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang protection
	defer cancel()
	if _, err := client.Dial(ctx, "TCP"+a, nil); !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), "--max-conns-per-device") {
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
