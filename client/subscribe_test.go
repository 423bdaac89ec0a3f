package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/resource"
	"senseboard/transport/serial"
)

// dialDevice runs a device on a loopback TCP port for the test and returns
// a connection to it, and a context that ends with the test (or after a
// minute, as a hang guard).
func dialDevice(t *testing.T) (context.Context, *client.Conn) {
	t.Helper()
	d, err := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang protection
	done := make(chan struct{})
	go func() { (&serial.Server{Device: d.Core}).Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := clienttest.Dial(ctx, "TCP"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, c
}

// TestSubscribeFunc: a subscription with a function receives the
// notifications there, in order, with their read times, and none on C;
// when the connection closes, Err says so.
func TestSubscribeFunc(t *testing.T) {
	ctx, c := dialDevice(t)
	got := make(chan string, 100)
	var last time.Time
	sub, env, err := c.SubscribeFunc(ctx, "/Meas/Acc/104", func(p []byte, at time.Time) {
		if at.Before(last) {
			t.Errorf("read times go back: %v after %v", at, last)
		}
		last = at
		select {
		case got <- string(p):
		default:
		}
	})
	if err != nil || !env.OK() {
		t.Fatalf("SubscribeFunc: %v %+v", err, env)
	}
	for range 3 {
		var p string
		select {
		case p = <-got:
		case <-ctx.Done():
			t.Fatal("no notification came")
		}
		if !strings.HasPrefix(p, `{"Timestamp":`) || !strings.Contains(p, `"ArrayAcc":[`) {
			t.Errorf("notification %s", p)
		}
	}
	select {
	case n := <-sub.C():
		t.Errorf("C delivered %s", n.Payload)
	default:
	}
	c.Close()
	await.Drained(t, sub.C(), "the subscription has not ended with the connection")
	if sub.Err() == nil {
		t.Error("no reason after the connection closed")
	}
}

// TestCloseFor: the reason a connection is closed for is what Err and its
// subscriptions say; a later close does not replace it.
func TestCloseFor(t *testing.T) {
	ctx, c := dialDevice(t)
	sub, env, err := c.Subscribe(ctx, "/Meas/Acc/13")
	if err != nil || !env.OK() {
		t.Fatalf("Subscribe: %v %+v", err, env)
	}
	gone := errors.New("device 000123 went away (it went off the air)")
	c.CloseFor(gone)
	await.Drained(t, sub.C(), "the subscription has not ended with the connection")
	c.Close()
	if !errors.Is(sub.Err(), gone) || !errors.Is(c.Err(), gone) {
		t.Errorf("subscription ended with %v, connection with %v; want %v", sub.Err(), c.Err(), gone)
	}
}

// TestDeviceEnds: a subscription the device ends on its own (here with a
// reset) says so with ErrEnded and the device's reason.
func TestDeviceEnds(t *testing.T) {
	ctx, c := dialDevice(t)
	sub, env, err := c.Subscribe(ctx, "/Meas/Acc/13")
	if err != nil || !env.OK() {
		t.Fatalf("Subscribe: %v %+v", err, env)
	}
	if env, err := c.Do(ctx, resource.Put, "/System/Mode", resource.Uint8(5)); err != nil || !env.OK() {
		t.Fatalf("PUT /System/Mode 5: %v %+v", err, env)
	}
	await.Drained(t, sub.C(), "the subscription has not ended with the device's mode change")
	if err := sub.Err(); !errors.Is(err, client.ErrEnded) || errors.Is(err, client.ErrClosed) {
		t.Errorf("subscription ended with %v, want ErrEnded", err)
	}
}
