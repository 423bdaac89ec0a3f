package signal

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// runTwoLeads feeds two leads through the device's front end into a
// TwoLeadDetector, flushing it at the end, and returns the beat times found.
func runTwoLeads(x0, x1 []float64, fs float64) []time.Duration {
	var front [2]Cascade
	for i := range front {
		hp, _ := Butterworth(HighPass, 2, 0.5, fs)
		lp, _ := Butterworth(LowPass, 2, 40, fs)
		front[i] = append(hp, lp...)
	}
	d := NewTwoLeadDetector(fs)
	var out []time.Duration
	pop := func() {
		for k, ok := d.Pop(); ok; k, ok = d.Pop() {
			out = append(out, time.Duration(float64(k)/fs*float64(time.Second)))
		}
	}
	for k := range x0 {
		d.Feed(front[0].Step(x0[k]), front[1].Step(x1[k]))
		pop()
	}
	d.Flush()
	pop()
	return out
}

// TestTwoLeadDetector checks the two-lead rules on a regular rhythm whose
// second lead is smaller (0.6 times the first) and 12 ms late: the same
// lead twice gives the single-lead detector's beats; noise and artefacts on
// one lead, which its own detector takes for beats, are dropped when the
// other lead is clean; premature beats that one lead misses, with no pause
// after them, are kept from the other, both leads clean (rule 4: the
// rhythm), and those a noisy lead misses from the other, noisy too (rule 3:
// the noisy lead has been missing beats); a clean lead that misses a third
// of the beats does not outvote a noisier one that finds them all; and a
// lead taken off for 10 s (its amplifier's noise instead) loses no beat of
// the other. The rule tests fail without their rule (the third with the
// rules before the agreement measure: rule 4 then was "the cleaner lead
// is believed", and the rhythm rule fixed at 1.5 times the average).
func TestTwoLeadDetector(t *testing.T) {
	const fs = 256
	var beats, late []synthBeat
	for i := range 60 {
		at := 1 + float64(i)*0.8
		beats = append(beats, synthBeat{at, 1, 0.01})
		late = append(late, synthBeat{at + 0.012, 0.6, 0.01})
	}
	first := synthECG(beats, 49, fs)
	second := synthECG(late, 49, fs)
	noisy := slices.Clone(second)
	noiseBurst(noisy, late, fs, 0.5, true)
	// off takes a lead off from 20.7 s to 30.3 s, between beats: the
	// amplifier's noise of 10 µV instead of the ECG
	off := func(x []float64) []float64 {
		x = slices.Clone(x)
		rng := rand.New(rand.NewPCG(3, 4))
		from, to := 20.7*fs, 30.3*fs
		for i := int(from); i < int(to); i++ {
			x[i] = 0.01 * rng.NormFloat64()
		}
		return x
	}
	ref := beatTimes(beats, 3)
	score := func(found []time.Duration) Scored {
		return ScoreBeats(ref, from3s(found), 150*time.Millisecond)
	}

	t.Run("the same lead twice", func(t *testing.T) {
		want := runDetector(first, fs, true)
		if got := runTwoLeads(first, first, fs); !slices.Equal(got, want) {
			t.Errorf("beats %v; want the single-lead detector's %v", got, want)
		}
	})
	t.Run("noise on the second lead", func(t *testing.T) {
		alone := score(runDetector(noisy, fs, true))
		if alone.FP < 5 {
			t.Fatalf("the noisy lead alone gives %d false beats; the test needs at least 5", alone.FP)
		}
		s := score(runTwoLeads(first, noisy, fs))
		if s.FN > 0 || s.FP > 0 || s.PP() <= alone.PP() {
			t.Errorf("two leads: %d missed, %d false (+P %.2f%%); the noisy lead alone %d missed, %d false (+P %.2f%%); want none, +P above its",
				s.FN, s.FP, s.PP(), alone.FN, alone.FP, alone.PP())
		}
	})
	t.Run("noise on the first lead", func(t *testing.T) {
		x0 := slices.Clone(first)
		noiseBurst(x0, beats, fs, 0.8, true)
		alone := score(runDetector(x0, fs, true))
		if alone.FP < 5 {
			t.Fatalf("the noisy lead alone gives %d false beats; the test needs at least 5", alone.FP)
		}
		s := score(runTwoLeads(x0, second, fs))
		if s.FN > 0 || s.FP > 0 {
			t.Errorf("two leads: %d missed, %d false; the noisy lead alone %d missed, %d false; want none", s.FN, s.FP, alone.FN, alone.FP)
		}
	})
	t.Run("premature beats on the first lead only", func(t *testing.T) {
		// from 10 s, every fifth beat a premature one 450 ms after the beat before,
		// then the next 550 ms after it (the rhythm reset, no pause): on
		// the first lead only, as a beat of another axis on the second
		b0, b1 := withPremature(5, 0.45, 0.55, 0)
		// both leads as clean: the rhythm decides (rule 4)
		x0, x1 := synthECG(b0, 49, fs), synthECG(b1, 49, fs)
		ref := beatTimes(b0, 3)
		alone := ScoreBeats(ref, from3s(runDetector(x0, fs, true)), 150*time.Millisecond)
		if alone.FN > 0 {
			t.Fatalf("the first lead alone misses %v; the test needs it to find them", alone.Missed)
		}
		s := ScoreBeats(ref, from3s(runTwoLeads(x0, x1, fs)), 150*time.Millisecond)
		if s.FN > 0 || s.FP > 0 {
			t.Errorf("missed %v, false %v; want none", s.Missed, s.False)
		}
	})
	t.Run("beats the noisy second lead misses", func(t *testing.T) {
		// the first lead with white noise of 0.15 mV, not clean by its
		// detector's levels but every beat found; the second with the
		// noise burst, and from 20 to 40 s every fourth QRS a quarter of
		// the others': kept from the first lead, the second lead having
		// missed beats of late (rule 3)
		var b1 []synthBeat
		for i, b := range late {
			if i%4 == 3 && b.at > 20 && b.at < 40 {
				b.amp /= 4
			}
			b1 = append(b1, b)
		}
		x0, x1 := slices.Clone(first), synthECG(b1, 49, fs)
		rng := rand.New(rand.NewPCG(7, 8))
		for i := range x0 {
			x0[i] += 0.15 * rng.NormFloat64()
		}
		noiseBurst(x1, b1, fs, 0.3, true)
		if s := score(runDetector(x0, fs, true)); s.FN > 0 || s.FP > 0 {
			t.Fatalf("the first lead alone: missed %v, false %v; the test needs none", s.Missed, s.False)
		}
		if s := score(runDetector(x1, fs, true)); s.FN == 0 {
			t.Fatal("the second lead alone misses no beat; the test needs it to")
		}
		if s := score(runTwoLeads(x0, x1, fs)); s.FN > 0 || s.FP > 0 {
			t.Errorf("missed %v, false %v; want none", s.Missed, s.False)
		}
	})
	t.Run("a clean lead that misses many beats", func(t *testing.T) {
		// from 10 s, a premature beat after every second beat, 400 ms
		// after it, the rhythm reset (the next beat 600 ms later): its
		// QRS a twentieth of the others' on the second lead (a complex
		// nearly perpendicular to it), which the second lead's detector
		// misses while it measures its lead clean, as V1 misses the
		// ventricular beats of a bigeminy. The first lead finds every
		// beat but has white noise of 0.08 mV, noisier than the second.
		// The second lead's silence must not outvote the first
		b0, b1 := withPremature(2, 0.4, 0.6, 0.03)
		x0, x1 := synthECG(b0, 49, fs), synthECG(b1, 49, fs)
		rng := rand.New(rand.NewPCG(9, 10))
		for i := range x0 {
			x0[i] += 0.08 * rng.NormFloat64()
		}
		ref := beatTimes(b0, 3)
		score := func(found []time.Duration) Scored {
			return ScoreBeats(ref, from3s(found), 150*time.Millisecond)
		}
		if s := score(runDetector(x0, fs, true)); s.FN > 0 || s.FP > 0 {
			t.Fatalf("the first lead alone: missed %v, false %v; the test needs none", s.Missed, s.False)
		}
		if s := score(runDetector(x1, fs, true)); s.FN < 10 {
			t.Fatalf("the second lead alone misses %d beats; the test needs at least 10", s.FN)
		}
		if s := score(runTwoLeads(x0, x1, fs)); s.FN > 0 || s.FP > 0 {
			t.Errorf("missed %v, false %v; want none", s.Missed, s.False)
		}
	})
	for _, tt := range []struct {
		name   string
		x0, x1 []float64
	}{
		{"second lead off", first, off(second)},
		{"first lead off", off(first), second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if s := score(runTwoLeads(tt.x0, tt.x1, fs)); s.FN > 0 || s.FP > 0 {
				t.Errorf("missed %v, false %v; want none", s.Missed, s.False)
			}
		})
	}
}

// withPremature returns the beats of two leads, the second 0.6 times the
// first and 12 ms late, of a rhythm of a beat every 800 ms from 1 s to 48 s
// with, from 10 s, a premature beat after every nth: coupling seconds after
// it, and the next beat after seconds later (the rhythm reset, no pause).
// The premature beats are amp1 high on the second lead, left out when amp1
// is 0.
func withPremature(n int, coupling, after, amp1 float64) (b0, b1 []synthBeat) {
	at := 1.0
	for k := 0; at < 48; k++ {
		b0 = append(b0, synthBeat{at, 1, 0.01})
		b1 = append(b1, synthBeat{at + 0.012, 0.6, 0.01})
		if k%n == n-1 && at > 10 {
			b0 = append(b0, synthBeat{at + coupling, 1, 0.01})
			if amp1 > 0 {
				b1 = append(b1, synthBeat{at + coupling + 0.012, amp1, 0.01})
			}
			at += coupling + after
			continue
		}
		at += 0.8
	}
	return b0, b1
}

// from3s returns the beats from 3 s on, past the detectors' learning.
func from3s(found []time.Duration) []time.Duration {
	var out []time.Duration
	for _, f := range found {
		if f >= 3*time.Second {
			out = append(out, f)
		}
	}
	return out
}

// TestTwoLeadDetectorLatency checks the bound on the delay: a beat of one
// lead only is given at most 1.5 s after its R peak, the other lead flat.
func TestTwoLeadDetectorLatency(t *testing.T) {
	const fs = 256
	x, _ := noisyPair(fs, 0)
	d := NewTwoLeadDetector(fs)
	worst := int64(0)
	for k, v := range x {
		d.Feed(v, 0)
		for r, ok := d.Pop(); ok; r, ok = d.Pop() {
			worst = max(worst, int64(k)-r)
		}
	}
	if worst == 0 || worst > int64(1.5*fs)+1 {
		t.Errorf("beats given up to %d samples after their R peak; want some, and at most %d", worst, int64(1.5*fs)+1)
	}
}

// noisyPair returns two leads of a regular rhythm at fs, the second with
// the noise burst of TestQRSDetectorHardCases, times a.
func noisyPair(fs, a float64) (x0, x1 []float64) {
	var beats []synthBeat
	for i := range 60 {
		beats = append(beats, synthBeat{1 + float64(i)*0.8, 1, 0.01})
	}
	x0 = synthECG(beats, 49, fs)
	x1 = slices.Clone(x0)
	noiseBurst(x1, beats, fs, a, true)
	return x0, x1
}

// TestTwoLeadDetectorAllocs checks that the detector does not allocate in
// a whole record's stream, Pop taking the beats after each Feed: counted
// over the record, not per sample, so that an allocation now and then (per
// beat, say) counts too.
func TestTwoLeadDetectorAllocs(t *testing.T) {
	const fs = 256
	x0, x1 := noisyPair(fs, 0.5)
	d := NewTwoLeadDetector(fs)
	beats := 0
	// AllocsPerRun runs the record once more before it counts: the
	// stream goes on, the detector's state warm
	if n := testing.AllocsPerRun(1, func() {
		for i := range x0 {
			d.Feed(x0[i], x1[i])
			for _, ok := d.Pop(); ok; _, ok = d.Pop() {
				beats++
			}
		}
	}); n != 0 || beats < 100 {
		t.Errorf("%g allocations in a record of %d sample pairs, %d beats in two runs; want 0, and at least 100 beats", n, len(x0), beats)
	}
}

// BenchmarkTwoLeadDetector feeds one sample pair at 256 Hz, the second lead
// with the noise burst of TestQRSDetectorHardCases: ns/op is the cost per
// pair, and it must not allocate.
func BenchmarkTwoLeadDetector(b *testing.B) {
	const fs = 256
	x0, x1 := noisyPair(fs, 0.35)
	d := NewTwoLeadDetector(fs)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.Feed(x0[i], x1[i])
		for _, ok := d.Pop(); ok; _, ok = d.Pop() {
		}
		if i++; i == len(x0) {
			i = 0
		}
	}
}

func ExampleTwoLeadDetector() {
	const fs = 256
	// two leads of a beat a second, the second lead smaller and inverted
	x0, x1 := make([]float64, 10*fs), make([]float64, 10*fs)
	for k := fs / 2; k < len(x0); k += fs {
		x0[k], x0[k+1] = 1, 0.5
		x1[k], x1[k+1] = -0.5, -0.25
	}
	d := NewTwoLeadDetector(fs)
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

// TestTwoLeadDetectorOneLeadSilent checks that a lead that never gives a
// beat (flat: disconnected, or its amplifier off) costs the other lead no
// beat: the other lead's detector is learning all along, so every beat of
// the live lead is given (rule 2), but for those under 200 ms after the
// last (rule 5), clean or noisy, whichever lead is the silent one.
func TestTwoLeadDetectorOneLeadSilent(t *testing.T) {
	const fs = 256
	var beats []synthBeat
	for i := range 60 {
		beats = append(beats, synthBeat{1 + float64(i)*0.8, 1, 0.01})
	}
	for _, a := range []float64{0, 0.5, 0.8} {
		live := synthECG(beats, 49, fs)
		noiseBurst(live, beats, fs, a, true)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range live {
			live[i] += a / 4 * rng.NormFloat64()
		}
		var want []time.Duration
		for _, b := range runDetector(live, fs, true) {
			if len(want) == 0 || b-want[len(want)-1] >= 200*time.Millisecond {
				want = append(want, b)
			}
		}
		flat := make([]float64, len(live))
		for _, tt := range []struct {
			name   string
			x0, x1 []float64
		}{
			{"second lead flat", live, flat},
			{"first lead flat", flat, live},
		} {
			t.Run(fmt.Sprintf("%s, noise %g", tt.name, a), func(t *testing.T) {
				if got := runTwoLeads(tt.x0, tt.x1, fs); !slices.Equal(got, want) {
					t.Errorf("beats %v; want the live lead's %v", got, want)
				}
			})
		}
	}
}

// TestTwoLeadDetectorMerge checks how the two leads' beats are merged, on
// beats handed straight to the merge as the leads' detectors would give
// them (each lead's R peak, and when its detector gives it), both leads
// clean (a noise share of a hundredth), after a rhythm of 12 beats every
// 200 samples at 256 Hz that both leads find.
func TestTwoLeadDetectorMerge(t *testing.T) {
	const fs = 256 // 200 ms is 51 samples, 1.5 s 384
	noisy := func(lead int, share float64) [2]float64 {
		n := [2]float64{0.01, 0.01}
		n[lead] = share
		return n
	}
	for _, tt := range []struct {
		name string
		b    []handed // after the rhythm
		want []int64
		// when, if above 0, is when the last beat must be given
		when int64
	}{
		{"pairs 188 ms apart, at the first lead's R peak",
			[]handed{{1, 2600, 2660, clean}, {0, 2648, 2700, clean}, {0, 2800, 2860, clean}, {1, 2848, 2900, clean}},
			[]int64{2648, 2800}, 0},
		{"not paired 200 ms apart",
			// the second lead's beat comes first: given alone, at its R
			// peak, and the first lead's dropped, under 200 ms after it
			[]handed{{1, 2600, 2660, clean}, {0, 2651, 2700, clean}, {0, 2800, 2860, clean}, {1, 2803, 2870, clean}},
			[]int64{2600, 2800}, 0},
		{"the other lead's beat paired with the nearer",
			// the first lead's beat at 2560 is noise, 40 samples before
			// the beat both leads find, and the second lead's beat is
			// nearer the first lead's next
			[]handed{{0, 2560, 2620, clean}, {0, 2600, 2660, clean}, {1, 2603, 2670, clean}},
			[]int64{2600}, 0},
		// rule 3: the second lead misses the beats at 2600 and 2800, which
		// rule 4 gives; then a premature beat of the first lead only, at
		// 3100, inside an interval that the second lead's next beat
		// closes on time
		{"a lead missing beats: the other's kept",
			[]handed{{0, 2600, 2660, clean}, {0, 2800, 2860, clean}, {0, 3000, 3060, clean}, {1, 3003, 3070, clean},
				{0, 3100, 3160, clean}, {0, 3200, 3260, clean}, {1, 3203, 3270, clean}},
			[]int64{2600, 2800, 3000, 3100, 3200}, 0},
		{"a lead missing beats: the other's dropped when noisy",
			[]handed{{0, 2600, 2660, clean}, {0, 2800, 2860, clean}, {0, 3000, 3060, clean}, {1, 3003, 3070, clean},
				{0, 3100, 3160, noisy(0, 0.2)}, {0, 3200, 3260, clean}, {1, 3203, 3270, clean}},
			[]int64{2600, 2800, 3000, 3200}, 0},
		{"a lead missing beats: the other's dropped when it misses as many",
			[]handed{{0, 2600, 2660, clean}, {1, 2803, 2870, clean}, {0, 3000, 3060, clean}, {1, 3203, 3270, clean},
				{0, 3300, 3360, clean}, {0, 3400, 3460, clean}, {1, 3403, 3470, clean}},
			[]int64{2600, 2803, 3000, 3203, 3400}, 0},
		{"a beat waits 1.5 s for the other lead",
			// the second lead's detector gives the beat first, the
			// first's 1.5 s after the second's R peak: one beat, at the
			// first lead's R peak
			[]handed{{1, 2600, 2660, clean}, {0, 2605, 2600 + 384, clean}},
			[]int64{2605}, 0},
		{"a beat of one lead given 1.5 s after its R peak",
			[]handed{{0, 2600, 2660, clean}},
			[]int64{2600}, 2600 + 384},
		{"a lead's late beats neither twice nor out of order",
			// the second lead gives the beat at 2600 after the first
			// lead's was given alone, and then one at 2500, before it
			[]handed{{0, 2600, 2660, clean}, {1, 2603, 3100, clean}, {1, 2500, 3200, clean}},
			[]int64{2600}, 2600 + 384},
	} {
		t.Run(tt.name, func(t *testing.T) {
			given, when := merge(fs, append(rhythm(), tt.b...))
			want := append(rhythmBeats(), tt.want...)
			if !slices.Equal(given, want) {
				t.Errorf("beats given at %v; want %v", given, want)
			}
			if tt.when > 0 && (len(when) == 0 || when[len(when)-1] != tt.when) {
				t.Errorf("beats given when %v; want the last at %d", when, tt.when)
			}
		})
	}
}

// handed is a beat handed straight to a TwoLeadDetector's merge, as a
// lead's detector would give it: its lead, its R peak, the sample when
// the detector gives it, and both leads' noise shares then.
type handed struct {
	lead  int
	r, at int64
	noise [2]float64
}

// clean is the noise shares of two clean leads: a hundredth each.
var clean = [2]float64{0.01, 0.01}

// rhythm returns 12 beats every 200 samples (at 256 Hz, 781 ms) that both
// leads find, both clean, the second lead's 3 samples later: the first
// lead's R peaks from 200 to 2400, given 60 samples after them, the second
// lead's 67 after theirs.
func rhythm() []handed {
	var bs []handed
	for r := int64(200); r <= 2400; r += 200 {
		bs = append(bs, handed{0, r, r + 60, clean}, handed{1, r + 3, r + 70, clean})
	}
	return bs
}

// rhythmBeats returns the beats a TwoLeadDetector gives for rhythm: the
// first lead's R peaks.
func rhythmBeats() []int64 {
	var out []int64
	for r := int64(200); r <= 2400; r += 200 {
		out = append(out, r)
	}
	return out
}

// merge hands bs to a new TwoLeadDetector for fs Hz, each at its sample,
// up to 3 s after the last is handed, and returns the beats it gives and
// the samples when it gives them.
func merge(fs float64, bs []handed) (given, when []int64) {
	d := NewTwoLeadDetector(fs)
	end := int64(0)
	for _, b := range bs {
		end = max(end, b.at+2*d.wait)
	}
	for k := int64(0); k < end; k++ {
		d.n = k + 1
		for _, b := range bs {
			if b.at == k {
				d.pend[b.lead] = append(d.pend[b.lead], found{r: b.r, noise: b.noise})
			}
		}
		d.decide(false)
		for r, ok := d.Pop(); ok; r, ok = d.Pop() {
			given, when = append(given, r), append(when, k)
		}
	}
	return given, when
}

// TestTwoLeadDetectorFlush checks that Flush gives the beats still waiting
// at the streams' end: a record cut 200 ms after an R peak, whose last beat
// only the detectors' Flush gives, on both leads or on one, the other flat
// (the beat then also waiting for the other lead).
func TestTwoLeadDetectorFlush(t *testing.T) {
	const fs = 256
	x, _ := noisyPair(fs, 0)
	end := (1 + 40*0.8 + 0.2) * fs // 200 ms after the R peak at 33 s
	x = x[:int(end)]
	want := runDetector(x, fs, true)
	if n := len(runDetector(x, fs, false)); n >= len(want) {
		t.Fatalf("the detector gives %d beats without Flush, %d with; the test needs Flush to give one", n, len(want))
	}
	for _, tt := range []struct {
		name   string
		x0, x1 []float64
	}{
		{"both leads", x, x},
		{"second lead flat", x, make([]float64, len(x))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := runTwoLeads(tt.x0, tt.x1, fs); !slices.Equal(got, want) {
				t.Errorf("beats %v; want the single-lead detector's %v", got, want)
			}
		})
	}
}
