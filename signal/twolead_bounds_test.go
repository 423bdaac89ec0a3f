package signal

import (
	"math"
	"slices"
	"testing"
)

// TestTwoLeadDetectorBounds checks the two-lead rules at their bounds and
// in the cases the detector's tests on signals do not reach, on beats
// handed straight to the merge (as TestTwoLeadDetectorMerge does) at
// 256 Hz: 200 ms is 51 samples, 1.5 s 384. Each case says which edge of
// which rule it holds. Most follow a rhythm of 12 beats every 200 samples
// that both leads find (rhythm): the last beat given at 2400, the average
// interval 200, neither lead missing a beat.
func TestTwoLeadDetectorBounds(t *testing.T) {
	const fs = 256
	shares := func(s0, s1 float64) [2]float64 { return [2]float64{s0, s1} }
	for _, tt := range []struct {
		name   string
		fresh  bool // without the rhythm before
		b      []handed
		want   []int64 // the beats given after the rhythm's
		reason string
	}{
		{name: "the other lead's beat halfway between two of this lead's",
			// the second lead's 2580 is 20 samples from the first lead's
			// 2560 and from its 2600: paired with the earlier, 2560
			// given, 2600 dropped 40 samples after it (paired with the
			// later, 2560 would be a lone beat early in the rhythm,
			// dropped, and 2600 given)
			b:      []handed{{0, 2560, 2620, clean}, {0, 2600, 2660, clean}, {1, 2580, 2670, clean}},
			want:   []int64{2560},
			reason: "the other lead's beat is this one's unless this lead's next is nearer to it, not when it is as near",
		},
		{name: "a pair decided while this lead's next beat waits",
			// the first lead's detector has given 2600 and 2800 when the
			// second lead's 2603 comes: 2603 is 3 samples from 2600 and
			// 197 from 2800
			b:      []handed{{0, 2600, 2660, clean}, {0, 2800, 2860, clean}, {1, 2603, 2870, clean}},
			want:   []int64{2600, 2800},
			reason: "the distances compared are from the other lead's beat to each of this lead's two",
		},
		{name: "the first lead's noise share exactly a twentieth",
			b:      []handed{{0, 2600, 2660, shares(1.0/20, 0.01)}, {1, 2610, 2670, shares(1.0/20, 0.01)}},
			want:   []int64{2600},
			reason: "a pair is placed at the second lead's R peak when the first lead's share is above a twentieth, not at it",
		},
		{name: "the first lead's noise share just above a twentieth",
			b:      []handed{{0, 2600, 2660, shares(0.051, 0.01)}, {1, 2610, 2670, shares(0.051, 0.01)}},
			want:   []int64{2610},
			reason: "the other side of the twentieth: the second lead's R peak",
		},
		{name: "both leads as noisy",
			b:      []handed{{0, 2600, 2660, shares(0.2, 0.2)}, {1, 2610, 2670, shares(0.2, 0.2)}},
			want:   []int64{2600},
			reason: "a pair is placed at the second lead's R peak only when the second lead is cleaner than the first, not as noisy",
		},
		{name: "rule 3 at a noise share of exactly a tenth",
			// the second lead misses 2600 and 2800 (rule 4 gives them);
			// the first lead's lone 3100 then comes 100 samples after
			// the last beat, which rule 4 does not keep
			b: []handed{{0, 2600, 2660, clean}, {0, 2800, 2860, clean}, {0, 3000, 3060, clean}, {1, 3003, 3070, clean},
				{0, 3100, 3160, shares(0.1, 0.01)}, {0, 3200, 3260, clean}, {1, 3203, 3270, clean}},
			want:   []int64{2600, 2800, 3000, 3200},
			reason: "rule 3 keeps a beat of a lead whose share is under a tenth, not at it",
		},
		{name: "rule 3 with this lead having missed one beat",
			// the first lead misses 2603 (the second's, given by rule 4),
			// the second misses 2800 and 3000 (the first's, given by rule
			// 4); the first lead's lone 3300 then comes 100 samples after
			// the last beat, which rule 4 does not keep
			b: []handed{{1, 2603, 2670, clean}, {0, 2800, 2860, clean}, {0, 3000, 3060, clean},
				{0, 3200, 3260, clean}, {1, 3203, 3270, clean},
				{0, 3300, 3360, clean}, {0, 3400, 3460, clean}, {1, 3403, 3470, clean}},
			want:   []int64{2603, 2800, 3000, 3200, 3300, 3400},
			reason: "rule 3 keeps a beat of a lead that missed at most one of the last beats: one is allowed",
		},
		{name: "rule 4 at its bound",
			// a lone beat of a share of an eighth: the interval without
			// it, 2750-2400, is 1.75 times the average, 1+6/8
			b:      []handed{{0, 2500, 2560, shares(0.125, 0.01)}, {0, 2750, 2810, clean}, {1, 2750, 2820, clean}},
			want:   []int64{2750},
			reason: "rule 4 keeps a beat when the interval without it is longer than the bound, not as long",
		},
		{name: "rule 4 a sample past its bound",
			b:      []handed{{0, 2500, 2560, shares(0.125, 0.01)}, {0, 2751, 2810, clean}, {1, 2751, 2820, clean}},
			want:   []int64{2500, 2751},
			reason: "the other side of the bound: kept",
		},
		{name: "a pair exactly 200 ms after the last beat",
			b:      []handed{{0, 2451, 2510, clean}, {1, 2454, 2520, clean}},
			want:   []int64{2451},
			reason: "rule 5 drops a beat less than 200 ms after the last, not one 200 ms after it",
		},
		{name: "a pair a sample under 200 ms after the last beat",
			b:      []handed{{0, 2450, 2510, clean}, {1, 2453, 2520, clean}},
			want:   nil,
			reason: "rule 5 on a pair: dropped",
		},
		{name: "the second beat of the stream on one lead only",
			// the first beat given, at 1000, has no interval before it:
			// the second, on the first lead only, comes before any
			// interval is known (rule 2), and is kept, however long
			// the stream ran before the first
			fresh:  true,
			b:      []handed{{0, 1000, 1060, clean}, {1, 1003, 1070, clean}, {0, 1200, 1260, clean}, {0, 1400, 1460, clean}, {1, 1403, 1470, clean}},
			want:   []int64{1000, 1200, 1400},
			reason: "the first beat given starts the intervals: none is counted from the stream's start",
		},
		{name: "a beat at the stream's first sample",
			fresh:  true,
			b:      []handed{{0, 0, 60, clean}, {1, 2, 70, clean}, {0, 30, 100, clean}, {1, 32, 110, clean}},
			want:   []int64{0},
			reason: "a beat given at sample 0 is a beat given: rule 5 counts from it",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var bs []handed
			var want []int64
			if !tt.fresh {
				bs, want = rhythm(), rhythmBeats()
			}
			want = append(want, tt.want...)
			if given, _ := merge(fs, append(bs, tt.b...)); !slices.Equal(given, want) {
				t.Errorf("beats given at %v; want %v (%s)", given, want, tt.reason)
			}
		})
	}
}

// TestNoiseShareLearning checks that a detector with no signal level yet
// has an infinite noise share, not 0/0: a NaN share would compare false
// in every rule, as neither noisy nor clean.
func TestNoiseShareLearning(t *testing.T) {
	d := NewQRSDetector(256)
	if s, n := d.Levels(); s != 0 || n != 0 {
		t.Fatalf("a new detector's levels are %g and %g; the test needs 0 and 0", s, n)
	}
	if got := noiseShare(d); !math.IsInf(got, 1) {
		t.Errorf("noise share %g; want +Inf", got)
	}
}
