package timesvc_test

import (
	"math"
	"senseboard/content"
	"testing"
	"time"

	"senseboard"
	"senseboard/provider/timesvc"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func TestTime(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "clockDrift: off\n")}) // a perfect oscillator

	d.Advance(2500 * time.Millisecond)
	// never set: 1970-01-01 plus the time since reset, before 2015
	if v := d.Expect(200, resource.Get, "/Time").Content.(int64); v != 2_500_000 {
		t.Errorf("unset time %d", v)
	}
	det := d.Expect(200, resource.Get, "/Time/Detailed").Content.(*content.DetailedTime)
	if *det != (content.DetailedTime{UTCTime: 2_500_000, RelativeTime: 2500, TickRate: 1024, Accuracy: 20}) {
		t.Errorf("detailed %+v", det)
	}
	ticks := d.Subscribe("/Time")
	detailed := d.Subscribe("/Time/Detailed")
	if got := detailed.Contents(); len(got) != 1 || got[0].(*timesvc.TimeSync).RelativeTime != 2500 {
		t.Fatalf("detailed at subscription %+v", got)
	}
	const set = 1_700_000_000_000_000
	d.Advance(500 * time.Millisecond)
	d.Expect(200, resource.Put, "/Time", resource.Int64(set))
	d.Expect(400, resource.Put, "/Time", resource.Int64(-1))
	d.Expect(400, resource.Put, "/Time", resource.String("now"))
	if got := detailed.Contents(); len(got) != 1 || *got[0].(*timesvc.TimeSync) != (timesvc.TimeSync{UTCTime: set, RelativeTime: 3000}) {
		t.Fatalf("detailed after PUT %+v", got)
	}
	d.Advance(10 * time.Second)
	got := ticks.Contents()
	if len(got) != 10 {
		t.Fatalf("%d ticks in 10.5 s", len(got))
	}
	if got[0].(int64) != set+500_000 || got[9].(int64) != set+9_500_000 { // ticks at 3.5 s, 4.5 s, ...
		t.Errorf("ticks %v ... %v", got[0], got[9])
	}
	// lost on reset
	d.Device.Reset()
	if v := d.Expect(200, resource.Get, "/Time").Content.(int64); v != 0 {
		t.Errorf("time after reset %d", v)
	}
}

// TestClockDrift checks the device oscillator's drift: each device's
// relative time and UTC time run fast or slow by its own seeded amount
// within the 20 ppm accuracy /Time/Detailed reports, the same seed drifts
// the same way, and the scenario sets or turns off the drift.
func TestClockDrift(t *testing.T) {
	const hour = 3_600_000 // ms
	read := func(d *sbt.Rig) (rel uint32, utc int64) {
		det := d.Expect(200, resource.Get, "/Time/Detailed").Content.(*content.DetailedTime)
		return det.RelativeTime, det.UTCTime
	}
	const set = 1_700_000_000_000_000
	tests := []struct {
		name     string
		seed     int64
		scenario string
		ppm      float64 // 0: any seeded value within 20 ppm
	}{
		{"seed 1", 1, "", 0},
		{"seed 2", 2, "", 0},
		{"seed 3", 3, "", 0},
		{"off", 1, "clockDrift: off\n", 0},
		{"set", 1, "clockDrift: -15ppm\n", -15},
	}
	drifts := map[float64]bool{}
	for _, tt := range tests {
		d := sbt.New(t, senseboard.Config{Seed: tt.seed, Scenario: sbt.Scenario(t, tt.scenario)})
		d.Expect(200, resource.Put, "/Time", resource.Int64(set))
		d.Advance(time.Hour)
		rel, utc := read(d)
		ppm := d.Device.ClockDrift()
		switch {
		case tt.scenario == "clockDrift: off\n" && ppm != 0,
			tt.ppm != 0 && ppm != tt.ppm,
			math.Abs(ppm) > timesvc.Accuracy:
			t.Errorf("%s: drift %g ppm", tt.name, ppm)
		}
		if tt.scenario == "" {
			drifts[ppm] = true
			if ppm == 0 {
				t.Errorf("%s: no drift by default", tt.name)
			}
		}
		wantRel := float64(hour) * (1 + ppm*1e-6)
		if math.Abs(float64(rel)-wantRel) > 1 {
			t.Errorf("%s: relative time %d ms after an hour, want %.0f (%+.2f ppm)", tt.name, rel, wantRel, ppm)
		}
		if wantUTC := float64(set) + 3.6e9*(1+ppm*1e-6); math.Abs(float64(utc)-wantUTC) > 1 {
			t.Errorf("%s: UTC %d, want %.0f", tt.name, utc, wantUTC)
		}
	}
	if len(drifts) != 3 {
		t.Errorf("three seeds drift by %v; want three different amounts", drifts)
	}
	// the same seed, the same drift
	a, b := sbt.New(t, senseboard.Config{Seed: 7}), sbt.New(t, senseboard.Config{Seed: 7})
	if a.Device.ClockDrift() != b.Device.ClockDrift() {
		t.Errorf("seed 7 drifts %g and %g ppm", a.Device.ClockDrift(), b.Device.ClockDrift())
	}
}
