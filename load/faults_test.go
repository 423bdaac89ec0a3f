package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/fault"
)

// TestAirUnderFaults runs the load as a client that copes with faults,
// against two devices of a fleet on a virtual clock ten times faster than
// real time. The load turns its own Bluetooth off once; then the devices'
// links drop, their request pools are exhausted and their ECG stalls, and
// their IMU6 stalls, each fault injected once the load has coped with the
// ones before, so that what it sees does not depend on how fast the
// machine runs it. It sees each fault, recovers from it, and reports it
// next to the devices' ground truth: as many as were injected, no more. A
// dropped link is silent for longer than the load waits before it takes a
// stream for stalled (the supervision timeout, 4 s of the devices', is
// 400 ms), and is not taken for a stall.
func TestAirUnderFaults(t *testing.T) {
	t.Parallel()
	addr := airtest.FreeLocal(t)
	devices := airtest.Local(t, addr, air.Options{})
	dir := t.TempDir()
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: dir, Seed: 7},
		senseboard.FleetOptions{Devices: 2, PTY: "none", Listen: "none", Air: devices, Speed: 10})
	if err != nil {
		t.Fatal(err)
	}
	fleetCtx, stopFleet := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(fleetCtx) })
	t.Cleanup(func() { stopFleet(); wg.Wait() })
	link := airtest.Local(t, addr, air.Options{Name: Name})
	phoneOff, err := fault.ParsePlan([]byte("- at: 100ms\n  fault: phoneoff\n  for: 300ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	serials := []string{"000123", "000124"}
	truth := func(serial string) ([]fault.Record, error) {
		f, err := os.Open(filepath.Join(dir, serial, senseboard.FaultLog))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return fault.ReadJSONL(f)
	}
	ended := func() bool { // every fault of the devices' ground truth has ended
		for _, s := range serials {
			recs, err := truth(s)
			if err != nil || slices.ContainsFunc(recs, func(r fault.Record) bool { return r.Active() }) {
				return false
			}
		}
		return true
	}

	// Each step injects its faults into both devices, and ends once the
	// load has seen them (seen) and recovered: it has connected again, and
	// subscribed to both streams, after each connection that ended. Then
	// the next step begins. The first step's fault is the load's own
	// phoneoff, 100 ms into its measurement.
	steps := []struct {
		faults []string
		seen   func(f *FaultReport) bool
	}{
		{nil, func(f *FaultReport) bool { return f.PhoneOffs >= 1 && f.Reconnects >= 2 }},
		{[]string{`{"fault": "drop", "delay": "1s"}`}, func(f *FaultReport) bool { return f.Reconnects >= 4 }},
		// the load learns that the pool is exhausted when it subscribes
		// again to the stalled ECG: 429, and it resets the device
		{[]string{`{"fault": "busy"}`, `{"fault": "stall", "path": "/Meas/ECG"}`},
			func(f *FaultReport) bool { return f.Stalls >= 2 && f.Resets >= 2 && f.Reconnects >= 6 }},
		{[]string{`{"fault": "stall", "path": "/Meas/IMU6"}`}, func(f *FaultReport) bool { return f.Stalls >= 4 && ended() }},
	}
	// the steps' conditions are the load's only bound; this one, the test
	// binary's, leaves time to say which step's faults it did not see
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Until(d)/10))
		defer cancel()
	}
	step := 0
	var injectErr error
	progress := func(r Report) {
		if step == len(steps) || !steps[step].seen(r.Faults) {
			return
		}
		step++
		if step == len(steps) {
			cancel()
			return
		}
		for _, js := range steps[step].faults {
			for _, m := range h.Members {
				if _, err := m.Device.Faults.InjectJSON([]byte(js)); err != nil {
					injectErr = err
					cancel()
				}
			}
		}
	}
	// the load measures until it has seen the last step's faults
	r, err := Run(ctx, Config{Air: link, Serials: serials, Subscribe: []string{"/Meas/IMU6/52", "/Meas/ECG/125"},
		Duration: 24 * time.Hour, Interval: 20 * time.Millisecond, Progress: progress, Timeout: time.Minute,
		Faults: &FaultOptions{StallAfter: 300 * time.Millisecond, Truth: truth, PhoneOff: phoneOff}})
	if err != nil {
		t.Fatal(err)
	}
	if injectErr != nil {
		t.Fatal(injectErr)
	}
	f := r.Faults
	if f == nil {
		t.Fatal("no fault report")
	}
	var records strings.Builder
	for _, s := range serials {
		recs, err := truth(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			fmt.Fprintf(&records, "\n  %s", rec.AppendJSON(nil))
		}
	}
	if step < len(steps) {
		t.Fatalf("the test's deadline came before the load saw the faults of step %d %v: it saw %+v; the devices' ground truth:%s", step, steps[step].faults, f, records.String())
	}
	// each device: a reconnect after the phoneoff, after the drop, and
	// after the reset of the exhausted pool; a stall of its ECG, which it
	// subscribes to again and gets 429 for, and one of its IMU6
	if f.PhoneOffs != 1 || f.Reconnects != 6 || f.Stalls != 4 || f.TooMany != 2 || f.Resets != 2 || f.ReconnectMax <= 0 {
		t.Errorf("the load saw %+v; the devices' ground truth:%s", f, records.String())
	}
	if f.Injected["drop"] != 2 || f.Injected["stall"] != 4 || f.Injected["busy"] != 2 || f.Injected["phoneoff"] != 1 || len(f.Injected) != 4 || f.TruthErr != "" {
		t.Errorf("injected %v (%s)", f.Injected, f.TruthErr)
	}
	for _, s := range serials {
		recs, _ := truth(s)
		var got []string
		for _, rec := range recs {
			got = append(got, rec.Fault.Kind.String()+" "+rec.EndedBy)
		}
		want := []string{"drop advertising", "busy reset", "stall resubscribed", "stall resubscribed"}
		if !slices.Equal(got, want) {
			t.Errorf("device %s's faults ended %q, want %q", s, got, want)
		}
	}
	var b strings.Builder
	Print(&b, r)
	if !strings.Contains(b.String(), "faults seen     stalls 4  reconnects 6") || !strings.Contains(b.String(), "faults injected stall 4  drop 2  busy 2  phoneoff 1") {
		t.Errorf("summary:\n%s", b.String())
	}
}

// TestStallSilence counts a stream's silence as the keeper's looks find
// it: a second in which the load's process did not run is not taken for a
// second of the device's silence, and a stream the keeper looked for and
// did not hear for StallAfter is silent. Each stream's silence is its
// own: it goes on while another stream of the device is subscribed to
// again, and after, since that subscription starts only the other's
// silence anew.
func TestStallSilence(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type look struct {
		at            int    // ms, of the look
		heard         [2]int // ms, when each stream was heard last; 0 for not since the look before
		resubscribing bool   // the IMU6 is being subscribed to again, until 50 ms after the look
		want          []int  // the silent streams
	}
	for _, tt := range []struct {
		name  string
		looks []look
	}{
		{"a pause of the process", []look{
			{100, [2]int{80, 80}, false, nil},
			{200, [2]int{180, 190}, false, nil},
			{300, [2]int{280, 290}, false, nil},
			// the process is stopped for a second: the notifications of
			// that time wait to be read; the ECG's do not come
			{1300, [2]int{0, 0}, false, nil},
			{1400, [2]int{1350, 0}, false, nil},
			{1500, [2]int{1510, 0}, false, []int{1}}, // the IMU6 heard as the look reads
		}},
		{"another stream subscribed to again", []look{
			{100, [2]int{80, 80}, false, nil},
			{200, [2]int{180, 180}, false, nil}, // the ECG's last
			{300, [2]int{290, 0}, false, nil},
			{400, [2]int{0, 0}, true, nil},
			{500, [2]int{490, 0}, false, nil},
			{600, [2]int{590, 0}, false, []int{1}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &probe{subscribed: []time.Time{t0, t0}, tally: make([]tally, 2)}
			k := newKeeper(Config{Subscribe: []string{"/Meas/IMU6/52", "/Meas/ECG/125"}, Faults: &FaultOptions{StallAfter: 300 * time.Millisecond}}, nil, []*probe{p})
			k.looked = t0
			for _, l := range tt.looks {
				for i, ms := range l.heard {
					if ms > 0 {
						p.tally[i].last = at(ms)
					}
				}
				k.busy[p] = l.resubscribing
				if l.resubscribing {
					k.look(context.Background(), p, at(l.at))
					p.subscribed[0] = at(l.at + 50)
				} else if got := k.silent(p, at(l.at)); !slices.Equal(got, l.want) {
					t.Errorf("look at %d ms: silent %v, want %v (silence %v)", l.at, got, l.want, k.quiet[p])
				}
				k.looked = at(l.at)
			}
		})
	}
}
