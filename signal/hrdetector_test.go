package signal

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestHRDetector checks that the heart rate's detector is the front end's
// filters and the QRS detector on one lead, the second lead's samples
// ignored, and the filters on each lead and the two-lead detector on two:
// the beats of each, found sample by sample, are those of the parts put
// together by hand.
func TestHRDetector(t *testing.T) {
	const fs = 256
	var beats, late []synthBeat
	for i := range 60 {
		at := 1 + float64(i)*0.8
		beats = append(beats, synthBeat{at, 1, 0.01})
		late = append(late, synthBeat{at + 0.012, 0.6, 0.01})
	}
	x0, x1 := synthECG(beats, 49, fs), synthECG(late, 49, fs)
	noiseBurst(x0, beats, fs, 0.8, true)

	run := func(d *HRDetector) []time.Duration {
		var out []time.Duration
		for k := range x0 {
			d.Feed(x0[k], x1[k])
			for r, ok := d.Pop(); ok; r, ok = d.Pop() {
				out = append(out, time.Duration(float64(r)/fs*float64(time.Second)))
			}
		}
		d.Flush()
		for r, ok := d.Pop(); ok; r, ok = d.Pop() {
			out = append(out, time.Duration(float64(r)/fs*float64(time.Second)))
		}
		return out
	}

	for _, leads := range []int{0, 3} {
		if got := NewHRDetector(fs, leads).Leads(); got != 1 {
			t.Errorf("NewHRDetector(%d leads).Leads() = %d; want 1", leads, got)
		}
	}
	one := NewHRDetector(fs, 1)
	if one.Leads() != 1 {
		t.Errorf("Leads() = %d; want 1", one.Leads())
	}
	if got, want := run(one), runDetector(x0, fs, true); !slices.Equal(got, want) {
		t.Errorf("one lead: beats %v; want the front end and QRSDetector's %v", got, want)
	}

	two := NewHRDetector(fs, 2)
	if two.Leads() != 2 {
		t.Errorf("Leads() = %d; want 2", two.Leads())
	}
	got := run(two)
	if want := runTwoLeads(x0, x1, fs); !slices.Equal(got, want) {
		t.Errorf("two leads: beats %v; want the front ends and TwoLeadDetector's %v", got, want)
	}
	// the test means something: the noisy first lead alone gives other beats
	if slices.Equal(got, runDetector(x0, fs, true)) {
		t.Error("two leads give the noisy first lead's beats")
	}
}

func TestHRDetectorAllocs(t *testing.T) {
	const fs = 256
	var beats []synthBeat
	for i := range 60 {
		beats = append(beats, synthBeat{1 + float64(i)*0.8, 1, 0.01})
	}
	x := synthECG(beats, 49, fs)
	noiseBurst(x, beats, fs, 0.5, true)
	for _, leads := range []int{1, 2} {
		d := NewHRDetector(fs, leads)
		found := 0
		// over the whole record, not per sample: AllocsPerRun rounds down,
		// so an allocation per beat would count as none per sample.
		// AllocsPerRun runs the record once more before it counts: the
		// stream goes on, the detector's state warm
		if n := testing.AllocsPerRun(1, func() {
			for i := range x {
				d.Feed(x[i], -0.5*x[i])
				for _, ok := d.Pop(); ok; _, ok = d.Pop() {
					found++
				}
			}
		}); n != 0 || found < 100 {
			t.Errorf("%d leads: %g allocations in a record of %d samples, %d beats in two runs; want 0, and at least 100 beats", leads, n, len(x), found)
		}
	}
}

func ExampleHRDetector() {
	const fs = 256
	// two leads of a beat a second, the second smaller and inverted, in mV
	// as the electrodes give them, on a baseline of 0.3 mV
	x0, x1 := make([]float64, 10*fs), make([]float64, 10*fs)
	for k := range x0 {
		x0[k], x1[k] = 0.3, 0.3
	}
	for k := fs / 2; k < len(x0); k += fs {
		x0[k], x0[k+1] = 1.3, 0.8
		x1[k], x1[k+1] = -0.2, 0.05
	}
	d := NewHRDetector(fs, 2)
	n := 0
	for k := range x0 {
		d.Feed(x0[k], x1[k])
		for _, ok := d.Pop(); ok; _, ok = d.Pop() {
			n++
		}
	}
	d.Flush()
	for _, ok := d.Pop(); ok; _, ok = d.Pop() {
		n++
	}
	fmt.Println(n, "beats")
	// Output: 8 beats
}
