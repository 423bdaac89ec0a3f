package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/resource"
)

// Every operation on a connection that has ended fails with an error that
// names the port once, as the errors of a connection that ends under it
// do: ErrClosed with the stream's reason, or what the stream says to a
// write.
func TestErrorsAfterTheEndNameThePort(t *testing.T) {
	t.Parallel()
	dev, cen := net.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		fakeDevice(dev, func(uint32) {})
	}()
	ctx := context.Background()
	c, err := clienttest.Open(ctx, "device 000321", cen, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev.Close() // the device hangs up
	<-served
	await.Within(t, c.Done(), "the connection has not ended with its stream")
	for _, tt := range []struct {
		name string
		op   func() error
		is   error
	}{
		{"Do", func() error { _, err := c.Do(ctx, resource.Get, "/Info"); return err }, client.ErrClosed},
		{"Subscribe", func() error { _, _, err := c.Subscribe(ctx, "/Meas/HR"); return err }, client.ErrClosed},
		{"Ping", func() error { return c.Ping(ctx) }, client.ErrClosed},
		{"Call", func() error { _, err := c.Call(ctx, 0x60, nil, 0x61); return err }, client.ErrClosed},
		{"Send", func() error { return c.Send(0x60, nil) }, io.ErrClosedPipe}, // the stream's own error
	} {
		err := tt.op()
		if !errors.Is(err, tt.is) {
			t.Errorf("%s: %v; want %v", tt.name, err, tt.is)
		}
		if err == nil || !strings.HasPrefix(err.Error(), "device 000321: ") || strings.Count(err.Error(), "000321") != 1 {
			t.Errorf("%s: %v; want it to name the port once, first", tt.name, err)
		}
	}
}

// A call whose context has ended, before it is sent or while it waits for
// the answer, fails with the context's error, naming the port once as the
// connection's other errors do: on a stream that a goroutine reads (Open),
// and on a TCP connection that the call reads itself (Dial).
func TestCallsWhoseContextEndedNameThePort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, open := range []struct {
		name string
		port string
		open func(ctx context.Context, dev func(net.Conn)) (*client.Conn, error)
	}{
		{"Open", "device 000321", func(ctx context.Context, dev func(net.Conn)) (*client.Conn, error) {
			d, cen := net.Pipe()
			go dev(d)
			return clienttest.Open(ctx, "device 000321", cen, nil)
		}},
		{"Dial", "TCP" + ln.Addr().String(), func(ctx context.Context, dev func(net.Conn)) (*client.Conn, error) {
			go func() {
				if d, err := ln.Accept(); err == nil {
					dev(d)
				}
			}()
			return clienttest.Dial(ctx, "TCP"+ln.Addr().String(), nil)
		}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan struct{})
		c, err := open.open(context.Background(), func(d net.Conn) {
			defer close(served)
			defer d.Close()
			fakeDevice(d, func(uint32) { cancel() }) // the device holds each ping, and the caller gives up on it
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name string
			op   func() error
		}{
			{"a ping the device holds as the context ends", func() error { return c.Ping(ctx) }},
			{"a request after the context ended", func() error { _, err := c.Do(ctx, resource.Get, "/Info"); return err }},
		} {
			err := tt.op()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s, %s: %v; want %v", open.name, tt.name, err, context.Canceled)
			}
			if err == nil || !strings.HasPrefix(err.Error(), open.port+": ") || strings.Count(err.Error(), open.port) != 1 {
				t.Errorf("%s, %s: %v; want it to name the port once, first", open.name, tt.name, err)
			}
		}
		c.Close()
		await.Within(t, served, open.name+": the device has not seen Close close the stream")
	}
}
