package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"senseboard"
	"senseboard/client"
	"senseboard/clock"
	"senseboard/internal/clienttest"
	"senseboard/logbook"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/senseboardtest"
	"senseboard/transport/serial"
)

// fleetInterval is a fleet's write interval and its clock's quantum, as
// senseboard run sets them for more than 256 devices.
const fleetInterval = 100 * time.Millisecond

// bigLogbook is the default profile with room for logs of a few MB.
func bigLogbook() *profile.Profile {
	p := profile.Default()
	p.Logbook.Capacity = 8 << 20
	return p
}

// writeLog logs the IMU at 833 Hz and the ECG at 500 Hz on a device of
// bigLogbook on a virtual clock in dir until its log holds at least size
// bytes, and returns the log's id and size. A device opened on dir after
// finds it.
func writeLog(tb testing.TB, dir string, size int) (uint32, int) {
	tb.Helper()
	d := senseboardtest.New(tb, senseboard.Config{StateDir: dir, Profile: bigLogbook()})
	startLogging(tb, d)
	last := d.LogUntil(size)
	d.Device.Close()
	d.Device = nil
	return last.ID, int(last.Size)
}

// serveLines serves srv's device on a TCP listener and on a
// pseudo-terminal in dir until the test ends, and returns the two ports
// as the client names them.
func serveLines(tb testing.TB, srv *serial.Server, dir string) (tcp, pty string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	pt, err := serial.OpenPTY(filepath.Join(dir, "tty"))
	if err != nil {
		ln.Close()
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { srv.Serve(ctx, ln); done <- struct{}{} }()
	go func() { srv.ServeLine(ctx, pt); done <- struct{}{} }()
	tb.Cleanup(func() {
		cancel()
		<-done
		<-done
		pt.Close()
	})
	return "TCP" + ln.Addr().String(), pt.Link()
}

// A log read by subscription over a TCP session and over a
// pseudo-terminal arrives whole, in order, with its end marks, read with
// the serial protocol's client, while the device's clock does not move:
// the transfer goes on as the session's writer takes what waits, not on
// the clock. Paced by the clock, it waited for it after two windows
// where the line had no room at once (a pseudo-terminal).
func TestLogbookDownloadNeedsNoClock(t *testing.T) {
	r := senseboardtest.New(t, senseboard.Config{})
	id, want := makeLog(t, r, 5)
	if len(want) < 64*logbook.DataChunk {
		t.Fatalf("a log of %d bytes fills no pseudo-terminal", len(want))
	}
	tcp, pty := serveLines(t, &serial.Server{Device: r.Device.Core}, t.TempDir())
	start := r.Clock.Now()
	for _, port := range []string{tcp, pty} {
		c, err := clienttest.Dial(context.Background(), port, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := download(c, id, time.Minute)
		c.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes of the log's %d, equal %t: %v", port, len(got), len(want), bytes.Equal(got, want), err)
		}
	}
	if r.Clock.Now() != start {
		t.Errorf("the clock moved %v", r.Clock.Now()-start)
	}
}

// makeLog logs the IMU and the ECG for seconds of device time and returns
// the log's id and bytes.
func makeLog(t *testing.T, r *senseboardtest.Rig, seconds int) (uint32, []byte) {
	t.Helper()
	startLogging(t, r)
	r.Advance(time.Duration(seconds) * time.Second)
	r.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	es := r.Expect(200, resource.Get, "/Mem/Logbook/Entries").Content.(*logbook.Entries).Elements
	id := es[len(es)-1].ID
	return id, r.Expect(200, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(id))).Content.(*logbook.LogData).Data
}

// startLogging logs the IMU at 833 Hz and the ECG at 500 Hz.
func startLogging(tb testing.TB, r *senseboardtest.Rig) {
	tb.Helper()
	c := logbook.Config{DataEntries: logbook.DataEntries{DataEntry: []logbook.DataEntry{
		{Path: "/Meas/IMU9/833"}, {Path: "/Meas/ECG/500/mV"}, {Path: "/Time/Detailed"},
	}}}
	cfg, err := resource.Record("DataLoggerConfig", c)
	if err != nil {
		tb.Fatal(err)
	}
	r.Expect(200, resource.Put, "/Mem/DataLogger/Config", cfg)
	r.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
}

// BenchmarkLogbookDownload reads a log of 2 MB by subscription
// (/Mem/Logbook/byId/{LogId}/Data) with the serial protocol's client, from
// a device on a real clock whose quantum is a fleet's write interval, over
// a TCP session and over a pseudo-terminal, both with that write interval;
// MB/s is the log's bytes a second as the client reads them, cpu-ms/MB
// the process's CPU time (the device's and the client's) per MB of log.
func BenchmarkLogbookDownload(b *testing.B) {
	dir := b.TempDir()
	state := filepath.Join(dir, "state")
	id, size := writeLog(b, state, 2<<20)
	clk := clock.NewRealQuantum(fleetInterval)
	defer clk.Close()
	d, err := senseboard.New(senseboard.Config{StateDir: state, Seed: 1, Clock: clk, Profile: bigLogbook()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	tcp, pty := serveLines(b, &serial.Server{Device: d.Core, WriteInterval: fleetInterval}, dir)
	for _, port := range []struct{ name, port string }{{"tcp", tcp}, {"pty", pty}} {
		b.Run(port.name, func(b *testing.B) {
			c, err := clienttest.Dial(context.Background(), port.port, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.SetBytes(int64(size))
			cpu := cpuTime()
			for b.Loop() {
				if got, err := download(c, id, time.Hour); err != nil || len(got) != size {
					b.Fatalf("read %d bytes of the log's %d: %v", len(got), size, err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/1e6/(float64(b.N)*float64(size)/1e6), "cpu-ms/MB")
		})
	}
}

// download reads log id by subscription over c, up to its end marks, and
// returns its bytes; it fails when they do not come in order, or have not
// all come after hang. It reads on the connection's goroutine
// (SubscribeFunc), as a downloader that must lose nothing does: what it
// has not read waits in the line, not in the client's inbox.
func download(c *client.Conn, id uint32, hang time.Duration) ([]byte, error) {
	ctx := context.Background()
	var data []byte
	var bad error
	ends := 0
	done := make(chan struct{})
	sub, env, err := c.SubscribeFunc(ctx, "/Mem/Logbook/byId/{LogId}/Data", func(payload []byte, _ time.Time) {
		if bad != nil || ends == logbook.DataEnds {
			return
		}
		var m struct {
			Offset int    `json:"offset"`
			Bytes  []byte `json:"bytes"`
		}
		switch err := json.Unmarshal(payload, &m); {
		case err != nil:
			bad = err
		case m.Offset != len(data):
			bad = fmt.Errorf("notification at offset %d after %d bytes", m.Offset, len(data))
		case len(m.Bytes) == 0:
			ends++
		default:
			data = append(data, m.Bytes...)
		}
		if bad != nil || ends == logbook.DataEnds {
			close(done)
		}
	}, resource.Int32(int32(id)))
	if err != nil || !env.OK() {
		return nil, fmt.Errorf("SUBSCRIBE: %v %+v", err, env)
	}
	defer sub.Unsubscribe(ctx)
	select {
	case <-done:
	case <-time.After(hang):
		return nil, fmt.Errorf("no end of the log in %v", hang)
	}
	return data, bad
}
