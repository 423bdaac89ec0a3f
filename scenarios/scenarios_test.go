// Package scenarios_test plays the example scenarios of this directory.
package scenarios_test

import (
	"os"
	"path/filepath"
	"senseboard/content"
	"testing"
	"time"

	"senseboard"
	"senseboard/provider/system"
	"senseboard/senseboardtest"
	"senseboard/world"
)

// TestShippedScenarios plays each scenario of this directory for a while: it
// loads, the device runs it, and the events it promises are detected.
func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("scenarios: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := world.LoadScenario(f)
			if err != nil {
				t.Fatal(err)
			}
			text, _ := os.ReadFile(f)
			d := senseboardtest.New(t, senseboard.Config{Scenario: senseboardtest.Scenario(t, string(text))})
			d.Subscribe("/Meas/Acc/13")
			hr := d.SubscribeAll("/Meas/HR")
			dbl, fall := d.SubscribeAll("/System/States/3"), d.SubscribeAll("/System/States/5")
			span := min(sc.Length(), 3*time.Minute)
			d.Advance(span)
			beats := 0
			for _, c := range hr.Contents() {
				beats += len(c.(*content.HRData).RRData)
			}
			if sc.Start.Gear && beats < int(span.Minutes()*30) {
				t.Errorf("%d beats in %v", beats, span)
			}
			// every double tap and free fall within the span is detected
			var wantDbl, wantFall int
			for _, e := range sc.Events {
				if e.At < span-5*time.Second {
					switch e.Kind {
					case world.DoubleTap:
						wantDbl++
					case world.FreeFall:
						wantFall++
					}
				}
			}
			count := func(s *senseboardtest.Sub) int {
				n := 0
				for _, c := range s.Contents() {
					if c.(*system.StateChange).NewState == 1 {
						n++
					}
				}
				return n
			}
			if got := count(dbl); got != wantDbl {
				t.Errorf("%d double taps detected, want %d", got, wantDbl)
			}
			if got := count(fall); got != wantFall {
				t.Errorf("%d free falls detected, want %d", got, wantFall)
			}
		})
	}
}
