package signal

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The tests of this file hold each rule of the QRS detector at both sides
// of its thresholds, and at the threshold itself where the arithmetic
// allows an exact tie. Each sets up a detector's state by hand (its levels,
// its last beat, its intervals, the band-passed values its slopes and
// complexes are read from) and calls the rule, so that a threshold moved by
// a sample or a comparison turned the other way fails a case.

// rulesFs is the rate of the rule tests: 256 Hz, where a spike of 3/32 in
// the band-passed signal has a steepest slope of exactly 6 (units per
// second) and every interval below is a whole number of samples.
const rulesFs = 256

// idle returns a detector past its learning, fed zeros, with no beat yet.
// A flat line teaches it nothing, so it would learn on: its learning is
// ended here, with levels of 0.
func idle(t *testing.T) *QRSDetector {
	t.Helper()
	d := NewQRSDetector(rulesFs)
	for range 3 * rulesFs {
		d.Feed(0)
	}
	if !d.learning || len(d.out) != 0 {
		t.Fatalf("a detector fed 3 s of zeros: learning %v, %d beats; want learning, none", d.learning, len(d.out))
	}
	d.learning, d.since = false, d.n
	return d
}

// rulesState is the state a rule test sets before it calls the rule.
type rulesState struct {
	spki, npki float64
	since      int64     // samples from the last beat's peak to the peak classified, 0 for no last beat
	rr, rrOK   []int64   // intervals, samples
	slope      float64   // steepest slope of the peak classified: a spike in the band-passed values, 0 for none
	slopes     []float64 // the last beats' steepest slopes
	lastSlope  float64
}

// set puts the state s on d, for a peak at d.n-1, and returns that index.
func (s rulesState) set(d *QRSDetector) int64 {
	i := d.n - 1
	d.spki, d.npki = s.spki, s.npki
	d.lastQRS, d.lastR = -1, -1
	if s.since > 0 {
		d.lastQRS, d.lastR = i-s.since, i-s.since-d.delay
	}
	d.rr = append(d.rr[:0], s.rr...)
	d.rrOK = append(d.rrOK[:0], s.rrOK...)
	d.search = 1.66 * mean(d.rrOK)
	d.live = i // a signal, not a flat line
	d.slopeN = copy(d.slopes[:], s.slopes)
	d.lastSlope = s.lastSlope
	clear(d.bpv)
	if s.slope > 0 {
		// a lone value a of the band-passed signal has the derivative
		// 2a*fs/8 at its own sample, the largest of the four it makes
		d.bpv[int((i-10)%int64(d.hist))] = float32(s.slope * 4 / rulesFs)
	}
	return i
}

// exactly fails the test unless a == b: a case that means a tie at a
// threshold must make one.
func exactly(t *testing.T, what string, a, b float64) {
	t.Helper()
	if a != b {
		t.Fatalf("setup: %s is %v, not %v: no tie at the threshold", what, a, b)
	}
}

func TestQRSThresholds(t *testing.T) {
	d := idle(t)
	d.spki, d.npki = 1, 0.2
	t1, t2 := d.thresholds()
	if math.Abs(t1-0.4) > 1e-12 || math.Abs(t2-0.2) > 1e-12 {
		t.Errorf("signal level 1, noise level 0.2: thresholds %g and %g; want 0.4 and 0.2", t1, t2)
	}
}

// TestQRSMaxSlope checks the steepest slope against the derivative of the
// band-passed input as the ring holds it (in float32), over random input,
// at every distance from the stream's start.
func TestQRSMaxSlope(t *testing.T) {
	d := NewQRSDetector(rulesFs)
	bp := slices.Clone(d.bp)
	bp.Reset()
	rng := rand.New(rand.NewPCG(3, 4))
	var der []float64
	var hist [4]float64
	for n := range 6 * rulesFs {
		x := rng.NormFloat64()
		d.Feed(x)
		b := float64(float32(bp.Step(x)))
		der = append(der, math.Abs((2*b+hist[0]-hist[2]-2*hist[3])*rulesFs/8))
		hist[3], hist[2], hist[1], hist[0] = hist[2], hist[1], hist[0], b
		// the slopes still in the ring: its oldest 5 samples start no
		// derivative
		from := max(n-len(d.win), n-d.hist+5, 0)
		if want, got := slices.Max(der[from:n+1]), d.maxSlope(int64(n)); got != want {
			t.Fatalf("sample %d: steepest slope %g; want %g", n, got, want)
		}
		if n > d.hist+10 {
			old := int64(n - d.hist + 2) // past the ring's reach
			if got := d.maxSlope(old); got != 0 {
				t.Fatalf("sample %d: steepest slope of a peak no longer in the ring %g; want 0", n, got)
			}
		}
	}
}

// TestQRSLocate checks the R peak against the sample farthest from the
// chord of the window, found over the input directly.
func TestQRSLocate(t *testing.T) {
	d := NewQRSDetector(rulesFs)
	rng := rand.New(rand.NewPCG(5, 6))
	var x []float64
	win := int64(len(d.win))
	for n := range 6 * rulesFs {
		v := rng.NormFloat64()
		x = append(x, float64(float32(v))) // as the ring holds it
		d.Feed(v)
		// a peak now, a little before, one still to come, and one whose
		// window reaches past the oldest sample the ring holds
		for _, i := range []int64{int64(n), int64(n) - 40, int64(n) + 30, int64(n) - int64(d.hist) + 50} {
			c := i - d.delay - win/2
			lo := max(c-win/2-d.margin(), d.n-int64(d.hist)+1, 0) // the ring holds d.n-hist on; locate keeps a sample spare
			hi := min(c+win/2, int64(n))
			want := max(i-d.delay, 0)
			if hi > lo {
				slope := (x[hi] - x[lo]) / float64(hi-lo)
				best := -1.0
				for k := lo; k <= hi; k++ {
					if v := math.Abs(x[k] - x[lo] - slope*float64(k-lo)); v > best {
						best, want = v, k
					}
				}
			}
			if got := d.locate(i); got != want {
				t.Fatalf("fed %d samples: R peak of the peak at %d at %d; want %d", n+1, i, got, want)
			}
		}
	}
}

// TestQRSComplex checks the complex copied around an R peak against the
// band-passed input in float32, as the ring holds it, with zeros outside
// what the ring holds.
func TestQRSComplex(t *testing.T) {
	d := NewQRSDetector(rulesFs)
	bp := slices.Clone(d.bp)
	bp.Reset()
	rng := rand.New(rand.NewPCG(7, 8))
	var b []float64
	for n := range 6 * rulesFs {
		x := rng.NormFloat64()
		d.Feed(x)
		b = append(b, float64(float32(bp.Step(x))))
		for _, r := range []int64{int64(n) - 100, int64(n) - 20, int64(n) - int64(d.hist) + 40} {
			seg := d.complex(r)
			from := r - d.half - d.lag + d.delay - 2
			for k, got := range seg {
				at := from + int64(k)
				want := 0.0
				if at >= 0 && at > int64(n)-int64(d.hist) && at <= int64(n) {
					want = b[at]
				}
				if got != want {
					t.Fatalf("fed %d samples: value %d of the complex at %d is %g; want %g", n+1, k, r, got, want)
				}
			}
		}
	}
}

// TestQRSCorrelation checks corrWith against the correlation coefficient
// computed directly, at each misalignment it allows.
func TestQRSCorrelation(t *testing.T) {
	d := NewQRSDetector(rulesFs)
	rng := rand.New(rand.NewPCG(9, 10))
	for range 2 * rulesFs {
		d.Feed(rng.NormFloat64())
	}
	r := d.n - 3*d.half
	seg := slices.Clone(d.complex(r))
	pearson := func(a, b []float64) float64 {
		ma, mb := mean(a), mean(b)
		var sab, saa, sbb float64
		for k := range a {
			sab += (a[k] - ma) * (b[k] - mb)
			saa += (a[k] - ma) * (a[k] - ma)
			sbb += (b[k] - mb) * (b[k] - mb)
		}
		return sab / math.Sqrt(saa*sbb)
	}
	n := len(d.tmpl)
	for lag := range 2*d.lag + 1 {
		// a template that is the complex at one misalignment, mean
		// removed: the correlation is 1 there
		tmpl := slices.Clone(seg[lag : lag+int64(n)])
		mu := mean(tmpl)
		for k := range tmpl {
			tmpl[k] -= mu
		}
		want := -1.0
		for l := range 2*d.lag + 1 {
			want = math.Max(want, pearson(tmpl, seg[l:l+int64(n)]))
		}
		got := d.corrWith(tmpl, r)
		if math.Abs(got-want) > 1e-9 || math.Abs(got-1) > 1e-9 {
			t.Errorf("template at misalignment %d: correlation %g; want %g (1)", lag-d.lag, got, want)
		}
		// the template upside down, scaled: -1 at best, and the best
		// of the other misalignments
		for k := range tmpl {
			tmpl[k] *= -3
		}
		want = -1.0
		for l := range 2*d.lag + 1 {
			want = math.Max(want, pearson(tmpl, seg[l:l+int64(n)]))
		}
		if got := d.corrWith(tmpl, r); math.Abs(got-want) > 1e-9 {
			t.Errorf("template upside down at misalignment %d: correlation %g; want %g", lag-d.lag, got, want)
		}
	}
	// a flat complex or template has no correlation
	if got := d.corrWith(make([]float64, n), r); got != -1 {
		t.Errorf("flat template: correlation %g; want -1", got)
	}
}

// shapeAt writes shape into the band-passed values that the complex of an
// R peak at r is read from, unshifted.
func shapeAt(d *QRSDetector, r int64, shape []float64) {
	from := r - d.half + d.delay - 2
	for k, v := range shape {
		d.bpv[int((from+int64(k))%int64(d.hist))] = float32(v)
	}
}

// bump returns a smooth complex as long as the template, mean removed,
// times a.
func bump(d *QRSDetector, a float64) []float64 {
	b := make([]float64, len(d.tmpl))
	for k := range b {
		q := float64(k-len(b)/2) / 4
		b[k] = a * math.Exp(-q*q/2)
	}
	mu := mean(b)
	for k := range b {
		b[k] -= mu
	}
	return b
}

// putCorr writes a complex at the R peak r whose correlation with the
// template (a bump) is c: the bump upside down for -1 (a negative
// correlation, the lags allowed), or with as much of
// an odd part as brings the correlation to c (by bisection).
func putCorr(t *testing.T, d *QRSDetector, r int64, c float64) {
	t.Helper()
	put := func(e float64) float64 {
		shape := bump(d, 0.002)
		for k := range shape {
			q := float64(k-len(shape)/2) / 4
			shape[k] += e * 0.002 * q * math.Exp(-q*q/2)
		}
		shapeAt(d, r, shape)
		return d.corr(r)
	}
	switch {
	case c < 0:
		shapeAt(d, r, bump(d, -0.002))
	case c < 1:
		lo, hi := 0.0, 10.0
		for range 60 {
			if e := (lo + hi) / 2; put(e) > c {
				lo = e
			} else {
				hi = e
			}
		}
		put(lo)
	default:
		put(0)
	}
	if got := d.corr(r); c < 0 && got >= 0 || c >= 0 && c < 1 && math.Abs(got-c) > 1e-3 || c == 1 && got < 0.999 {
		t.Fatalf("setup: correlation %g; want %g", got, c)
	}
}

// TestQRSClassify holds each rule classify applies to a peak of the
// integrated signal at both sides of its thresholds: the refractory period,
// the threshold and the floor, the T-wave window and its steepness tests, the noise veto
// of complexes unlike the template and of small shallow ones, and the
// search-backs a beat starts (the gap of an irregular rhythm, the small
// peaks the veto held, the pause).
func TestQRSClassify(t *testing.T) {
	eights := []float64{8, 8, 8, 8, 8, 8, 8, 8}
	// on time, clean, a regular rhythm of 250 samples, as steep as the
	// typical beat
	base := rulesState{spki: 1, npki: 0.01, since: 230, rr: []int64{250}, rrOK: []int64{250}, slope: 8, slopes: eights, lastSlope: 8}
	with := func(f func(*rulesState)) rulesState {
		s := base
		f(&s)
		return s
	}
	// small: a peak the small-peak veto holds, in noise (a noise level of
	// 0.06 of the signal's), early, under half the signal level and half
	// as steep as the typical beat
	small := func(f func(*rulesState)) rulesState {
		s := with(func(s *rulesState) { s.npki, s.since, s.slope = 0.06, 150, 4 })
		f(&s)
		return s
	}
	// irregular: eight intervals, one of them long (330 > 116% of 250):
	// their average is 260, and 140% of it 364
	irregular := []int64{250, 250, 250, 250, 250, 250, 250, 330}
	type kept struct {
		at    int64 // samples before the peak classified
		v     float64
		small bool
	}
	tests := []struct {
		name   string
		s      rulesState
		v      float64 // the peak; 0 for the threshold itself
		unlike bool    // a template learnt, which the peak's complex is upside down of
		noise  []kept  // candidates since the last beat
		beats  int     // beats taken
		kept   int     // candidates after the peak, -1 for no change
		small  bool    // the last kept candidate is marked small
		vetoed bool    // the last kept candidate is marked vetoed
	}{
		{"above the threshold on time: a beat", base, 0.5, false, nil, 1, 0, false, false},
		{"at the threshold: noise, a candidate", base, 0, false, nil, 0, 1, false, false},
		{"the first peak above the threshold: a beat", with(func(s *rulesState) { s.since, s.rr, s.rrOK = 0, nil, nil }), 0.5, false, nil, 1, 0, false, false},
		{"the first peak at the threshold: no candidate", with(func(s *rulesState) { s.since, s.rr, s.rrOK = 0, nil, nil }), 0, false, nil, 0, 0, false, false},
		{"200 ms after the last beat: its tail", with(func(s *rulesState) { s.since = 51 }), 0.5, false, nil, 0, 0, false, false},
		{"a sample later, as steep as the last beat: a beat", with(func(s *rulesState) { s.since = 52 }), 0.5, false, nil, 1, 0, false, false},
		{"shallow, a sample inside the T-wave window: a T wave", with(func(s *rulesState) { s.since, s.slope = 91, 3.5 }), 0.5, false, nil, 0, 0, false, false},
		{"shallow, at the end of the T-wave window: a beat", with(func(s *rulesState) { s.since, s.slope = 92, 3.5 }), 0.5, false, nil, 1, 0, false, false},
		{"a T wave three quarters as steep as the typical beat: a candidate", with(func(s *rulesState) { s.since, s.slope, s.lastSlope = 91, 6, 16 }), 0.5, false, nil, 0, 1, false, false},
		{"a T wave less steep: no candidate", with(func(s *rulesState) { s.since, s.slope, s.lastSlope, s.slopes = 91, 6, 16, []float64{8.5} }), 0.5, false, nil, 0, 0, false, false},
		{"under the threshold, shallow, in the T-wave window: no candidate", with(func(s *rulesState) { s.since, s.slope = 91, 3.5 }), 0.2, false, nil, 0, 0, false, false},
		{"under the threshold, half as steep as the last beat: a candidate", with(func(s *rulesState) { s.since, s.slope, s.lastSlope, s.slopes = 91, 4, 8, []float64{1} }), 0.2, false, nil, 0, 1, false, false},
		{"under the threshold, past the T-wave window: a candidate", with(func(s *rulesState) { s.since, s.slope = 92, 3.5 }), 0.2, false, nil, 0, 1, false, false},
		// nothing under the floor is a beat: low levels, a threshold of 0.05
		{"above the threshold, under the floor: noise, a candidate", with(func(s *rulesState) { s.spki, s.npki = 0.2, 0 }), 0.0999, false, nil, 0, 1, false, false},
		{"above the threshold, at the floor: a beat", with(func(s *rulesState) { s.spki, s.npki = 0.2, 0 }), 0.1, false, nil, 1, 0, false, false},

		// the noise veto: early, in noise, unlike the template
		{"early, noisy, unlike the template: vetoed", with(func(s *rulesState) { s.since, s.npki = 150, 0.03 }), 0.5, true, nil, 0, 1, false, true},
		{"early, noise at a fortieth of the signal, unlike: a beat", with(func(s *rulesState) { s.since, s.npki = 150, 0.025 }), 0.5, true, nil, 1, 0, false, false},
		{"at 80% of the interval, noisy, unlike: a beat", with(func(s *rulesState) { s.since, s.npki = 200, 0.03 }), 0.5, true, nil, 1, 0, false, false},
		{"a sample earlier, noisy, unlike: vetoed", with(func(s *rulesState) { s.since, s.npki = 199, 0.03 }), 0.5, true, nil, 0, 1, false, true},
		{"early, noisy, like the template: a beat", with(func(s *rulesState) { s.since, s.npki = 150, 0.03 }), 0.5, false, nil, 1, 0, false, false},
		// on a clean signal, only when small and shallow in a regular rhythm
		{"clean, early, unlike, small, shallow: vetoed", with(func(s *rulesState) { s.since, s.slope, s.slopes = 150, 11.75, []float64{20} }), 0.45, true, nil, 0, 1, false, true},
		{"clean, half the signal level: a beat", with(func(s *rulesState) { s.since, s.slope, s.slopes = 150, 11.75, []float64{20} }), 0.5, true, nil, 1, 0, false, false},
		{"clean, 0.6 times as steep as the typical beat: a beat", with(func(s *rulesState) { s.since, s.slope, s.slopes = 150, 12, []float64{20} }), 0.45, true, nil, 1, 0, false, false},
		{"clean, small at twice the signal level: vetoed", with(func(s *rulesState) { s.since, s.slope, s.slopes, s.spki = 150, 11.75, []float64{20}, 2 }), 0.9, true, nil, 0, 1, false, true},
		{"clean, half of twice the signal level: a beat", with(func(s *rulesState) { s.since, s.slope, s.slopes, s.spki = 150, 11.75, []float64{20}, 2 }), 1, true, nil, 1, 0, false, false},
		{"clean, small, shallow, like the template: a beat", with(func(s *rulesState) { s.since, s.slope, s.slopes = 150, 11.75, []float64{20} }), 0.45, false, nil, 1, 0, false, false},
		{"clean, small, shallow, unlike, irregular: a beat", with(func(s *rulesState) { s.since, s.slope, s.slopes, s.rr = 150, 11.75, []float64{20}, irregular }), 0.45, true, nil, 1, 0, false, false},
		{"clean, small, shallow, unlike, at 80% of the interval: a beat", with(func(s *rulesState) { s.since, s.slope, s.slopes = 200, 11.75, []float64{20} }), 0.45, true, nil, 1, 0, false, false},

		// the small-peak veto
		{"small, shallow, early, in noise: held", small(func(*rulesState) {}), 0.45, false, nil, 0, 1, true, false},
		{"small, noise at a twentieth of the signal: a beat", small(func(s *rulesState) { s.npki = 0.05 }), 0.45, false, nil, 1, 0, false, false},
		{"half the signal level: a beat", small(func(*rulesState) {}), 0.5, false, nil, 1, 0, false, false},
		{"0.6 times as steep as the typical beat: a beat", small(func(s *rulesState) { s.slope, s.slopes = 6, []float64{10} }), 0.45, false, nil, 1, 0, false, false},
		{"a little less steep: held", small(func(s *rulesState) { s.slope, s.slopes = 5.875, []float64{10} }), 0.45, false, nil, 0, 1, true, false},
		{"small, twice the signal level: held", small(func(s *rulesState) { s.spki, s.npki = 2, 0.11 }), 0.9, false, nil, 0, 1, true, false},
		{"half of twice the signal level: a beat", small(func(s *rulesState) { s.spki, s.npki = 2, 0.11 }), 1, false, nil, 1, 0, false, false},
		{"small, noise at a twentieth of twice the signal level: a beat", small(func(s *rulesState) { s.spki, s.npki = 2, 0.1 }), 0.9, false, nil, 1, 0, false, false},
		{"small at 80% of the interval: a beat", small(func(s *rulesState) { s.since = 200 }), 0.45, false, nil, 1, 0, false, false},
		{"small a sample earlier: held", small(func(s *rulesState) { s.since = 199 }), 0.45, false, nil, 0, 1, true, false},

		// a beat ending a long interval takes the small peak held in it
		{"125% of the interval and more: the small peak first", with(func(s *rulesState) { s.since = 321 }), 0.5, false, []kept{{150, 0.3, true}}, 2, 0, false, false},
		{"at 125% of the interval: not the small peak", with(func(s *rulesState) { s.since, s.rr = 320, []int64{256} }), 0.5, false, []kept{{150, 0.3, true}}, 1, 0, false, false},
		{"a peak not held as small: not taken", with(func(s *rulesState) { s.since = 321 }), 0.5, false, []kept{{150, 0.3, false}}, 1, 0, false, false},
		{"a small peak inside the T-wave window: not taken", with(func(s *rulesState) { s.since = 321 }), 0.5, false, []kept{{321 - 91, 0.3, true}}, 1, 0, false, false},
		{"a small peak at the end of the T-wave window: taken", with(func(s *rulesState) { s.since = 321 }), 0.5, false, []kept{{321 - 92, 0.3, true}}, 2, 0, false, false},
		{"a small peak 200 ms before: not taken", with(func(s *rulesState) { s.since = 321 }), 0.5, false, []kept{{51, 0.3, true}}, 1, 0, false, false},
		{"a small peak a sample earlier: taken", with(func(s *rulesState) { s.since = 321 }), 0.5, false, []kept{{52, 0.3, true}}, 2, 0, false, false},

		// the gap of an irregular rhythm
		{"irregular, a gap over 140% of the average: a beat in it", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{180, 0.3, false}}, 2, 0, false, false},
		{"irregular, a gap of 140%: none", with(func(s *rulesState) { s.since, s.rr = 364, irregular }), 0.5, false, []kept{{180, 0.3, false}}, 1, 0, false, false},
		{"regular, a gap over 140%: none", with(func(s *rulesState) { s.since, s.rr = 365, []int64{250, 250, 250, 250, 250, 250, 250, 290} }), 0.5, false, []kept{{180, 0.3, false}}, 1, 0, false, false},
		{"irregular, noise at a twentieth of the signal: a beat in the gap", with(func(s *rulesState) { s.since, s.rr, s.npki = 365, irregular, 0.05 }), 0.5, false, []kept{{180, 0.3, false}}, 2, 0, false, false},
		{"irregular, more noise, a candidate unlike a beat: none", with(func(s *rulesState) { s.since, s.rr, s.npki = 365, irregular, 0.06 }), 0.5, false, []kept{{180, 0.3, false}}, 1, 0, false, false},
		{"irregular, the candidate at half the threshold: none", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{180, -1, false}}, 1, 0, false, false},
		{"irregular, the candidate inside the T-wave window: none", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{365 - 91, 0.3, false}}, 1, 0, false, false},
		{"irregular, the candidate at its end: a beat", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{365 - 92, 0.3, false}}, 2, 0, false, false},
		{"irregular, the candidate 200 ms before: none", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{51, 0.3, false}}, 1, 0, false, false},
		{"irregular, low levels, the candidate under the floor: none", with(func(s *rulesState) { s.since, s.rr, s.spki, s.npki = 365, irregular, 0.2, 0 }), 0.5, false, []kept{{180, 0.0999, false}}, 1, 0, false, false},
		{"irregular, low levels, the candidate at the floor: a beat in the gap", with(func(s *rulesState) { s.since, s.rr, s.spki, s.npki = 365, irregular, 0.2, 0 }), 0.5, false, []kept{{180, 0.1, false}}, 2, 0, false, false},

		// the pause: search-back past 166% of the regular interval
		{"past 166% of the interval: search-back", with(func(s *rulesState) { s.since = 416 }), 0.5, false, []kept{{200, 0.2, false}}, 2, 0, false, false},
		{"at 166% of the interval: none", with(func(s *rulesState) { s.since, s.rrOK = 415, []int64{250} }), 0.5, false, []kept{{200, 0.2, false}}, 1, 0, false, false},
		{"no interval yet: none", with(func(s *rulesState) { s.since, s.rr = 416, nil }), 0.5, false, []kept{{200, 0.2, false}}, 1, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			i := tt.s.set(d)
			if tt.unlike {
				d.tmplN = 8
				copy(d.tmpl, bump(d, 1))
				shapeAt(d, d.locate(i), bump(d, -0.2)) // less steep than the peak
			}
			if s := d.maxSlope(i); s != tt.s.slope {
				t.Fatalf("setup: steepest slope %g; want %g", s, tt.s.slope)
			}
			t1, t2 := d.thresholds()
			for _, k := range tt.noise {
				v := k.v
				if v < 0 {
					v = t2
				}
				d.noise = append(d.noise, peak{v: v, i: i - k.at, small: k.small})
			}
			v := tt.v
			if v == 0 {
				v = t1
			}
			npki := d.npki
			d.classify(v, i)
			if len(d.out) != tt.beats {
				t.Errorf("%d beats; want %d", len(d.out), tt.beats)
			}
			if tt.kept >= 0 && len(d.noise) != tt.kept {
				t.Errorf("%d candidates kept; want %d", len(d.noise), tt.kept)
			}
			if n := len(d.noise); n > 0 && (d.noise[n-1].small != tt.small || d.noise[n-1].vetoed != tt.vetoed) {
				t.Errorf("the candidate kept: small %v, vetoed %v; want %v and %v", d.noise[n-1].small, d.noise[n-1].vetoed, tt.small, tt.vetoed)
			}
			// a peak that is no beat raises the noise level by an eighth
			// of the difference; a beat leaves it
			want := npki
			if tt.beats == 0 {
				want = 0.125*v + 0.875*npki
			}
			if d.npki != want {
				t.Errorf("noise level %g; want %g", d.npki, want)
			}
		})
	}
}

// TestQRSTWaveLike holds the T-wave tests at their thresholds: under half
// the reference steepness, or under four fifths of it before half the
// regular interval. The reference is the last beat's steepness, or three
// quarters of the typical beat's when that is more.
func TestQRSTWaveLike(t *testing.T) {
	tests := []struct {
		name      string
		lastSlope float64
		slopes    []float64
		since     int64 // samples after the last beat; the regular interval is 250
		s         float64
		want      bool
	}{
		{"under half the last beat's", 8, []float64{8}, 200, 3.9, true},
		{"half the last beat's", 8, []float64{8}, 200, 4, false},
		{"under four fifths, early", 10, []float64{10}, 124, 7.9, true},
		{"four fifths, early", 10, []float64{10}, 124, 8, false},
		{"under four fifths, at half the interval", 10, []float64{10}, 125, 7.9, false},
		{"under half of three quarters of the typical beat's", 2, []float64{16}, 200, 5.9, true},
		{"half of three quarters of the typical beat's", 2, []float64{16}, 200, 6, false},
		{"the last beat's steeper than three quarters of the typical", 16, []float64{16}, 200, 7.9, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			rulesState{spki: 1, since: tt.since, rrOK: []int64{250}, slopes: tt.slopes, lastSlope: tt.lastSlope}.set(d)
			if got := d.tWaveLike(d.lastQRS+tt.since, tt.s); got != tt.want {
				t.Errorf("steepness %g, %d samples after a beat of %g (typical %g): T wave %v; want %v", tt.s, tt.since, tt.lastSlope, d.typicalSlope(), got, tt.want)
			}
		})
	}
}

// TestQRSTypicalSlope checks the median of the last beats' steepness, as
// few as there are, and after the ring of eight wraps.
func TestQRSTypicalSlope(t *testing.T) {
	tests := []struct {
		slopes []float64
		want   float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{9, 1}, 9},
		{[]float64{3, 1, 2}, 2},
		{[]float64{7, 3, 9, 1}, 7},
		{[]float64{8, 6, 4, 2, 1, 3, 5, 7}, 5},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 100, 100, 100}, 8},
	}
	for _, tt := range tests {
		d := NewQRSDetector(rulesFs)
		for _, s := range tt.slopes {
			d.slopes[d.slopeN%len(d.slopes)] = s
			d.slopeN++
		}
		if got := d.typicalSlope(); got != tt.want {
			t.Errorf("slopes %v: typical %g; want %g", tt.slopes, got, tt.want)
		}
	}
}

// TestQRSKeep checks the candidates kept for search-back: all of them
// until there are maxPeaks, then a larger one replaces the smallest (the
// first of equal ones) and keeps the others in order, and one no larger is
// dropped.
func TestQRSKeep(t *testing.T) {
	full := func() *QRSDetector {
		d := NewQRSDetector(rulesFs)
		for k := range maxPeaks {
			v := float64(k + 10)
			if k == 3 || k == 7 {
				v = 1 // the smallest, twice
			}
			d.keep(peak{v: v, i: int64(k)})
		}
		return d
	}
	d := full()
	if len(d.noise) != maxPeaks {
		t.Fatalf("%d candidates kept of %d", len(d.noise), maxPeaks)
	}
	d.keep(peak{v: 1, i: 100})
	d.keep(peak{v: 0.5, i: 101})
	for k, p := range d.noise {
		if p.i != int64(k) {
			t.Fatalf("a candidate no larger than the smallest replaced one: %d at %d", p.i, k)
		}
	}
	d.keep(peak{v: 2, i: 102})
	var got []int64
	for _, p := range d.noise {
		got = append(got, p.i)
	}
	want := []int64{0, 1, 2, 4, 5, 6, 7}
	for k := 8; k < maxPeaks; k++ {
		want = append(want, int64(k))
	}
	want = append(want, 102)
	if !slices.Equal(got, want) {
		t.Errorf("a larger candidate kept: %v; want %v", got, want)
	}
}

// TestQRSIrregular holds the irregular rhythm at its bounds: an interval
// at 92% or 116% of the regular average is regular, and one beyond either
// is not; fewer than 8 intervals are never irregular.
func TestQRSIrregular(t *testing.T) {
	avg := []int64{250} // 92% is 230, 116% is 290
	exactly(t, "92% of 250", 0.92*float64(avg[0]), 230)
	exactly(t, "116% of 250", 1.16*float64(avg[0]), 290)
	tests := []struct {
		last int64
		n    int
		want bool
	}{
		{230, 8, false}, {229, 8, true}, {290, 8, false}, {291, 8, true}, {291, 7, false},
	}
	for _, tt := range tests {
		d := NewQRSDetector(rulesFs)
		d.rrOK = append(d.rrOK, avg...)
		for range tt.n - 1 {
			d.rr = append(d.rr, 250)
		}
		d.rr = append(d.rr, tt.last)
		if got := d.irregular(); got != tt.want {
			t.Errorf("%d intervals, the last %d of 250: irregular %v; want %v", tt.n, tt.last, got, tt.want)
		}
	}
}

// TestQRSBeat checks what a beat records: the interval, kept as regular
// when within -8% and +16% of the regular average (or when it is the
// first), the search-back interval (166% of the regular average, or of
// every interval's in an irregular rhythm on a clean signal), and nothing
// for a beat that does not come after the last.
func TestQRSBeat(t *testing.T) {
	irregular := []int64{250, 250, 250, 250, 250, 250, 250, 330}
	tests := []struct {
		name       string
		rr, rrOK   []int64
		npki       float64
		interval   int64
		wantOK     bool    // the interval is kept as regular
		wantSearch float64 // samples
	}{
		{"the first interval", nil, nil, 0.01, 300, true, 1.66 * 300},
		{"at 92% of the regular average", []int64{250}, []int64{250}, 0.01, 230, false, 1.66 * 250},
		{"a sample more", []int64{250}, []int64{250}, 0.01, 231, true, 1.66 * (250 + 231) / 2},
		{"at 116%", []int64{250}, []int64{250}, 0.01, 290, false, 1.66 * 250},
		{"a sample less", []int64{250}, []int64{250}, 0.01, 289, true, 1.66 * (250 + 289) / 2},
		{"no regular interval yet", []int64{100}, nil, 0.01, 300, true, 1.66 * 300},
		{"irregular, clean: every interval", irregular[1:], []int64{250}, 0.05, 330, false, 1.66 * 270},
		{"irregular, noisy: the regular ones", irregular[1:], []int64{250}, 0.06, 330, false, 1.66 * 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			rulesState{spki: 1, npki: tt.npki, since: 1, rr: tt.rr, rrOK: tt.rrOK}.set(d)
			d.lastQRS, d.lastR = 1000, 1000
			d.beat(1000+tt.interval, 1000+tt.interval, 1)
			if len(d.out) != 1 || d.out[0] != 1000+tt.interval || d.lastR != 1000+tt.interval {
				t.Fatalf("beats %v, last R peak %d; want [%d]", d.out, d.lastR, 1000+tt.interval)
			}
			if d.rr[len(d.rr)-1] != tt.interval {
				t.Errorf("intervals %v; want the last %d", d.rr, tt.interval)
			}
			if ok := len(d.rrOK) > 0 && d.rrOK[len(d.rrOK)-1] == tt.interval; ok != tt.wantOK {
				t.Errorf("regular intervals %v: %d kept %v; want %v", d.rrOK, tt.interval, ok, tt.wantOK)
			}
			if math.Abs(d.search-tt.wantSearch) > 1e-9 {
				t.Errorf("search-back after %g samples; want %g", d.search, tt.wantSearch)
			}
		})
	}
	d := idle(t)
	d.lastQRS, d.lastR = 1000, 1000
	d.beat(1001, 1000, 1)
	if len(d.out) != 0 || len(d.rr) != 0 || d.lastQRS != 1000 {
		t.Errorf("a beat at the last one's R peak: beats %v, intervals %v, last peak %d; want none, none, 1000", d.out, d.rr, d.lastQRS)
	}
}

// TestQRSSearchBack holds search-back at its thresholds: the largest
// candidate above half the threshold is a beat; when none is, after two
// and a half intervals without a beat, one past the T-wave window four
// times the others' level, or twice it when it correlates 0.95 or more
// with the template, is a beat of a signal that shrank, and the levels
// start again from it; otherwise nothing, and it looks again an
// integration window later.
func TestQRSSearchBack(t *testing.T) {
	type cand struct {
		at int64 // samples after the last beat
		v  float64
	}
	tests := []struct {
		name    string
		since   int64 // samples from the last beat to now
		cands   []cand
		corr    float64 // the largest candidate's correlation with the template; 0 for no template, -1 upside down
		want    int64   // the candidate taken, by its place after the last beat; 0 for none
		restart bool    // the levels start again from it
		flat    int64   // samples since the integrated signal was last at the floor, now
	}{
		{"the largest above half the threshold", 300, []cand{{100, 0.3}, {150, 0.4}, {200, 0.35}}, 0, 150, false, 0},
		{"at half the threshold, soon: none", 300, []cand{{150, 0}}, 0, 0, false, 0},
		{"after two and a half intervals, four times the others", 626, []cand{{150, 0.1}, {200, 0.0249}, {300, 0.025}}, 0, 150, true, 0},
		{"at two and a half intervals: none", 625, []cand{{150, 0.1}, {200, 0.0249}, {300, 0.025}}, 0, 0, false, 0},
		{"at four times the others, unlike the template: none", 626, []cand{{150, 0.1}, {200, 0.025}, {300, 0.025}}, -1, 0, false, 0},
		{"twice the others, correlating 0.955", 626, []cand{{150, 0.1}, {200, 0.0499}, {300, 0.05}}, 0.955, 150, true, 0},
		{"correlating 0.945: none", 626, []cand{{150, 0.1}, {200, 0.0499}, {300, 0.05}}, 0.945, 0, false, 0},
		{"at twice the others: none", 626, []cand{{150, 0.1}, {200, 0.05}, {300, 0.05}}, 1, 0, false, 0},
		{"alone: none", 626, []cand{{150, 0.1}}, 0, 0, false, 0},
		{"inside the T-wave window: none", 626, []cand{{91, 0.1}, {200, 0.02}, {300, 0.02}}, 0, 0, false, 0},
		{"at its end", 626, []cand{{92, 0.1}, {200, 0.02}, {300, 0.02}}, 0, 92, true, 0},
		{"no candidate", 626, nil, 0, 0, false, 0},
		// nothing under the floor is an ECG, and the recovery restarts the
		// levels only from a signal that goes on: the last complex before
		// a flat line stands above it, whatever it is
		{"four times the others, under the floor: none", 626, []cand{{150, 0.0999}, {200, 0.0249}, {300, 0.0249}}, 0, 0, false, 0},
		{"four times the others, the signal gone an interval ago", 626, []cand{{150, 0.1}, {200, 0.0249}, {300, 0.025}}, 0, 150, true, 250},
		{"four times the others, the signal gone longer: none", 626, []cand{{150, 0.1}, {200, 0.0249}, {300, 0.025}}, 0, 0, false, 251},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			// a threshold of 0.4, half of it 0.2
			rulesState{spki: 1.6, npki: 0, since: tt.since - 1, rr: []int64{250}, rrOK: []int64{250}}.set(d)
			d.live -= tt.flat
			_, t2 := d.thresholds()
			exactly(t, "half the threshold", t2, 0.2)
			for _, c := range tt.cands {
				v := c.v
				if v == 0 {
					v = t2
				}
				d.noise = append(d.noise, peak{v: v, i: d.lastQRS + c.at})
			}
			if tt.corr != 0 {
				d.tmplN = 8
				copy(d.tmpl, bump(d, 1))
				putCorr(t, d, d.locate(d.lastQRS+tt.cands[0].at), tt.corr)
			}
			search, last := d.search, d.lastQRS
			d.searchBack()
			if tt.want == 0 {
				if len(d.out) != 0 {
					t.Fatalf("beats %v; want none", d.out)
				}
				if d.search != search+float64(len(d.win)) || d.spki != 1.6 || d.npki != 0 {
					t.Errorf("search-back after %g, levels %g and %g; want %g, 1.6 and 0", d.search, d.spki, d.npki, search+float64(len(d.win)))
				}
				return
			}
			at := last + tt.want
			var v float64
			for _, c := range tt.cands {
				if c.at == tt.want {
					v = c.v
				}
			}
			if len(d.out) != 1 || d.lastQRS != at {
				t.Fatalf("beats %v at the peak %d; want one at %d", d.out, d.lastQRS, at)
			}
			if !tt.restart {
				if want := 0.25*v + 0.75*1.6; math.Abs(d.spki-want) > 1e-12 || d.npki != 0 {
					t.Errorf("levels %g and %g; want %g and 0", d.spki, d.npki, want)
				}
				return
			}
			var others []float64
			for _, c := range tt.cands {
				if c.at != tt.want {
					others = append(others, c.v)
				}
			}
			if d.spki != v || math.Abs(d.npki-mean(others)) > 1e-12 {
				t.Errorf("levels %g and %g; want them from %g and %g", d.spki, d.npki, v, mean(others))
			}
		})
	}
}

// TestQRSRescue checks that a candidate the noise veto held is taken
// before the next beat when their complexes resemble each other
// (correlation 0.5 or more), at least 200 ms before it, and that the
// largest such candidate is the one compared.
func TestQRSRescue(t *testing.T) {
	tests := []struct {
		name   string
		at     []int64 // the vetoed candidates, samples before the new beat
		v      []float64
		shape  float64 // the new beat's complex: the candidates' shape times this
		vetoed bool
		want   int64 // the candidate taken; 0 for none
	}{
		{"alike", []int64{150}, []float64{1}, 1, true, 150},
		{"upside down", []int64{150}, []float64{1}, -1, true, 0},
		{"not vetoed", []int64{150}, []float64{1}, 1, false, 0},
		{"200 ms before", []int64{51}, []float64{1}, 1, true, 0},
		{"a sample earlier", []int64{52}, []float64{1}, 1, true, 52},
		{"the largest of two", []int64{150, 100}, []float64{1, 2}, 1, true, 100},
		{"the largest of two, first", []int64{150, 100}, []float64{2, 1}, 1, true, 150},
		{"the first of two equal", []int64{150, 100}, []float64{1, 1}, 1, true, 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			i := rulesState{spki: 1, npki: 0.1, since: 400, rr: []int64{250}, rrOK: []int64{250}}.set(d)
			ri := d.locate(i)
			for k, at := range tt.at {
				p := peak{v: tt.v[k], i: i - at, vetoed: tt.vetoed}
				d.noise = append(d.noise, p)
				// a vetoed complex: the bump, shifted so that the largest
				// candidate's is the one that matches
				a := 0.0
				if tt.v[k] == slices.Max(tt.v) {
					a = 1
				}
				shapeAt(d, d.locate(p.i), bump(d, a))
			}
			shapeAt(d, ri, bump(d, tt.shape))
			d.rescue(i, ri)
			if tt.want == 0 {
				if len(d.out) != 0 {
					t.Errorf("beats %v; want none", d.out)
				}
				return
			}
			if len(d.out) != 1 || d.lastQRS != i-tt.want {
				t.Errorf("beats %v, the last at peak %d; want one at %d", d.out, d.lastQRS, i-tt.want)
			}
		})
	}
}

// TestNewQRSDetector checks the detector's windows in samples, each the
// duration its rule names, at the rate of /Meas/HR and at the lowest ECG
// rate.
func TestNewQRSDetector(t *testing.T) {
	tests := []struct {
		fs                                     float64
		win, refrac, tWave, fall, margin, half int64
		lag                                    int64
	}{
		// 150 ms, 200 ms, 360 ms, 95 ms, 30 ms, 60 ms and 8 ms
		{256, 38, 51, 92, 24, 8, 15, 2},
		{125, 19, 25, 45, 11, 4, 8, 1},
	}
	for _, tt := range tests {
		d := NewQRSDetector(tt.fs)
		got := []int64{int64(len(d.win)), d.refrac, d.tWave, d.fall, d.margin(), d.half, d.lag, int64(len(d.tmpl)), int64(len(d.seg))}
		want := []int64{tt.win, tt.refrac, tt.tWave, tt.fall, tt.margin, tt.half, tt.lag, 2*tt.half + 1, 2*tt.half + 1 + 2*tt.lag}
		if !slices.Equal(got, want) {
			t.Errorf("%g Hz: integration, refractory, T-wave, fall, margin, half-width, lag, template, segment %v; want %v", tt.fs, got, want)
		}
		if d.lastQRS != -1 || d.lastR != -1 || !d.Learning() {
			t.Errorf("%g Hz: a new detector's last beat at %d (R %d), learning %v; want -1, -1, true", tt.fs, d.lastQRS, d.lastR, d.Learning())
		}
	}
}

// TestQRSBandPassDelay checks the detector's band-pass delay against one
// measured another way: the group delay of the band-pass (5 to 15 Hz) at
// 10 Hz, where a QRS complex's energy peaks, from the phases of its steady
// answers to tones either side (the slope of the phase with frequency),
// plus the 5-point derivative's 2 samples. The delay locates the
// complexes and aligns their templates, so within a sample and a half.
func TestQRSBandPassDelay(t *testing.T) {
	// phase returns the phase of the band-pass's steady answer to a tone
	// of f Hz, relative to the tone.
	phase := func(d *QRSDetector, fs, f float64) float64 {
		c := slices.Clone(d.bp)
		c.Reset()
		w := 2 * math.Pi * f / fs
		var s, co float64
		for n := range int(8 * fs) {
			y := c.Step(math.Sin(w * float64(n)))
			if n >= int(4*fs) { // the filters' start-up has gone
				s += y * math.Sin(w*float64(n))
				co += y * math.Cos(w*float64(n))
			}
		}
		return math.Atan2(co, s)
	}
	for _, fs := range []float64{125, 128, 200, 250, 256, 500, 512} { // the ECG's rates
		d := NewQRSDetector(fs)
		const f1, f2 = 9.5, 10.5
		turn := math.Remainder(phase(d, fs, f2)-phase(d, fs, f1), 2*math.Pi)
		group := -turn / (2 * math.Pi * (f2 - f1) / fs) // samples
		if got := float64(d.delay - 2); math.Abs(got-group) > 1.5 {
			t.Errorf("%g Hz: band-pass delay %v samples (%d with the derivative's); its group delay at 10 Hz is %.1f", fs, got, d.delay, group)
		}
	}
}

// TestQRSLearnLevels checks the first 2 s: the levels come from the
// integrated signal past the filters' start-up (the first 150 ms), the
// signal level a third of its largest value, the noise level half its
// average, and learning ends with the sample at 2 s.
func TestQRSLearnLevels(t *testing.T) {
	d := NewQRSDetector(rulesFs)
	bp := slices.Clone(d.bp)
	bp.Reset()
	var hist [4]float64
	var sq []float64
	var m []float64
	for n := range 2*rulesFs + 1 {
		x := 0.0
		if n == 0 {
			x = 10 // a step: a start-up larger than anything after
		}
		if n > 100 && n%50 == 0 {
			x = 1
		}
		if n < 2*rulesFs && !d.learning {
			t.Fatalf("learning ended before sample %d", n)
		}
		d.Feed(x)
		b := bp.Step(x)
		der := (2*b + hist[0] - hist[2] - 2*hist[3]) * rulesFs / 8
		hist[3], hist[2], hist[1], hist[0] = hist[2], hist[1], hist[0], b
		sq = append(sq, der*der)
		s := 0.0
		for _, v := range sq[max(len(sq)-len(d.win), 0):] {
			s += v
		}
		m = append(m, s/float64(len(d.win)))
	}
	if d.learning {
		t.Fatalf("learning after 2 s")
	}
	past := m[len(d.win)+1:]
	if d.learnN != len(past) {
		t.Errorf("learnt from %d samples; want %d", d.learnN, len(past))
	}
	if want := slices.Max(past) / 3; math.Abs(d.spki-want) > 1e-9*want {
		t.Errorf("signal level %g; want %g", d.spki, want)
	}
	if want := mean(past) / 2; math.Abs(d.npki-want) > 1e-9*want {
		t.Errorf("noise level %g; want %g", d.npki, want)
	}
	if m[len(d.win)] <= slices.Max(past) {
		t.Fatalf("setup: the start-up is no larger than what follows")
	}
}

// TestQRSRelearn checks that the detector learns again after 5 s of a
// signal without a beat, counted from the last beat or from the end of
// learning, and forgets its last beat; that a flat line does not count,
// however long: the 5 s count from the signal's return, unless no beat
// came since the levels were learnt, which are then learnt again from the
// return; and that learning goes on over a flat line, which teaches
// nothing, and ends 2 s into a signal.
func TestQRSRelearn(t *testing.T) {
	// a signal without beats: a sine of 10 Hz and 0.1 mV, whose integrated
	// signal stands far above the floor and far below the signal level
	sine := func(n int64) float64 { return 0.1 * math.Sin(2*math.Pi*10*float64(n)/rulesFs) }
	tests := []struct {
		name string
		last int64 // the last beat's peak, -1 for none
		on   bool  // the signal went on to the end of idle's zeros: they are no flat line
		flat int64 // seconds of a flat line before the signal
		now  bool  // the levels learnt again at the signal's return
	}{
		{"no beat, the signal going on", -1, true, 0, false},
		{"a beat, the signal going on", 900, true, 0, false},
		{"no beat, then a flat line", -1, false, 0, true},
		{"a beat, then a flat line", 900, false, 0, false},
		{"a beat, then a flat line of 20 s", 900, false, 20, false},
	}
	for _, tt := range tests {
		d := idle(t)
		d.spki = 1e9 // no peak is a beat
		d.lastQRS, d.lastR = tt.last, tt.last
		learnt := d.since // the end of idle's learning
		if tt.on {
			d.live = d.n - 1
		}
		for range tt.flat * rulesFs {
			d.Feed(0)
			if d.learning {
				t.Fatalf("%s: learning again at sample %d, on the flat line", tt.name, d.n-1)
			}
		}
		// idle's zeros are a flat line, unless the signal went on: the
		// signal returns in the first samples of the sine, past the
		// band-pass's start
		start := d.n
		for d.n < start+10*rulesFs && !d.learning {
			d.Feed(sine(d.n))
		}
		if tt.on && d.since != learnt {
			t.Errorf("%s: the 5 s count from sample %d; want %d, the end of learning", tt.name, d.since, learnt)
		}
		if !tt.on && (d.since < start || d.since > start+d.delay) {
			t.Errorf("%s: the signal's return at sample %d; want it within %d samples of %d", tt.name, d.since, d.delay, start)
		}
		from := max(tt.last, d.since) + 5*rulesFs + 1
		if tt.now {
			from = d.since
		}
		if !d.learning || d.learnFrom != from || d.lastQRS != -1 || d.lastR != -1 {
			t.Errorf("%s: learning %v from %d, last beat %d (R %d); want true from %d, and -1 (-1)", tt.name, d.learning, d.learnFrom, d.lastQRS, d.lastR, from)
		}
		if tt.flat > 0 {
			continue
		}
		// learning again takes 2 s from there, past the filters' start-up
		from = d.learnFrom
		for d.n <= from+2*rulesFs {
			if !d.learning {
				t.Fatalf("%s: learning again ended at sample %d, before 2 s", tt.name, d.n-1)
			}
			d.Feed(sine(d.n))
		}
		if d.learning || d.learnN != 2*rulesFs-len(d.win) {
			t.Errorf("%s: learning again %v after 2 s, from %d samples; want false, from %d", tt.name, d.learning, d.learnN, 2*rulesFs-len(d.win))
		}
		// and the next 5 s count from its end
		d.spki = 1e9
		learnt = d.n - 1
		for d.n <= learnt+5*rulesFs+1 && !d.learning {
			d.Feed(sine(d.n))
		}
		if !d.learning || d.learnFrom != learnt+5*rulesFs+1 {
			t.Errorf("%s: after learning again, learning %v from %d; want true from %d, 5 s and a sample after learning ended at %d", tt.name, d.learning, d.learnFrom, learnt+5*rulesFs+1, learnt)
		}
	}
	// a new detector on a flat line learns nothing, and learns on
	d := NewQRSDetector(rulesFs)
	for range 5 * rulesFs {
		d.Feed(0)
	}
	if !d.learning || d.learnFrom != 4*rulesFs {
		t.Errorf("5 s of a flat line: learning %v from %d; want true, from %d", d.learning, d.learnFrom, 4*rulesFs)
	}
	for d.n < 7*rulesFs {
		d.Feed(sine(d.n))
	}
	if d.learning || d.spki < flatFloor {
		t.Errorf("2 s of a signal after a flat line: learning %v, signal level %g; want false, at the floor or above", d.learning, d.spki)
	}
}

// TestQRSPeaks checks how peaks of the integrated signal are found: a
// maximum (the first of equal values) is a peak when the signal falls
// under half of it, or 95 ms after it; a larger peak within 200 ms replaces
// the one waiting (an equal one does not); the peak waiting is classified
// 200 ms after it.
func TestQRSPeaks(t *testing.T) {
	tests := []struct {
		name  string
		m     []float64 // the integrated signal from sample 0 of the test
		cand  float64   // the peak waiting after the last value, 0 for none
		candI int64
	}{
		{"rising", []float64{0.1, 0.2, 0.5}, 0, 0},
		{"at half the maximum", []float64{0.1, 0.5, 0.3, 0.25}, 0, 0},
		{"under half", []float64{0.1, 0.5, 0.3, 0.24}, 0.5, 1},
		{"the first of equal values", []float64{0.1, 0.5, 0.5, 0.1}, 0.5, 1},
		{"94 ms after the maximum", append([]float64{0.5}, repeat(0.4, 23)...), 0, 0},
		{"95 ms after", append([]float64{0.5}, repeat(0.4, 24)...), 0.5, 0},
		{"a larger one replaces it", []float64{0.5, 0.1, 0.6, 0.1}, 0.6, 2},
		{"an equal one does not", []float64{0.5, 0.1, 0.5, 0.1}, 0.5, 0},
		{"a smaller one does not", []float64{0.5, 0.1, 0.4, 0.1}, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			n0 := d.n
			d.pkV, d.pkI, d.candV = 0, n0-1, 0
			for k, m := range tt.m {
				d.peaks(m, n0+int64(k))
			}
			if d.candV != tt.cand || tt.cand > 0 && d.candI != n0+tt.candI {
				t.Errorf("peak waiting %g at %d; want %g at %d", d.candV, d.candI-n0, tt.cand, tt.candI)
			}
		})
	}
	// classified 200 ms after its peak, not a sample before
	d := idle(t)
	rulesState{spki: 1}.set(d)
	n0 := d.n
	d.pkV, d.pkI, d.candV, d.candI = 0, n0, 0.5, n0
	for k := range d.refrac {
		d.peaks(0, n0+k)
	}
	if d.candV != 0.5 || len(d.out) != 0 {
		t.Fatalf("a peak waiting 199 ms: waiting %g, beats %v; want 0.5 and none", d.candV, d.out)
	}
	d.peaks(0, n0+d.refrac)
	if d.candV != 0 || len(d.out) != 1 || d.lastQRS != n0 {
		t.Errorf("a peak waiting 200 ms: waiting %g, beats %v at %d; want 0 and one at %d", d.candV, d.out, d.lastQRS, n0)
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for k := range out {
		out[k] = v
	}
	return out
}

// TestQRSFlush checks that Flush decides the peak waiting and the maximum
// not yet a peak: both when 200 ms apart, else the larger (the first of
// equal ones), and nothing when there is neither.
func TestQRSFlush(t *testing.T) {
	tests := []struct {
		name       string
		candI, pkI int64 // samples after the start of the test
		candV, pkV float64
		wantAt     []int64 // the beats' integrated-signal peaks
	}{
		{"a maximum alone", 0, 10, 0, 0.5, []int64{10}},
		{"a peak waiting alone", 10, 20, 0.5, 0, []int64{10}},
		{"200 ms apart: both", 0, 51, 0.5, 0.6, []int64{0}}, // the second is the tail of the first
		{"closer: the larger", 0, 50, 0.5, 0.6, []int64{50}},
		{"closer, equal: the first", 0, 10, 0.5, 0.5, []int64{0}},
		{"neither", 0, 0, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			rulesState{spki: 1, npki: 0.1}.set(d)
			n0 := d.n - 100
			d.candV, d.candI, d.pkV, d.pkI = tt.candV, n0+tt.candI, tt.pkV, n0+tt.pkI
			d.Flush()
			if len(d.out) != len(tt.wantAt) || len(tt.wantAt) > 0 && d.lastQRS != n0+tt.wantAt[len(tt.wantAt)-1] {
				t.Errorf("beats %v, the last at %d; want %d, the last at %v", d.out, d.lastQRS-n0, len(tt.wantAt), tt.wantAt)
			}
			if tt.candV+tt.pkV == 0 && d.npki != 0.1 {
				t.Errorf("noise level %g after nothing was flushed; want 0.1", d.npki)
			}
			if d.candV != 0 || d.pkV != 0 {
				t.Errorf("after Flush: waiting %g, maximum %g; want 0 and 0", d.candV, d.pkV)
			}
		})
	}
	d := NewQRSDetector(rulesFs)
	d.Feed(1)
	d.Flush()
	if len(d.out) != 0 || !d.learning {
		t.Errorf("Flush while learning: beats %v, learning %v; want none, true", d.out, d.learning)
	}
}

// TestQRSFeedSearchBack checks that Feed looks back once the time since
// the last beat passes the search-back interval, and waits while a peak
// above the threshold is pending.
func TestQRSFeedSearchBack(t *testing.T) {
	tests := []struct {
		name  string
		since int64   // samples from the last beat to the sample fed
		cand  float64 // a peak waiting, 10 samples old; 0 for none, -1 for the threshold
		want  int     // beats
	}{
		{"past the interval", 416, 0, 1},
		{"no interval yet", -416, 0, 0},
		{"at it", 415, 0, 0},
		{"a peak above the threshold waiting", 416, 0.5, 0},
		{"a peak at the threshold waiting", 416, -1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			rr := []int64{250}
			since := tt.since
			if since < 0 {
				rr, since = nil, -since
			}
			i := rulesState{spki: 1, npki: 0.1, since: since, rr: rr, rrOK: rr}.set(d) + 1
			d.lastQRS = i - since
			d.search = 415
			t1, _ := d.thresholds()
			d.noise = append(d.noise, peak{v: 0.3, i: d.lastQRS + 200})
			if tt.cand != 0 {
				d.candV, d.candI = tt.cand, i-10
				if tt.cand < 0 {
					d.candV = t1
				}
			}
			d.Feed(0)
			if len(d.out) != tt.want {
				t.Errorf("beats %v; want %d", d.out, tt.want)
			}
		})
	}
}

// TestQRSLearnTemplate checks the templates: the first 8 complexes
// averaged evenly, then each that resembles the template with a weight of
// 0.1; a complex unlike it goes to the other shape, the first 4 evenly,
// then with a weight of 0.2, as long as they resemble each other; one
// unlike both starts the other shape again. Before 8 beats every complex
// resembles the template.
func TestQRSLearnTemplate(t *testing.T) {
	d := idle(t)
	n := len(d.tmpl)
	shape := func(a, w float64) []float64 {
		b := make([]float64, n)
		for k := range b {
			q := float64(k-n/2) / w
			b[k] = float64(float32(a * math.Exp(-q*q/2))) // as the ring holds it
		}
		return b
	}
	demean := func(x []float64) []float64 {
		y := slices.Clone(x)
		mu := mean(y)
		for k := range y {
			y[k] -= mu
		}
		return y
	}
	near := func(what string, got, want []float64) {
		t.Helper()
		for k := range want {
			if math.Abs(got[k]-want[k]) > 1e-12 {
				t.Fatalf("%s: value %d is %g; want %g", what, k, got[k], want[k])
			}
		}
	}
	r := d.n - 4*d.half
	put := func(x []float64) {
		clear(d.bpv)
		shapeAt(d, r, x)
	}
	want := make([]float64, n)
	for k := range 8 {
		x := shape(1+0.1*float64(k), 3+0.2*float64(k))
		put(x)
		if d.corr(r) != 1 {
			t.Fatalf("complex %d before the template is learnt: correlation %g; want 1", k, d.corr(r))
		}
		d.learn(r)
		for j, v := range demean(x) {
			want[j] += (v - want[j]) / float64(k+1)
		}
		near("template of the first complexes", d.tmpl, want)
	}
	x := shape(2, 3.5)
	put(x)
	d.learn(r)
	for j, v := range demean(x) {
		want[j] += 0.1 * (v - want[j])
	}
	near("template after a ninth complex", d.tmpl, want)
	if d.tmplN != 9 || d.altN != 0 {
		t.Fatalf("%d complexes in the template, %d in the other shape; want 9 and 0", d.tmplN, d.altN)
	}
	// the other shape: upside down
	alt := make([]float64, n)
	for k := range 5 {
		x := shape(-1-0.1*float64(k), 3+0.3*float64(k))
		put(x)
		if d.likeAlt(r) != (k > 0) {
			t.Fatalf("complex %d upside down: like the other shape %v; want %v", k, d.likeAlt(r), k > 0)
		}
		d.learn(r)
		w := 0.2
		if k < 4 {
			w = 1 / float64(k+1)
		}
		for j, v := range demean(x) {
			alt[j] += w * (v - alt[j])
		}
		near("the other shape", d.alt, alt)
	}
	near("template after the other shape", d.tmpl, want)
	// unlike both: the other shape starts again from it
	x = make([]float64, n)
	for k := range x {
		x[k] = float64(float32(math.Sin(float64(k) * 2 * math.Pi * 3 / float64(n))))
	}
	put(x)
	if d.corr(r) >= 0.5 || d.likeAlt(r) {
		t.Fatalf("setup: a complex like one of the shapes")
	}
	d.learn(r)
	if d.altN != 1 {
		t.Errorf("the other shape after a complex unlike both: %d complexes; want 1", d.altN)
	}
	near("the other shape started again", d.alt, demean(x))
}

// TestQRSGapInNoise holds the look into a long interval of an irregular
// rhythm in noise at both sides of its thresholds: up to a noise level of a
// tenth of the signal level, and above a twentieth only for a candidate
// that looks like a beat (not held as small, at least 0.6 times as steep as
// the typical beat, correlating 0.9 or more with the template).
func TestQRSGapInNoise(t *testing.T) {
	irregular := []int64{250, 250, 250, 250, 250, 250, 250, 330}
	const at = 180 // the candidate, samples before the beat that ends the gap
	tests := []struct {
		name  string
		npki  float64
		small bool
		slope float64 // the candidate's; the typical beat's is 10
		corr  float64 // the candidate's with the template; -1 for upside down
		beats int
	}{
		{"noise at a tenth, like a beat: taken", 0.1, false, 8, 1, 2},
		{"more noise: not taken", 0.11, false, 8, 1, 1},
		{"noise at a twentieth, unlike a beat: taken", 0.05, false, 8, -1, 2},
		{"more noise, unlike a beat: not taken", 0.06, false, 8, -1, 1},
		{"0.6 times as steep as the typical beat: taken", 0.06, false, 6, 1, 2},
		{"a little less steep: not taken", 0.06, false, 5.875, 1, 1},
		{"correlating 0.905: taken", 0.06, false, 8, 0.905, 2},
		{"correlating 0.895: not taken", 0.06, false, 8, 0.895, 1},
		{"held as small: not taken", 0.06, true, 8, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			i := rulesState{spki: 1, npki: tt.npki, since: 365, rr: irregular, rrOK: []int64{250}, slope: 8, slopes: []float64{10}, lastSlope: 10}.set(d)
			d.tmplN = 8
			copy(d.tmpl, bump(d, 1))
			c := i - at
			d.bpv[int((c-10)%int64(d.hist))] = float32(tt.slope * 4 / rulesFs)
			// the candidate's complex: a bump too small to change its
			// steepness, upside down for -1, or with an odd part, as much
			// as brings the correlation to tt.corr (by bisection)
			put := func(a, e float64) float64 {
				shape := bump(d, a)
				for k := range shape {
					q := float64(k-len(shape)/2) / 4
					shape[k] += e * a * q * math.Exp(-q*q/2)
				}
				shapeAt(d, d.locate(c), shape)
				return d.corr(d.locate(c))
			}
			switch {
			case tt.corr < 0:
				put(-0.002, 0)
			case tt.corr < 1:
				lo, hi := 0.0, 10.0
				for range 60 {
					if e := (lo + hi) / 2; put(0.002, e) > tt.corr {
						lo = e
					} else {
						hi = e
					}
				}
				put(0.002, lo)
			default:
				put(0.002, 0)
			}
			if s := d.maxSlope(c); s != tt.slope {
				t.Fatalf("setup: the candidate's steepest slope %g; want %g", s, tt.slope)
			}
			if r := d.corr(d.locate(c)); tt.corr < 0 && r >= 0 || tt.corr >= 0 && math.Abs(r-tt.corr) > 0.001 {
				t.Fatalf("setup: the candidate correlates %g with the template; want %g", r, tt.corr)
			}
			_, t2 := d.thresholds()
			d.noise = append(d.noise, peak{v: 2 * t2, i: c, small: tt.small})
			if tt.small {
				// classify would take it as the small peak held in a long
				// interval: look into the gap alone
				d.searchGap(i)
				if len(d.out) != tt.beats-1 {
					t.Errorf("%d beats; want %d", len(d.out), tt.beats-1)
				}
				return
			}
			d.classify(0.5, i)
			if len(d.out) != tt.beats {
				t.Errorf("%d beats; want %d", len(d.out), tt.beats)
			}
		})
	}
}

// TestQRSLargestCandidate checks that each search-back takes the largest
// of its candidates, the first of equal ones.
func TestQRSLargestCandidate(t *testing.T) {
	irregular := []int64{250, 250, 250, 250, 250, 250, 250, 330}
	type cand struct {
		at int64 // samples after the last beat
		v  float64
	}
	tests := []struct {
		name  string
		cands []cand
		want  int64
	}{
		{"the larger first", []cand{{100, 0.4}, {150, 0.3}, {200, 0.25}}, 100},
		{"the larger last", []cand{{100, 0.3}, {150, 0.25}, {200, 0.4}}, 200},
		{"equal", []cand{{100, 0.3}, {150, 0.3}}, 100},
	}
	for _, search := range []string{"gap", "small", "back"} {
		for _, tt := range tests {
			t.Run(search+", "+tt.name, func(t *testing.T) {
				d := idle(t)
				i := rulesState{spki: 1, npki: 0.01, since: 365, rr: irregular, rrOK: []int64{250}}.set(d)
				for _, c := range tt.cands {
					d.noise = append(d.noise, peak{v: c.v, i: d.lastQRS + c.at, small: search == "small"})
				}
				want := d.lastQRS + tt.want
				switch search {
				case "gap":
					d.searchGap(i)
				case "small":
					d.takeSmall(i)
				case "back":
					d.searchBack()
				}
				if len(d.out) != 1 || d.lastQRS != want {
					t.Errorf("beats %v, the last at %d; want one at %d", d.out, d.lastQRS, want)
				}
			})
		}
	}
}

// TestQRSLearning checks Learning: true while the levels are learnt and
// until the first beat, false after it.
func TestQRSLearning(t *testing.T) {
	d := NewQRSDetector(rulesFs)
	if !d.Learning() {
		t.Errorf("a new detector: not learning")
	}
	d = idle(t)
	if !d.Learning() {
		t.Errorf("levels learnt, no beat yet: not learning")
	}
	d.lastR = 0
	if d.Learning() {
		t.Errorf("a beat at sample 0: learning")
	}
	d.learning = true
	if !d.Learning() {
		t.Errorf("learning again after a beat: not learning")
	}
}

// TestQRSOnTime holds the test of a recovery candidate's time at both
// sides of its thresholds: within a fifth of a whole number k of regular
// intervals (250 samples) after the last beat.
func TestQRSOnTime(t *testing.T) {
	tests := []struct {
		after int64 // samples from the last beat's R peak
		want  bool
	}{
		{0, false}, {100, false}, {199, false}, {200, false}, {201, true}, {250, true}, {299, true}, {300, false},
		{374, false}, {375, false}, // half way: k is 2, 0.5 intervals off
		{400, false}, {401, true}, {500, true}, {599, true}, {600, false},
		// from 2.5 intervals on the windows of k and k+1 overlap: every
		// time is on time
		{625, true}, {650, true}, {900, true}, {1300, true},
	}
	for _, tt := range tests {
		d := idle(t)
		d.lastR = 100
		d.rrOK = append(d.rrOK[:0], 250)
		if got := d.onTime(d.lastR + tt.after); got != tt.want {
			t.Errorf("%d samples after the last beat, regular interval 250: on time %v; want %v", tt.after, got, tt.want)
		}
	}
}

// TestQRSRecoveryShape checks what the recovery after two and a half
// intervals does with its candidate once the template is learnt: one like
// the template or the second template, or on time, is a beat and the
// levels restart from it; one unlike both and not on time is no beat, the
// levels restart from it all the same, and the candidates are forgotten.
func TestQRSRecoveryShape(t *testing.T) {
	tests := []struct {
		name    string
		like    bool // the candidate's complex is the template's shape
		likeAlt bool // the second template is the candidate's shape
		onTime  bool
		want    bool
	}{
		{"like the template", true, false, false, true},
		{"like the second template", false, true, false, true},
		{"unlike both, on time", false, false, true, true},
		{"unlike both, not on time: an artefact", false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			rulesState{spki: 1.6, npki: 0, since: 625, rr: []int64{250}, rrOK: []int64{250}}.set(d)
			copy(d.tmpl, bump(d, 1))
			d.tmplN = 8
			// an alternating complex: unlike the smooth template at every lag
			alt := make([]float64, len(d.tmpl))
			for k := range alt {
				alt[k] = float64(1 - 2*(k%2))
			}
			if tt.likeAlt {
				copy(d.alt, alt)
				d.altN = 1
			}
			at := d.lastQRS + 150
			d.noise = append(d.noise, peak{v: 0.1, i: at}, peak{v: 0.0249, i: d.lastQRS + 200}, peak{v: 0.025, i: d.lastQRS + 300})
			r := d.locate(at)
			if tt.like {
				shapeAt(d, r, bump(d, 0.5))
			} else {
				shapeAt(d, r, alt)
			}
			if c := d.corr(r); (c >= 0.5) != tt.like {
				t.Fatalf("correlation with the template %g; want it at 0.5 or more: %v", c, tt.like)
			}
			// the regular interval: the candidate's distance from the last
			// beat (on time) or two thirds of it (1.5 intervals: not)
			rr := r - d.lastR
			if !tt.onTime {
				rr = rr * 2 / 3
			}
			d.rrOK = append(d.rrOK[:0], rr)
			if d.onTime(r) != tt.onTime || float64(d.n-d.lastQRS) <= 2.5*mean(d.rrOK) {
				t.Fatalf("on time %v, %d samples after the last beat; want %v and past 2.5 intervals of %d", d.onTime(r), d.n-d.lastQRS, tt.onTime, rr)
			}
			search := d.search
			d.searchBack()
			if d.spki != 0.1 || math.Abs(d.npki-0.02495) > 1e-12 {
				t.Errorf("levels %g and %g; want them from 0.1 and 0.02495", d.spki, d.npki)
			}
			if !tt.want {
				if len(d.out) != 0 || len(d.noise) != 0 || d.search != search+float64(len(d.win)) {
					t.Errorf("beats %v, %d candidates, search-back after %g; want none, none and %g", d.out, len(d.noise), d.search, search+float64(len(d.win)))
				}
				return
			}
			if len(d.out) != 1 || d.lastQRS != at {
				t.Errorf("beats %v at the peak %d; want one at %d", d.out, d.lastQRS, at)
			}
		})
	}
}

// TestQRSFlatLineBounds holds the flat line's rules at their bounds: the
// integrated signal at the floor is a signal, under it none; the signal
// returns when it comes 2 s and a sample after the last at the floor (the
// 5 s without a beat count from there, and levels no beat came of are
// learnt again); the detector learns again after 5 s without a beat only
// while the signal was at the floor within the last 2 s; and learning
// ends on a window whose largest value is at the floor.
func TestQRSFlatLineBounds(t *testing.T) {
	// feed gives d a sample whose integrated signal is m exactly: the
	// detector holds zeros, its running sum is set
	feed := func(t *testing.T, d *QRSDetector, m float64) {
		t.Helper()
		if d.wsum != 0 || d.win[d.wi] != 0 || d.bp.Step(0) != 0 {
			t.Fatal("setup: the detector holds more than zeros")
		}
		d.wsum = m * float64(len(d.win))
		exactly(t, "the integrated signal", d.wsum/float64(len(d.win)), m)
		d.Feed(0)
	}
	under := math.Nextafter(flatFloor, 0)
	tests := []struct {
		name   string
		m      float64
		gap    int64 // samples since the integrated signal was last at the floor
		beat   bool  // a beat came since the levels were learnt
		live   bool  // the sample is at the floor
		back   bool  // the signal returns
		learns bool  // the levels are learnt again
	}{
		{"at the floor, 2 s after the last", flatFloor, 2 * rulesFs, true, true, false, false},
		{"at the floor, 2 s and a sample after the last: the signal returns", flatFloor, 2*rulesFs + 1, true, true, true, false},
		{"under the floor, 2 s and a sample after the last: none", under, 2*rulesFs + 1, true, false, false, false},
		{"the signal returns, no beat since the levels were learnt: learnt again", flatFloor, 2*rulesFs + 1, false, true, true, true},
		{"at the floor, 2 s after the last, no beat: the signal goes on", flatFloor, 2 * rulesFs, false, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			if tt.beat {
				d.lastQRS, d.lastR = d.n-100, d.n-100
			}
			n := d.n
			since := n - 10 // not n, whatever the sample does
			d.since, d.live = since, n-tt.gap
			feed(t, d, tt.m)
			if got := d.live == n; got != tt.live {
				t.Errorf("at the floor %v (the last at %d); want %v", got, d.live, tt.live)
			}
			if got := d.since == n; got != tt.back || (!tt.back && d.since != since) {
				t.Errorf("the 5 s count from %d; want %d", d.since, map[bool]int64{true: n, false: since}[tt.back])
			}
			if got := d.learning && d.learnFrom == n; got != tt.learns {
				t.Errorf("learning %v from %d; want learning again from %d %v", d.learning, d.learnFrom, n, tt.learns)
			}
		})
	}
	// 5 s without a beat: learnt again while the signal was at the floor
	// 2 s ago, not 2 s and a sample ago
	for _, gap := range []int64{2 * rulesFs, 2*rulesFs + 1} {
		d := idle(t)
		for range 5 * rulesFs { // a flat line: no learning again
			d.Feed(0)
		}
		n := d.n
		d.since, d.live = n-6*rulesFs, n-gap
		feed(t, d, 0)
		if want := gap <= 2*rulesFs; d.learning != want || (want && d.learnFrom != n) {
			t.Errorf("5 s without a beat, the signal at the floor %d samples ago: learning %v from %d; want %v from %d", gap, d.learning, d.learnFrom, want, n)
		}
	}
	// learning ends on a window whose largest value is at the floor, and
	// goes on from a window under it
	for _, top := range []float64{flatFloor, under} {
		d := NewQRSDetector(rulesFs)
		for d.n < 2*rulesFs {
			d.Feed(0)
		}
		d.learnMax = top
		feed(t, d, 0)
		if want := top < flatFloor; d.learning != want || (want && d.learnFrom != 2*rulesFs) || (!want && d.spki != top/3) {
			t.Errorf("learning to %g: learning %v from %d, signal level %g; want %v", top, d.learning, d.learnFrom, d.spki, want)
		}
	}
}
