package senseboard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/clock"
	"senseboard/gsp"
	"senseboard/gsp/gspwire"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/link"
	"senseboard/profile"
	"senseboard/resource"
)

func TestFleet(t *testing.T) {
	dir := t.TempDir()
	// streams and adverts kept through a busy machine's pauses
	carrier := airtest.Local(t, airtest.FreeLocal(t), air.Options{Interval: 50 * time.Millisecond, Missed: 200, ReconnectWait: 20 * time.Millisecond})
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: dir}, senseboard.FleetOptions{Devices: 2, PTY: "none", Listen: "127.0.0.1:0", Air: carrier, Speed: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Members) != 2 || h.Members[1].Device.Serial() != "000124" || h.Members[1].StateDir != filepath.Join(dir, "000124") ||
		h.Members[0].Air != air.DialSubject("000123") {
		t.Fatalf("devices: %+v %+v", h.Members[0], h.Members[1])
	}
	// --pty none: no device has a pseudo-terminal
	for _, r := range h.Members {
		if _, err := os.Lstat(filepath.Join(r.StateDir, "tty")); r.PTY != "" || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("device %s with PTY none: pty %q, link: %v", r.Device.Serial(), r.PTY, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx) }()
	// over TCP, and over the radio link from within the program
	c, err := clienttest.Dial(ctx, "TCP"+h.Members[0].TCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || env.Response != 200 {
		t.Errorf("GET over TCP: %+v %v", env, err)
	}
	c.Close()
	nc, err := h.Members[1].DialRadio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	radio, err := (&link.Central{Timeout: await.Guard}).Open(ctx, "radio", nc, link.Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	if adv, err := radio.Scan(ctx); err != nil || adv.Serial != "000124" || !adv.Advertising {
		t.Errorf("scan: %+v %v", adv, err)
	}
	cancel()
	awaitRun(t, done, "Run did not return")
	// the fleet stopped: the radio stream closed with it
	await.Within(t, radio.Done(), "the radio stream is open after the fleet stopped")
	radio.Close()
	if _, err := h.Members[0].DialRadio(context.Background()); err == nil {
		t.Error("DialRadio after the fleet stopped")
	}
}

func TestNewFails(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		cfg  senseboard.Config
		opts senseboard.FleetOptions
		want string
	}{
		{senseboard.Config{Profile: profile.Default().WithSerial("ABC")}, senseboard.FleetOptions{Devices: 2}, "several devices need a numeric first serial"},
		{senseboard.Config{}, senseboard.FleetOptions{Speed: -1}, "speed -1: a positive factor, or max"},
		{senseboard.Config{Clock: clock.NewVirtual()}, senseboard.FleetOptions{Speed: 10}, "speed 10: the devices keep the time of the clock they are given"},
		{senseboard.Config{}, senseboard.FleetOptions{Listen: "nowhere"}, `listen address "nowhere"`},
	}
	for _, tt := range tests {
		tt.cfg.StateDir, tt.opts.PTY = dir, "none"
		if tt.opts.Listen == "" {
			tt.opts.Listen = "none"
		}
		if _, err := senseboard.NewFleet(tt.cfg, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v %+v: %v", tt.cfg, tt.opts, err)
		}
	}
	// what a failed NewFleet opened is closed: the state directory is free again
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: dir}, senseboard.FleetOptions{PTY: "none", Listen: "none"})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}

// TestFleetPort: with a fleet port and no ports of their own, the devices
// are reached on one port by serial number, and the program's file
// descriptors do not grow with its devices (one lock file, one listener).
func TestFleetPort(t *testing.T) {
	const devices = 20
	fds := func() int {
		e, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(e)
	}
	before := fds()
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir()}, senseboard.FleetOptions{Devices: devices, PTY: "none", Listen: "none", ListenFleet: "127.0.0.1:0", Speed: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n := fds() - before; n > devices/4 {
		t.Errorf("%d devices on a fleet port hold %d file descriptors", devices, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() { // after a Fatal too
		cancel()
		awaitRun(t, done, "Run did not return")
	})
	for _, r := range []*senseboard.Member{h.Members[7], h.Members[0], h.Members[devices-1]} {
		if r.TCP != "" {
			t.Errorf("device %s has a port of its own: %s", r.Device.Serial(), r.TCP)
		}
		c, err := clienttest.Dial(ctx, "TCP"+h.Addr+"/"+r.Device.Serial(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Welcome().Serial; got != r.Device.Serial() {
			t.Errorf("asked the fleet port for %s, welcomed by %s", r.Device.Serial(), got)
		}
		c.Close()
	}
}

// Run stops at every speed while a module the device runs as an app holds
// the fleet's virtual clock: here the GSP module, whose link to a central
// that does not read blocks. The apps stop before Run waits for the
// clock's goroutine, which waits for the work held.
func TestRunStopsWhileAnAppHoldsTheClock(t *testing.T) {
	for _, speed := range []float64{10, math.Inf(1)} {
		t.Run(fmt.Sprint(speed), func(t *testing.T) {
			f, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir()}, senseboard.FleetOptions{PTY: "none", Listen: "none", Speed: speed})
			if err != nil {
				t.Fatal(err)
			}
			blocked, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			conn := f.Members[0].Device.GSP.Connect(0, gsp.NotifyFunc(func([]byte) {
				once.Do(func() { close(blocked) })
				<-release // a central that does not read
			}))
			defer conn.Close()
			conn.Write(gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Subscribe, Ref: 1, Path: "/Meas/Acc/52"}))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			returned := false
			defer func() { // after Run returned; a wait that failed ends Run, with the app released, before the next test
				close(release)
				if !returned {
					cancel()
					await.Within(t, done, "Run did not return once the app let go of the clock")
				}
			}()
			await.Within(t, blocked, "the GSP central has had no notification")
			cancel()
			awaitRun(t, done, "Run did not return while an app held the clock")
			returned = true
		})
	}
}

// awaitRun waits for the end of a fleet's Run, whose error comes on done;
// a minute without it is a hang, which fails the test saying hung.
func awaitRun(t *testing.T, done <-chan error, hung string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(time.Minute):
		t.Fatal(hung)
	}
}

// TestFleetLimitsGrow: a fleet's connection limit is 4 per device beyond
// 256 devices, so that each of 300 devices takes four centrals over the
// radio link, 1,200 streams where the old limit of 1,024 refused; the next
// one is refused, and the refusal counts what the program holds and names
// the flag that raises it. A large fleet has no pseudo-terminals.
func TestFleetLimitsGrow(t *testing.T) {
	const devices, each = 300, 4
	// keepalives at the default interval: at 50 ms, those of 1,200 streams
	// and the adverts of 300 devices keep a loaded machine's link seconds
	// behind
	carrier := airtest.Local(t, airtest.FreeLocal(t), air.Options{Missed: 200, ReconnectWait: 20 * time.Millisecond})
	f, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir(), Profile: profile.Default().WithSerial("500000")},
		senseboard.FleetOptions{Devices: devices, Listen: "none", Air: carrier})
	if err != nil {
		t.Fatal(err)
	}
	if program, perDevice := f.MaxConns(); program != devices*each || perDevice != 64 {
		t.Errorf("limits %d of the fleet, %d of each device; want %d, 64", program, perDevice, devices*each)
	}
	for _, m := range []*senseboard.Member{f.Members[0], f.Members[devices-1]} {
		if m.PTY != "" {
			t.Errorf("device %s of %d has a pseudo-terminal %s", m.Device.Serial(), devices, m.PTY)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		awaitRun(t, done, "Run did not return")
	}()
	central := airtest.Local(t, carrier.URL()[len("nats://"):], air.Options{Missed: 200})
	lc := &link.Central{Address: "C0:4C:4F:41:44:00", Name: "test", Timeout: time.Minute}
	open := func(serial string) (*link.Conn, error) {
		dctx, dcancel := context.WithTimeout(ctx, time.Minute) // hang guard
		defer dcancel()
		s, err := central.Dial(dctx, serial)
		if err != nil {
			return nil, err
		}
		return lc.Open(dctx, "device "+serial, s, link.Handlers{})
	}
	var mu sync.Mutex
	var conns []*link.Conn
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16)
	for i := range devices * each {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			c, err := open(f.Members[i%devices].Device.Serial())
			if err != nil {
				t.Errorf("stream %d of %d: %v", i+1, devices*each, err)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	_, err = open(f.Members[0].Device.Serial())
	for _, want := range []string{"the program serves 1200 connections at once", "(TCP connections 0, streams of the radio link 1200)", "--max-conns"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("one stream more: %v; want a refusal saying %q", err, want)
		}
	}
}

// The devices of a fleet on real time share a clock of the quantum the
// options give, NewReal's millisecond when they give none.
func TestFleetClockQuantum(t *testing.T) {
	for _, q := range []time.Duration{0, 5 * time.Millisecond} {
		h, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir()},
			senseboard.FleetOptions{Devices: 2, PTY: "none", Listen: "none", ClockQuantum: q})
		if err != nil {
			t.Fatal(err)
		}
		c0, ok := h.Members[0].Device.Clock().(*clock.Real)
		want := max(q, time.Millisecond)
		if !ok || c0.Quantum() != want || h.Members[1].Device.Clock() != clock.Clock(c0) {
			t.Errorf("quantum %v: the devices' clocks %T %v, want one real clock of quantum %v", q, h.Members[0].Device.Clock(), c0, want)
		}
		h.Close()
	}
}

// A device's warnings of its start reach the fleet's log: a Logbook index
// that was corrupt, rebuilt from the logs.
func TestFleetLogsStartWarnings(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "000123")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "logbook.json"), []byte("not an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: dir}, senseboard.FleetOptions{PTY: "none", Listen: "none",
		Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got, want := log.String(), `level=WARN msg="logbook: the index of the logs logbook.json was corrupt; it is rebuilt from the logs, and the corrupt file kept as logbook.json.corrupt (truncated: `; !strings.Contains(got, want) || !strings.Contains(got, "device=000123") {
		t.Errorf("the fleet's log:\n%s\nwant a line with %s and device=000123", got, want)
	}
}

// TestDialRadioNamesTheDevice: a radio dial that cannot be made names its
// device once, wrapping why: a context that has ended, a fleet that has
// stopped.
func TestDialRadioNamesTheDevice(t *testing.T) {
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir()}, senseboard.FleetOptions{Devices: 1, PTY: "none", Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	m := h.Members[0]
	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) || strings.Count(fmt.Sprint(err), m.Device.Serial()) != 1 {
			t.Errorf("%s: %v; want %v naming device %s once", what, err, want, m.Device.Serial())
		}
	}
	_, err = m.DialRadio(ended)
	check("a dial whose context has ended", err, context.Canceled)
	stop()
	awaitRun(t, done, "Run did not return")
	_, err = m.DialRadio(context.Background())
	check("a dial after the fleet stopped", err, net.ErrClosed)
}
