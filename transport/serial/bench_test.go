package serial_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bugserial "go.bug.st/serial"

	"senseboard"
	"senseboard/clock"
	"senseboard/internal/clienttest"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// BenchmarkRoundTrip measures GET /Info through the client library over
// TCP and over a pseudo-terminal; BenchmarkEcho measures the raw round
// trip of the same kind of pair echoing 64 bytes, for comparison.
func BenchmarkRoundTrip(b *testing.B) {
	for _, transport := range []string{"tcp", "pty"} {
		b.Run(transport, func(b *testing.B) {
			_, addr, tty := newDeviceB(b)
			port := "TCP" + addr
			if transport == "pty" {
				port = tty
			}
			ctx := context.Background()
			c, err := clienttest.Dial(ctx, port, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ResetTimer()
			for b.Loop() {
				if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEcho(b *testing.B) {
	msg := []byte(strings.Repeat("x", 64))
	b.Run("tcp", func(b *testing.B) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.Copy(c, c)
		}()
		c, _ := net.Dial("tcp", ln.Addr().String())
		defer c.Close()
		echo(b, c, msg)
	})
	b.Run("pty", func(b *testing.B) {
		pt, err := serial.OpenPTY("")
		if err != nil {
			b.Fatal(err)
		}
		defer pt.Close()
		go io.Copy(pt, pt) // the device side echoes
		p, err := bugserial.Open(pt.Path(), &bugserial.Mode{BaudRate: 115200})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		echo(b, p, msg)
	})
}

func echo(b *testing.B, rw io.ReadWriter, msg []byte) {
	buf := make([]byte, len(msg))
	for b.Loop() {
		rw.Write(msg)
		if _, err := io.ReadFull(rw, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIMU9Throughput runs a device as fast as its clock can go and
// counts the IMU9 samples at 1666 Hz one line delivers to a client per
// second of wall time.
func BenchmarkIMU9Throughput(b *testing.B) {
	for _, transport := range []string{"tcp", "pty"} {
		b.Run(transport, func(b *testing.B) {
			vc := clock.NewVirtual()
			_, addr, tty := newDeviceOn(b, vc)
			port := "TCP" + addr
			if transport == "pty" {
				port = tty
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c, err := clienttest.Dial(ctx, port, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			sub, _, err := c.Subscribe(ctx, "/Meas/IMU9/1666")
			if err != nil {
				b.Fatal(err)
			}
			running := make(chan struct{})
			go func() { vc.Run(ctx, 0); close(running) }()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() { // one notification of 8 samples per iteration
				<-sub.C()
			}
			b.ReportMetric(float64(b.N*8)/time.Since(start).Seconds(), "samples/s")
			b.StopTimer()
			cancel()
			<-running
		})
	}
}

func newDeviceB(b *testing.B) (*senseboard.Device, string, string) { return newDeviceOn(b, nil) }

// newDeviceOn starts a device with a TCP listener and a pty on clock c.
func newDeviceOn(b *testing.B, c clock.Clock) (*senseboard.Device, string, string) {
	return newDeviceServedOn(b, c, &serial.Server{})
}

// newDeviceServedOn is newDeviceOn with srv, whose Device it sets.
func newDeviceServedOn(b *testing.B, c clock.Clock, srv *serial.Server) (*senseboard.Device, string, string) {
	dir := b.TempDir()
	d, err := senseboard.New(senseboard.Config{StateDir: filepath.Join(dir, "state"), Seed: 1, Clock: c})
	if err != nil {
		b.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	pt, err := serial.OpenPTY(filepath.Join(dir, "tty"))
	if err != nil {
		b.Fatal(err)
	}
	srv.Device = d.Core
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { srv.Serve(ctx, ln); done <- struct{}{} }()
	go func() { srv.ServeLine(ctx, pt); done <- struct{}{} }()
	b.Cleanup(func() {
		cancel()
		<-done
		<-done
		pt.Close()
		d.Close()
		os.RemoveAll(dir)
	})
	return d, ln.Addr().String(), pt.Link()
}

// BenchmarkIdleSessionMemory opens idle TCP sessions (each has said hello
// and been welcomed) and reports what one costs the process: heap and
// goroutine stacks, on both ends of the connection, as bytes/session.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const sessions = 500
	_, addr, _ := newDeviceServedOn(b, nil, &serial.Server{MaxConns: 4 * sessions}) // room for the last round's closing ones
	hello, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: wire.Version, Client: "idle", Session: "idle"})
	inUse := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc + m.StackInuse
	}
	var perSession float64
	for b.Loop() {
		before := inUse()
		conns := make([]net.Conn, 0, sessions)
		buf := make([]byte, 4096)
		for range sessions {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
			c.Write(hello)
			dec, welcomed := wire.NewDecoder(0), false
			for !welcomed {
				n, err := c.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				dec.Feed(buf[:n], func(f wire.Frame) { welcomed = f.Kind == wire.Welcome })
			}
		}
		after := inUse()
		perSession = float64(int64(after)-int64(before)) / sessions
		for _, c := range conns {
			c.Close()
		}
	}
	b.ReportMetric(perSession, "bytes/session")
}
