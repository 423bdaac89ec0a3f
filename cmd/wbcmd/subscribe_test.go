package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/client"
	"senseboard/internal/clienttest"
	"senseboard/logbook"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/senseboardtest"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// A Logbook read whose printing stalls loses nothing: while the first
// notification waits to be printed, the rest wait in the line, not in the
// client's queue, which drops what does not fit (client.SubscriptionBuffer).
// The printing waits until the client has read more notifications than
// that queue holds (so a tool that reads ahead of its printing has lost
// some), or until the device waits for room in a line of 1 MiB, which it
// cannot fill sooner while the client reads ahead of it; then the whole
// log must come out, in order, with its end marks. The device's own rule
// for a client that stops reading (a write that waits for serial.WriteTimeout)
// is left out: the line takes no write deadline.
func TestSlowPrintingLosesNothing(t *testing.T) {
	p := profile.Default()
	p.Logbook.Capacity = 4 << 20
	r := senseboardtest.New(t, senseboard.Config{Profile: p})
	const room = 1 << 20
	id, want := writeLog(t, r, (client.SubscriptionBuffer+1200)*logbook.DataChunk)

	toClient := newLinePipe(room)
	devRead, clientWrite := net.Pipe()
	ahead := make(chan struct{})
	dev := &deviceEnd{Conn: devRead, out: toClient}
	cli := &clientEnd{Conn: clientWrite, in: toClient, dec: wire.NewDecoder(0), ahead: ahead, after: client.SubscriptionBuffer + 4}
	subCtx, stop := context.WithCancel(context.Background())
	defer stop()
	// A tool that dropped the end marks would wait for them: stop it a
	// while after the client has read them (a guard against hanging).
	var guard *time.Timer
	cli.read = func() { guard = time.AfterFunc(time.Minute, stop) }
	defer func() {
		if guard != nil {
			guard.Stop()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	var served sync.WaitGroup
	srv := &serial.Server{Device: r.Device.Core}
	served.Go(func() { srv.ServeConn(ctx, dev) })
	defer served.Wait()
	defer cancel()
	c, err := clienttest.Open(ctx, "line", cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	out := &stalledOutput{release: func() {
		select {
		case <-ahead:
		case <-toClient.full:
		case <-time.After(time.Minute): // a guard against hanging
			t.Error("the client neither read ahead nor left the device waiting for room")
		}
	}, ends: logbook.DataEnds, stop: stop}
	o := &options{path: fmt.Sprintf("/Mem/Logbook/byId/%d/Data", id), timeout: time.Minute, compact: true}
	var stderr bytes.Buffer
	if code := subscribe(subCtx, c, o, strings.NewReader(""), out, &stderr); code != exitOK {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}

	var got []byte
	ends := 0
	for line := range strings.Lines(out.buf.String()) {
		if !strings.HasPrefix(line, "@") {
			continue
		}
		_, note, _ := strings.Cut(strings.TrimSpace(line), " ")
		var m struct {
			Offset int    `json:"offset"`
			Bytes  []byte `json:"bytes"`
		}
		if err := json.Unmarshal([]byte("{"+strings.TrimSuffix(strings.TrimPrefix(note, "{ "), " }")+"}"), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if m.Offset != len(got) {
			t.Fatalf("a notification at offset %d after %d bytes: %d bytes lost", m.Offset, len(got), m.Offset-len(got))
		}
		if len(m.Bytes) == 0 {
			ends++
		}
		got = append(got, m.Bytes...)
	}
	if !bytes.Equal(got, want) || ends != logbook.DataEnds {
		t.Errorf("printed %d bytes of the log's %d, equal %t, and %d end marks of %d", len(got), len(want), bytes.Equal(got, want), ends, logbook.DataEnds)
	}
}

// writeLog logs the IMU and the ECG until the log holds at least size
// bytes, and returns its id and bytes.
func writeLog(t *testing.T, r *senseboardtest.Rig, size int) (uint32, []byte) {
	t.Helper()
	c := logbook.Config{DataEntries: logbook.DataEntries{DataEntry: []logbook.DataEntry{
		{Path: "/Meas/IMU9/833"}, {Path: "/Meas/ECG/500/mV"},
	}}}
	cfg, err := resource.Record("DataLoggerConfig", c)
	if err != nil {
		t.Fatal(err)
	}
	r.Expect(200, resource.Put, "/Mem/DataLogger/Config", cfg)
	r.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	id := r.LogUntil(size).ID
	return id, r.Expect(200, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(id))).Content.(*logbook.LogData).Data
}

// stalledOutput keeps what is printed; the first notification's line
// waits for release. When ends end marks of a log (notifications with no
// bytes) have been printed, it calls stop.
type stalledOutput struct {
	release func()
	ends    int
	stop    func()
	stalled bool
	buf     bytes.Buffer
}

func (w *stalledOutput) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("@")) && !w.stalled {
		w.stalled = true
		w.release()
	}
	if bytes.Contains(p, []byte(`"bytes":[]`)) {
		if w.ends--; w.ends == 0 {
			w.stop()
		}
	}
	return w.buf.Write(p)
}

// linePipe is the device-to-client direction of a line that holds room
// bytes; full is closed when a write first waits for room.
type linePipe struct {
	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte
	room   int
	closed bool
	full   chan struct{}
}

func newLinePipe(room int) *linePipe {
	p := &linePipe{room: room, full: make(chan struct{})}
	p.cond.L = &p.mu
	return p
}

func (p *linePipe) write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for len(b) > 0 {
		for len(p.buf) >= p.room && !p.closed {
			select {
			case <-p.full:
			default:
				close(p.full)
			}
			p.cond.Wait()
		}
		if p.closed {
			return n, io.ErrClosedPipe
		}
		k := min(p.room-len(p.buf), len(b))
		p.buf = append(p.buf, b[:k]...)
		b, n = b[k:], n+k
		p.cond.Broadcast()
	}
	return n, nil
}

func (p *linePipe) read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && !p.closed {
		p.cond.Wait()
	}
	if len(p.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	p.cond.Broadcast()
	return n, nil
}

func (p *linePipe) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// deviceEnd is the device's end of the line: it reads the client's
// frames from a net.Pipe and writes into the linePipe, without a write
// deadline.
type deviceEnd struct {
	net.Conn
	out *linePipe
}

func (d *deviceEnd) Write(b []byte) (int, error)      { return d.out.write(b) }
func (d *deviceEnd) SetWriteDeadline(time.Time) error { return nil }
func (d *deviceEnd) SetDeadline(t time.Time) error    { return d.Conn.SetReadDeadline(t) }
func (d *deviceEnd) Close() error                     { d.out.close(); return d.Conn.Close() }

// clientEnd is the client's end of the line. Read closes ahead once the
// client has been handed after notifications: the frames of its earlier
// reads, which it has dispatched before it reads again. It calls read
// once the client has read a log's end marks.
type clientEnd struct {
	net.Conn
	in    *linePipe
	dec   *wire.Decoder
	notes int
	ends  int
	after int
	ahead chan struct{}
	read  func()
}

func (c *clientEnd) Read(b []byte) (int, error) {
	if c.notes >= c.after && c.ahead != nil {
		close(c.ahead)
		c.ahead = nil
	}
	n, err := c.in.read(b)
	c.dec.Feed(b[:n], func(f wire.Frame) {
		if f.Kind != wire.Notification {
			return
		}
		c.notes++
		if bytes.Contains(f.Payload, []byte(`"bytes":[]`)) {
			if c.ends++; c.ends == logbook.DataEnds {
				c.read()
			}
		}
	})
	return n, err
}

func (c *clientEnd) Close() error { c.in.close(); return c.Conn.Close() }
