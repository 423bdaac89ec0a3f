package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/resource"
	"senseboard/wire"
)

// TestKeepalive: an idle connection pings, no sooner than PingInterval
// after the last frame it sent, and again after the pong.
func TestKeepalive(t *testing.T) {
	t.Parallel()
	pings := make(chan time.Time, 4)
	last := time.Now()                                    // before the hello goes
	ctx, _ := openPipe(t, func(dev net.Conn, id uint32) { // a device that answers pings
		pings <- time.Now()
		dev.Write(wire.AppendFrame(nil, wire.Pong, id, nil))
	})
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

// TestKeepaliveBehindBacklog: a pong held up behind what the device
// sends before it does not hold up the next ping, however long the
// client's Timeout, since the device ends a session it has heard nothing
// from for wire.SessionTimeout; pongs that come late are read and
// dropped, and the pings after them are answered.
func TestKeepaliveBehindBacklog(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held atomic.Bool // the device's pongs wait behind a backlog
	held.Store(true)
	pings := make(chan uint32, 16) // the ids of the pings held
	conns := make(chan net.Conn, 1)
	served := make(chan struct{})
	go func() {
		defer close(served)
		dev, err := ln.Accept()
		if err != nil {
			return
		}
		defer dev.Close()
		conns <- dev
		fakeDevice(dev, func(id uint32) {
			if held.Load() {
				pings <- id
			} else {
				dev.Write(wire.AppendFrame(nil, wire.Pong, id, nil))
			}
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard of the dial and the ping
	defer cancel()
	c, err := client.Dial(ctx, "TCP"+ln.Addr().String(), &client.Options{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		await.Within(t, served, "the device's end of the connection did not close with the client")
	}()
	dev := await.Within(t, conns, "the device did not accept the client's connection")
	// Two pings while the first one's pong is held: the keepalive must
	// not wait for it up to the Timeout, leaving the device to hear
	// nothing more.
	var late []byte
	for i := range 2 {
		id := await.Within(t, pings, fmt.Sprintf("%d ping(s) while the first pong was held; the device ends a session silent for %v", i, wire.SessionTimeout))
		late = wire.AppendFrame(late, wire.Pong, id, nil)
	}
	held.Store(false)
	dev.Write(late) // the backlog clears
	if err := c.Ping(ctx); err != nil {
		t.Errorf("a ping after the late pongs: %v", err)
	}
}

// openPipe opens a client on a pipe to fakeDevice, which hands each ping
// to ping with its end of the pipe, until the test ends; ctx is the
// test's guard against hanging, a minute.
func openPipe(t *testing.T, ping func(dev net.Conn, id uint32)) (context.Context, *client.Conn) {
	t.Helper()
	dev, cen := net.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		fakeDevice(dev, func(id uint32) { ping(dev, id) })
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, err := clienttest.Open(ctx, "pipe", cen, nil)
	if err != nil {
		dev.Close()
		<-served
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close(); c.Close(); <-served })
	return ctx, c
}

// fakeDevice welcomes the client on dev, and hands the id of each ping to
// ping, until dev fails.
func fakeDevice(dev net.Conn, ping func(id uint32)) {
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
				ping(f.ID)
			}
		})
	}
}

// TestNoSessionCloses: a device that no longer holds the session (it ended
// it on a line it cannot close) answers with wire.CodeNoSession; the
// connection closes with ErrNoSession, so that its subscriptions and calls
// fail rather than wait for a device that will not answer them. Other
// errors of the device leave the connection open.
func TestNoSessionCloses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer wire.ErrorMsg
		closes bool
	}{
		{"no session", wire.ErrorMsg{Error: "no session: send hello first", Code: wire.CodeNoSession}, true},
		{"another error", wire.ErrorMsg{Error: "frame too long"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, c := openPipe(t, func(dev net.Conn, id uint32) { // a device that answers every ping with an error
				out, _ := wire.AppendJSONFrame(nil, wire.Error, id, &tc.answer)
				dev.Write(out)
			})
			err := c.Ping(ctx)
			var remote *client.RemoteError
			if !errors.As(err, &remote) || remote.Msg != tc.answer.Error {
				t.Errorf("ping: %v, want the device's error %q", err, tc.answer.Error)
			}
			if got := errors.Is(err, client.ErrNoSession); got != tc.closes {
				t.Errorf("ping: %v; errors.Is ErrNoSession %v, want %v", err, got, tc.closes)
			}
			select {
			case <-c.Done():
				if !tc.closes {
					t.Fatalf("the connection closed on %q: %v", tc.answer.Error, c.Err())
				}
				if !errors.Is(c.Err(), client.ErrNoSession) {
					t.Errorf("the connection closed with %v, want ErrNoSession", c.Err())
				}
				if _, err := c.Do(ctx, resource.Get, "/Info"); !errors.Is(err, client.ErrNoSession) {
					t.Errorf("a call after the end: %v, want ErrNoSession", err)
				}
			default:
				if tc.closes {
					t.Fatal("the connection stays open after the device said it holds no session")
				}
			}
		})
	}
}

// TestLateNoSessionCloses: a no-session answer that comes after its ping
// gave up (behind a backlog, say) closes the connection all the same, when
// the reader comes to it; the errors after name the port once.
func TestLateNoSessionCloses(t *testing.T) {
	t.Parallel()
	type ping struct {
		dev net.Conn
		id  uint32
	}
	pings := make(chan ping, 1)
	ctx, c := openPipe(t, func(dev net.Conn, id uint32) { // a device that keeps its answers
		select {
		case pings <- ping{dev, id}: // the first
		default: // the keepalive's
		}
	})
	pctx, give := context.WithCancel(ctx)
	pinged := make(chan error, 1)
	go func() { pinged <- c.Ping(pctx) }()
	p := await.Within(t, pings, "the device did not get the ping")
	give()
	if err := await.Within(t, pinged, "the ping did not return when given up"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the ping given up: %v", err)
	}
	go func() { // the answer, late; the keepalive's ping reads it
		out, _ := wire.AppendJSONFrame(nil, wire.Error, p.id, &wire.ErrorMsg{Error: "no session: send hello first", Code: wire.CodeNoSession})
		p.dev.Write(out)
	}()
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the connection stays open after the device's late answer that it holds no session")
	}
	if !errors.Is(c.Err(), client.ErrNoSession) {
		t.Errorf("the connection closed with %v, want ErrNoSession", c.Err())
	}
	_, err := c.Do(ctx, resource.Get, "/Info")
	if !errors.Is(err, client.ErrNoSession) || strings.Count(err.Error(), "pipe") != 1 {
		t.Errorf("a call after the end: %v, want ErrNoSession naming the port once", err)
	}
}
