package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"senseboard"
	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/resource"
	"senseboard/transport/serial"
)

// pushConn is a stream that pushes what it receives, as a stream of the
// radio link does: a goroutine of its own reads the connection and hands
// the bytes on. It counts the reads made through Read.
type pushConn struct {
	net.Conn
	reads  atomic.Int32
	pushed chan struct{} // closed when the pushing goroutine ends
}

func (p *pushConn) Read(b []byte) (int, error) {
	p.reads.Add(1)
	return p.Conn.Read(b)
}

// Push starts the goroutine that pushes; it ends with the connection.
func (p *pushConn) Push(data func([]byte), end func(error)) {
	go func() {
		defer close(p.pushed)
		b := make([]byte, 512)
		for {
			n, err := p.Conn.Read(b)
			if n > 0 {
				data(b[:n])
			}
			if err != nil {
				end(err)
				return
			}
		}
	}()
}

// openPush serves a device over a pipe and opens a connection over it
// with Options.Push as push says.
func openPush(t *testing.T, push bool) (context.Context, *client.Conn, *pushConn) {
	t.Helper()
	d, err := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	dev, cen := net.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang protection
	served := make(chan struct{})
	go func() { (&serial.Server{Device: d.Core}).ServeConn(ctx, dev); close(served) }()
	p := &pushConn{Conn: cen, pushed: make(chan struct{})}
	c, err := clienttest.Open(ctx, "pipe", p, &client.Options{Push: push})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		await.Within(t, served, "the device's session has not ended")
		if push {
			await.Within(t, p.pushed, "the stream's pushing has not ended with the connection")
		}
	})
	return ctx, c, p
}

// TestPush: over a stream that pushes, with Options.Push, answers and
// notifications come through the stream's own goroutine and the connection
// never reads; without the option it reads as over any stream. The
// stream's end closes the connection with the reason.
func TestPush(t *testing.T) {
	for _, push := range []bool{false, true} {
		t.Run(map[bool]string{true: "push", false: "read"}[push], func(t *testing.T) {
			ctx, c, p := openPush(t, push)
			if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
				t.Fatalf("GET /Info: %+v %v", env, err)
			}
			got := make(chan struct{}, 100)
			if _, env, err := c.SubscribeFunc(ctx, "/Meas/Acc/104", func([]byte, time.Time) {
				select {
				case got <- struct{}{}:
				default:
				}
			}); err != nil || !env.OK() {
				t.Fatalf("SubscribeFunc: %+v %v", env, err)
			}
			for range 3 {
				select {
				case <-got:
				case <-ctx.Done():
					t.Fatal("no notification came")
				}
			}
			if n := p.reads.Load(); push != (n == 0) {
				t.Errorf("push %v: the connection read the stream %d times", push, n)
			}
			if !push {
				return
			}
			p.Conn.Close() // the stream ends under the connection
			select {
			case <-c.Done():
			case <-ctx.Done():
				t.Fatal("the connection did not close with its stream")
			}
			if err := c.Err(); !errors.Is(err, client.ErrClosed) || !errors.Is(err, io.ErrClosedPipe) {
				t.Errorf("Err = %v, want ErrClosed with the stream's reason", err)
			}
		})
	}
}
