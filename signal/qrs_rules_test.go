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
func idle(t *testing.T) *QRSDetector {
	t.Helper()
	d := NewQRSDetector(rulesFs)
	for range 3 * rulesFs {
		d.Feed(0)
	}
	if d.learning || d.spki != 0 || len(d.out) != 0 {
		t.Fatalf("a detector fed 3 s of zeros: learning %v, signal level %g, %d beats", d.learning, d.spki, len(d.out))
	}
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
	d.slopeN = copy(d.slopes[:], s.slopes)
	d.lastSlope = s.lastSlope
	clear(d.bpv)
	if s.slope > 0 {
		// a lone value a of the band-passed signal has the derivative
		// 2a*fs/8 at its own sample, the largest of the four it makes
		d.bpv[int((i-10)%int64(d.hist))] = s.slope * 4 / rulesFs
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

// TestQRSMaxSlope checks the steepest slope against the derivative Feed
// computes, over random input, at every distance from the stream's start.
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
		b := bp.Step(x)
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
		x = append(x, v)
		d.Feed(v)
		for _, i := range []int64{int64(n), int64(n) - 40, int64(n) + 30} {
			c := i - d.delay - win/2
			lo := max(c-win/2-d.margin, int64(n)-int64(d.hist)+1, 0)
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
// band-passed input, with zeros outside what the ring holds.
func TestQRSComplex(t *testing.T) {
	d := NewQRSDetector(rulesFs)
	bp := slices.Clone(d.bp)
	bp.Reset()
	rng := rand.New(rand.NewPCG(7, 8))
	var b []float64
	for n := range 6 * rulesFs {
		x := rng.NormFloat64()
		d.Feed(x)
		b = append(b, bp.Step(x))
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
		d.bpv[int((from+int64(k))%int64(d.hist))] = v
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

// TestQRSClassify holds each rule classify applies to a peak of the
// integrated signal at both sides of its thresholds: the refractory period,
// the threshold, the T-wave window and its steepness tests, the noise veto
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

		// the noise veto: early, in noise, unlike the template
		{"early, noisy, unlike the template: vetoed", with(func(s *rulesState) { s.since, s.npki = 150, 0.03 }), 0.5, true, nil, 0, 1, false, true},
		{"early, noise at a fortieth of the signal, unlike: a beat", with(func(s *rulesState) { s.since, s.npki = 150, 0.025 }), 0.5, true, nil, 1, 0, false, false},
		{"at 80% of the interval, noisy, unlike: a beat", with(func(s *rulesState) { s.since, s.npki = 200, 0.03 }), 0.5, true, nil, 1, 0, false, false},
		{"a sample earlier, noisy, unlike: vetoed", with(func(s *rulesState) { s.since, s.npki = 199, 0.03 }), 0.5, true, nil, 0, 1, false, true},
		{"early, noisy, like the template: a beat", with(func(s *rulesState) { s.since, s.npki = 150, 0.03 }), 0.5, false, nil, 1, 0, false, false},

		// the small-peak veto
		{"small, shallow, early, in noise: held", small(func(*rulesState) {}), 0.45, false, nil, 0, 1, true, false},
		{"small, noise at a twentieth of the signal: a beat", small(func(s *rulesState) { s.npki = 0.05 }), 0.45, false, nil, 1, 0, false, false},
		{"half the signal level: a beat", small(func(*rulesState) {}), 0.5, false, nil, 1, 0, false, false},
		{"0.6 times as steep as the typical beat: a beat", small(func(s *rulesState) { s.slope, s.slopes = 6, []float64{10} }), 0.45, false, nil, 1, 0, false, false},
		{"a little less steep: held", small(func(s *rulesState) { s.slope, s.slopes = 5.9, []float64{10} }), 0.45, false, nil, 0, 1, true, false},
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
		{"irregular, more noise: none", with(func(s *rulesState) { s.since, s.rr, s.npki = 365, irregular, 0.06 }), 0.5, false, []kept{{180, 0.3, false}}, 1, 0, false, false},
		{"irregular, the candidate at half the threshold: none", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{180, -1, false}}, 1, 0, false, false},
		{"irregular, the candidate inside the T-wave window: none", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{365 - 91, 0.3, false}}, 1, 0, false, false},
		{"irregular, the candidate at its end: a beat", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{365 - 92, 0.3, false}}, 2, 0, false, false},
		{"irregular, the candidate 200 ms before: none", with(func(s *rulesState) { s.since, s.rr = 365, irregular }), 0.5, false, []kept{{51, 0.3, false}}, 1, 0, false, false},

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
