package load

import (
	"context"
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
// against two devices of a fleet on a virtual clock twenty times faster
// than real time, whose plan drops their links, stalls their ECG and exhausts
// their request pools; the load turns its own Bluetooth off once. It sees
// each fault, recovers from it, and reports it next to the devices' ground
// truth.
func TestAirUnderFaults(t *testing.T) {
	t.Parallel()
	plan, err := fault.ParsePlan([]byte(`
- at: 40s
  fault: drop
  delay: 1s
- at: 50s
  fault: stall
  path: /Meas/ECG
- at: 60s
  fault: busy
- at: 61s
  fault: stall
  path: /Meas/IMU6
`))
	if err != nil {
		t.Fatal(err)
	}
	addr := airtest.FreeLocal(t)
	devices := airtest.Local(t, addr, air.Options{})
	dir := t.TempDir()
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: dir, Seed: 7, Faults: plan},
		senseboard.FleetOptions{Devices: 2, PTY: "none", Listen: "none", Air: devices, Speed: 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	link := airtest.Local(t, addr, air.Options{Name: Name})
	phoneOff, err := fault.ParsePlan([]byte("- at: 1s\n  fault: phoneoff\n  for: 300ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	truth := func(serial string) ([]fault.Record, error) {
		f, err := os.Open(filepath.Join(dir, serial, senseboard.FaultLog))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return fault.ReadJSONL(f)
	}
	// 7 s of the load is 140 s of the devices': the last fault, at 61 s,
	// leaves room for a busy machine's late reconnects and resubscriptions
	r, err := Run(context.Background(), Config{Air: link, Serials: []string{"000123", "000124"}, Subscribe: []string{"/Meas/IMU6/52", "/Meas/ECG/125"},
		Duration: 7 * time.Second, Interval: time.Hour, Timeout: time.Minute,
		Faults: &FaultOptions{StallAfter: 300 * time.Millisecond, Truth: truth, PhoneOff: phoneOff}})
	if err != nil && !strings.Contains(err.Error(), "delivery below threshold") {
		t.Fatal(err)
	}
	f := r.Faults
	if f == nil {
		t.Fatal("no fault report")
	}
	// each device: a reconnect after the phoneoff, after the drop, and
	// after the reset of the exhausted pool; a stall of its ECG, and one of
	// its IMU6, which it subscribes to again and gets 429 for
	if f.PhoneOffs != 1 || f.Reconnects < 6 || f.Stalls < 4 || f.TooMany < 2 || f.Resets < 2 || f.ReconnectMax <= 0 {
		t.Errorf("the load saw %+v", f)
	}
	if f.Injected["drop"] != 2 || f.Injected["stall"] != 4 || f.Injected["busy"] != 2 || f.Injected["phoneoff"] != 1 || f.TruthErr != "" {
		t.Errorf("injected %v (%s)", f.Injected, f.TruthErr)
	}
	var b strings.Builder
	Print(&b, r)
	if !strings.Contains(b.String(), "faults seen     stalls") || !strings.Contains(b.String(), "faults injected stall 4  drop 2  busy 2  phoneoff 1") {
		t.Errorf("summary:\n%s", b.String())
	}
}

// TestStallSilence counts a stream's silence as the keeper's looks find
// it: a second in which the load's process did not run is not taken for a
// second of the device's silence, and a stream the keeper looked for and
// did not hear for StallAfter is silent.
func TestStallSilence(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := &probe{subscribed: t0, tally: make([]tally, 2)}
	k := newKeeper(Config{Subscribe: []string{"/Meas/IMU6/52", "/Meas/ECG/125"}, Faults: &FaultOptions{StallAfter: 300 * time.Millisecond}}, nil, []*probe{p})
	k.looked = t0
	for _, l := range []struct {
		at    int    // ms, of the look
		heard [2]int // ms, when each stream was heard last; 0 for not since the look before
		want  []int  // the silent streams
	}{
		{100, [2]int{80, 80}, nil},
		{200, [2]int{180, 190}, nil},
		{300, [2]int{280, 290}, nil},
		// the process is stopped for a second: the notifications of that
		// time wait to be read; the ECG's do not come
		{1300, [2]int{0, 0}, nil},
		{1400, [2]int{1350, 0}, nil},
		{1500, [2]int{1510, 0}, []int{1}}, // the IMU6 heard as the look reads
	} {
		for i, ms := range l.heard {
			if ms > 0 {
				p.tally[i].last = at(ms)
			}
		}
		if got := k.silent(p, at(l.at)); !slices.Equal(got, l.want) {
			t.Errorf("look at %d ms: silent %v, want %v (silence %v)", l.at, got, l.want, k.quiet[p])
		}
		k.looked = at(l.at)
	}
}
