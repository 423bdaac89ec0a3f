package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"senseboard/profile"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/replay"
)

// TestPrintRunning: a few devices are listed one by one; more get a
// summary of the first and the last, in a few lines, unless -v asks for
// each.
func TestPrintRunning(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		devices int
		all     bool
		pty     bool   // a pseudo-terminal each
		listed  int    // devices listed one by one
		summary string // in the output, when not ""
	}{
		{2, false, false, 2, ""},
		{listEach, false, false, listEach, ""},
		{listEach + 1, false, false, 0, "senseboard: 9 devices, 000300 to 000308 ("},
		{listEach + 1, false, true, 0, "senseboard: 9 devices, 000300 to 000308 ("},
		{listEach + 1, true, false, listEach + 1, ""},
	} {
		pty := "none"
		if tt.pty {
			pty = ""
		}
		h, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir(), Profile: profile.Default().WithSerial("000300")},
			senseboard.FleetOptions{Devices: tt.devices, PTY: pty, Listen: "127.0.0.1:0", ListenFleet: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		printRunning(&out, h, nil, nil, tt.all)
		h.Close()
		text := out.String()
		if n := strings.Count(text, ") is running\n"); n != tt.listed {
			t.Errorf("%d devices (all %v): %d listed, want %d:\n%s", tt.devices, tt.all, n, tt.listed, text)
		}
		if tt.summary == "" {
			continue
		}
		first, last := h.Members[0], h.Members[tt.devices-1]
		for _, want := range []string{tt.summary, "  TCP          a port each: 000300 at " + first.TCP + " … 000308 at " + last.TCP + "\n",
			"  fleet port   " + h.Addr + "/<serial>\n", "  state        " + first.StateDir + " to " + last.StateDir + "\n",
			"  limits       1024 connections of the devices together (--max-conns), 64 of each (--max-conns-per-device)\n"} {
			if !strings.Contains(text, want) {
				t.Errorf("%d devices: no %q in the summary:\n%s", tt.devices, want, text)
			}
		}
		ptys := "  serial lines 9 pseudo-terminals, " + first.PTY + " to " + last.PTY + "\n"
		if got := strings.Contains(text, ptys); got != tt.pty || !tt.pty && strings.Contains(text, "serial lines") {
			t.Errorf("pseudo-terminals %v: %q in the summary is %v:\n%s", tt.pty, ptys, got, text)
		}
		// a line each for the devices, their serial lines, TCP ports,
		// fleet port (2), state, limits, the radio link and how to stop
		if n := strings.Count(text, "\n"); n > 9 {
			t.Errorf("%d devices took %d lines:\n%s", tt.devices, n, text)
		}
	}
}

// TestFleetGC: a fleet larger than the pseudo-terminals' collects at
// fleetGCPercent, unless $GOGC says otherwise; a smaller one keeps the
// runtime's target.
func TestFleetGC(t *testing.T) {
	for _, tt := range []struct {
		devices int
		gogc    string
		percent int
		set     bool
	}{
		{1, "", 0, false},
		{senseboard.DefaultPTYs, "", 0, false},
		{senseboard.DefaultPTYs + 1, "", fleetGCPercent, true},
		{5000, "", fleetGCPercent, true},
		{5000, "100", 0, false},
		{5000, "off", 0, false},
	} {
		getenv := func(k string) string {
			if k == "GOGC" {
				return tt.gogc
			}
			return ""
		}
		if percent, set := fleetGC(tt.devices, getenv); percent != tt.percent || set != tt.set {
			t.Errorf("fleetGC(%d, GOGC=%q) = %d, %v; want %d, %v", tt.devices, tt.gogc, percent, set, tt.percent, tt.set)
		}
	}
}

// TestFleetWriteInterval: a fleet larger than the pseudo-terminals'
// writes notifications fleetWriteInterval apart, a smaller one at once,
// unless --write-interval says otherwise (zero included); the devices'
// clock wakes at most every twentieth of the interval.
func TestFleetWriteInterval(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"--devices", strconv.Itoa(senseboard.DefaultPTYs)}, 0},
		{[]string{"--devices", strconv.Itoa(senseboard.DefaultPTYs + 1)}, fleetWriteInterval},
		{[]string{"--devices", "5000", "--write-interval", "0"}, 0},
		{[]string{"--devices", "5000", "--write-interval", "20ms"}, 20 * time.Millisecond},
		{[]string{"--write-interval", "30ms"}, 30 * time.Millisecond},
		{[]string{"--devices", "5000", "--write-interval", "-1ms"}, -1}, // refused
	} {
		o, err := parseRunFlags(append([]string{"--state", t.TempDir(), "--listen", "none", "--http", "none", "--nats", "none"}, tt.args...), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		_, opts, err := o.config(io.Discard)
		if tt.want < 0 {
			if err == nil || !strings.Contains(err.Error(), "--write-interval -1ms") {
				t.Errorf("%q: %v, want a refusal naming the flag and its value", tt.args, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if opts.WriteInterval != tt.want || opts.ClockQuantum != tt.want {
			t.Errorf("%q: write interval %v and clock quantum %v, want %v and %v", tt.args, opts.WriteInterval, opts.ClockQuantum, tt.want, tt.want)
		}
	}
}

// TestBridgeClearsDevicePorts: a fleet whose TCP ports reach the bridge's
// default port moves the bridge past them; a bridge port given among them
// is refused, and one elsewhere stays.
func TestBridgeClearsDevicePorts(t *testing.T) {
	for _, c := range []struct {
		args []string
		http string // the bridge's address after, "" for an error
	}{
		{[]string{"--devices", "2000"}, "127.0.0.1:9809"},
		{[]string{"--devices", "271"}, "127.0.0.1:8080"},
		{[]string{"--devices", "272"}, "127.0.0.1:8081"},
		{[]string{"--devices", "2000", "--listen", "0.0.0.0:7809", "--listen-beyond-loopback"}, "127.0.0.1:9809"},
		{[]string{"--devices", "2000", "--http", "localhost:8080"}, ""},
		{[]string{"--devices", "2000", "--http", "127.0.0.1:9809"}, "127.0.0.1:9809"},
		{[]string{"--devices", "2000", "--listen", "127.0.0.1:0"}, "127.0.0.1:8080"},
		{[]string{"--devices", "2000", "--listen", "none"}, "127.0.0.1:8080"},
		{[]string{"--devices", "2000", "--listen", "127.0.0.2:7809"}, "127.0.0.1:8080"},
	} {
		t.Setenv("SENSEBOARD_HTTP", "")
		o, err := parseRunFlags(c.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		err = o.clearBridge()
		switch {
		case c.http == "" && (err == nil || !strings.Contains(err.Error(), "among the devices' TCP ports, 7809 to 9808")):
			t.Errorf("%v: %v; want a refusal", c.args, err)
		case c.http != "" && (err != nil || *o.bridge.http != c.http):
			t.Errorf("%v: bridge on %s, %v; want %s", c.args, *o.bridge.http, err, c.http)
		}
	}
}

// TestWriteProfile: --mutexprofile's writer writes the runtime's profile
// in pprof's format (gzip-compressed), and says so when the file cannot
// be made.
func TestWriteProfile(t *testing.T) {
	defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(1))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				mu.Lock()
				runtime.Gosched()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	path := filepath.Join(t.TempDir(), "mutex.prof")
	if err := writeProfile("mutex", path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("profile: %d bytes, %v; want pprof's gzip", len(b), err)
	}
	if err := writeProfile("mutex", t.TempDir()); err == nil {
		t.Error("a directory taken as the profile's file")
	}
}

// TestReplayHRLeadsOfFiles: with several files, --replay-hr-leads 2 asks
// for a second lead of the ECG that plays, the first file's with one; the
// CLI refuses it, naming that file, exactly where senseboard.New refuses
// the same recordings, so that the two cannot disagree on which ECG plays,
// and with New's replay.ErrNoSecondLead.
func TestReplayHRLeadsOfFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dat := string([]byte{1, 0, 2, 0, 3, 0, 4, 0})
	write("one.dat", dat)
	write("two.dat", dat)
	one := write("one.hea", "one 1 360\none.dat 16 100\n")
	two := write("two.hea", "two 2 360\ntwo.dat 16 100\ntwo.dat 16 100\n")
	acc := write("acc.csv", "Timestamp,acc_x,acc_y,acc_z\n0,1,2,3\n10,1,2,3\n20,1,2,3\n")
	for _, tt := range []struct {
		files []string
		err   string // the CLI's refusal, "" for none
	}{
		{[]string{acc, two}, ""},
		{[]string{two, one}, ""},
		{[]string{acc, two, one}, ""},
		{[]string{one, two}, "--replay " + one + ": the ECG played has no second lead"},
		{[]string{acc, one, two}, "--replay " + one + ": the ECG played has no second lead"},
		{[]string{acc}, "no file of --replay holds an ECG: the ECG played has no second lead"},
	} {
		args := []string{"--state", t.TempDir(), "--listen", "none", "--http", "none", "--nats", "none", "--replay-hr-leads", "2"}
		var recs []*replay.Recording
		for _, f := range tt.files {
			args = append(args, "--replay", f)
			r, err := replay.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		o, err := parseRunFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		_, _, cliErr := o.config(io.Discard)
		if tt.err == "" && cliErr != nil || tt.err != "" && (cliErr == nil || !strings.Contains(cliErr.Error(), tt.err) || !errors.Is(cliErr, replay.ErrNoSecondLead)) {
			t.Errorf("%q: %v; want refused %q, replay.ErrNoSecondLead", tt.files, cliErr, tt.err)
		}
		d, newErr := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Clock: clock.NewVirtual(), Replay: recs, ReplayHRLeads: 2})
		if newErr == nil {
			d.Close()
		}
		if (cliErr == nil) != (newErr == nil) || newErr != nil && (!errors.Is(newErr, replay.ErrHRLeads) || !errors.Is(newErr, replay.ErrNoSecondLead)) {
			t.Errorf("%q: the CLI says %v, senseboard.New %v; want both nil, or both a refusal (New's ErrHRLeads and ErrNoSecondLead)", tt.files, cliErr, newErr)
		}
	}
}

// TestReplayHRLeads: --replay-hr-leads 2 gives the devices' heart rate
// both leads of a replayed record, and 1, the default, its first, the
// second not kept in memory; other numbers, and the flag without
// --replay, are refused naming the flag.
func TestReplayHRLeads(t *testing.T) {
	dir := t.TempDir()
	hea := filepath.Join(dir, "r.hea")
	if err := os.WriteFile(hea, []byte("r 2 360\nr.dat 16 100\nr.dat 16 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r.dat"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want int    // Config.ReplayHRLeads
		err  string // the refusal, "" for none
	}{
		{[]string{"--replay", hea}, 1, ""},
		{[]string{"--replay", hea, "--replay-hr-leads", "1"}, 1, ""},
		{[]string{"--replay", hea, "--replay-hr-leads", "2"}, 2, ""},
		{[]string{"--replay", hea, "--replay-hr-leads", "0"}, 0, "--replay-hr-leads 0: give 1 (the lead the ECG plays) or 2"},
		{[]string{"--replay", hea, "--replay-hr-leads", "3"}, 0, "--replay-hr-leads 3: give 1 (the lead the ECG plays) or 2"},
		{[]string{"--replay-hr-leads", "2"}, 0, "--replay-hr-leads: give --replay too"},
		{[]string{"--replay-hr-leads", "1"}, 0, "--replay-hr-leads: give --replay too"},
	} {
		o, err := parseRunFlags(append([]string{"--state", t.TempDir(), "--listen", "none", "--http", "none", "--nats", "none"}, tt.args...), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		cfg, _, err := o.config(io.Discard)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v; want a refusal %q", tt.args, err, tt.err)
			}
			continue
		case err != nil:
			t.Fatalf("%q: %v", tt.args, err)
		}
		if cfg.ReplayHRLeads != tt.want || len(cfg.Replay) != 1 {
			t.Fatalf("%q: %d leads for the heart rate of %d recordings; want %d of 1", tt.args, cfg.ReplayHRLeads, len(cfg.Replay), tt.want)
		}
		if kept := len(cfg.Replay[0].Series[replay.ECG].Axes); kept != tt.want {
			t.Errorf("%q: %d leads of the record kept; want %d", tt.args, kept, tt.want)
		}
		cfg.Clock = clock.NewVirtual()
		d, err := senseboard.New(cfg)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		d.Close()
	}
	if _, err := parseRunFlags([]string{"--replay-hr-leads", "two"}, io.Discard); err == nil {
		t.Error("--replay-hr-leads two: taken")
	}
}
