package signal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// flatLine returns n samples of a flat line at fs: the input held at hold
// plus ripple, where ripple is "" for none, "1e-9" for a uniform ripple of
// ±1e-9 mV (the size of a rounding error), or "lsb" for the quantisation
// noise of a real ADC at 200 units per mV (MIT-BIH's): the held value
// rounded to a unit, then −1, 0 or +1 unit at random in each sample.
func flatLine(n int, hold float64, ripple string, rng *rand.Rand) []float64 {
	const lsb = 1.0 / 200
	x := make([]float64, n)
	for i := range x {
		switch ripple {
		case "":
			x[i] = hold
		case "1e-9":
			x[i] = hold + 1e-9*(2*rng.Float64()-1)
		case "lsb":
			x[i] = (math.Round(hold/lsb) + float64(rng.IntN(3)-1)) * lsb
		}
	}
	return x
}

// TestQRSDetectorFlatLine checks that no beat comes out of a flat line, at
// every rate the corpus is judged at: exact zeros, a constant offset, a
// ripple of rounding errors and the ±1 unit noise of a quantised flat
// line, from the start of the stream and after a minute of beats (whose
// levels, template and rhythm the detector has learnt), for a minute.
// Every beat before the flat line is found.
func TestQRSDetectorFlatLine(t *testing.T) {
	tests := []struct {
		name   string
		beats  bool    // a minute of beats before the flat line
		hold   float64 // the flat line's level, mV
		ripple string  // flatLine's ripple
	}{
		{"zeros from the start", false, 0, ""},
		{"an offset from the start", false, 1.5, ""},
		{"a ripple of 1e-9 from the start", false, 0, "1e-9"},
		{"one unit of a quantised ECG from the start", false, 0.3, "lsb"},
		{"zeros after beats", true, 0, ""},
		{"an offset after beats", true, 1.5, ""},
		{"a ripple of 1e-9 after beats", true, 0, "1e-9"},
		{"a ripple of 1e-9 on an offset after beats", true, -0.8, "1e-9"},
		{"one unit of a quantised ECG after beats", true, 0.3, "lsb"},
	}
	for _, fs := range []float64{125, 256, 512} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s at %g Hz", tt.name, fs), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, uint64(fs)))
				var beats []synthBeat
				var x []float64
				if tt.beats {
					for at := 1.0; at < 59.2; at += 0.8 {
						beats = append(beats, synthBeat{at, 1, 0.01})
					}
					x = synthECG(beats, 60, fs)
					// the beats ride on the offset the flat line holds
					for i := range x {
						x[i] += tt.hold
					}
				}
				flatFrom := time.Duration(len(x)) * time.Second / time.Duration(fs)
				x = append(x, flatLine(int(60*fs), tt.hold, tt.ripple, rng)...)
				got := runDetector(x, fs, true)
				// a beat more than 150 ms after the last R peak matches no
				// beat: it comes from the flat line (the last complex ends
				// 600 ms after its R peak), and so does every beat of a
				// flat line from the start
				var found, flat []time.Duration
				for _, b := range got {
					switch {
					case len(beats) == 0 || b > beatTimes(beats, 0)[len(beats)-1]+150*time.Millisecond:
						flat = append(flat, b)
					case b < 3*time.Second-150*time.Millisecond: // learning the beats: not scored
					default:
						found = append(found, b)
					}
				}
				if len(flat) > 0 {
					t.Errorf("%d beats on the flat line (from %v): %v; want none", len(flat), flatFrom, flat)
				}
				want := beatTimes(beats, 3)
				if sc := ScoreBeats(want, found, 150*time.Millisecond); sc.FN > 0 || sc.FP > 0 {
					t.Errorf("before the flat line: missed %v, false %v of %d beats", sc.Missed, sc.False, len(want))
				}
			})
		}
	}
}

// TestQRSDetectorSettlingThenFlat checks a stream that starts as a real
// sensor's may: the front end settling from saturation (a step of 30 mV
// that decays in 150 ms), which the detector learns its levels from, then
// a flat line while the electrodes are off, then the ECG. No beat came of
// those levels: the detector learns them again from the ECG's return, and
// finds every beat 2 s after it, not 5 s of a signal and 2 s of learning
// after it.
func TestQRSDetectorSettlingThenFlat(t *testing.T) {
	for _, fs := range []float64{125, 256, 512} {
		t.Run(fmt.Sprintf("%g Hz", fs), func(t *testing.T) {
			var beats []synthBeat
			for at := 8.0; at < 29.5; at += 0.8 {
				beats = append(beats, synthBeat{at, 1, 0.01})
			}
			x := synthECG(beats, 30, fs)
			for i := range x {
				if ts := float64(i)/fs - 0.1; ts >= 0 {
					x[i] -= 30 * math.Exp(-ts/0.15)
				}
			}
			got := runDetector(x, fs, true)
			// the ECG returns with the first beat, at 8 s: its levels are
			// learnt by 10 s
			want := beatTimes(beats, 10)
			var found []time.Duration
			for _, b := range got {
				if b >= 10*time.Second-150*time.Millisecond {
					found = append(found, b)
				}
			}
			if sc := ScoreBeats(want, found, 150*time.Millisecond); sc.FN > 0 || sc.FP > 0 {
				t.Errorf("from 10 s: missed %v, false %v of %d beats", sc.Missed, sc.False, len(want))
			}
		})
	}
}
