package replay

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// drop is a simulated signal drop in a corpus record, from from to to: the
// input scaled by gain around the record's baseline base (an electrode that
// moved, and the QRS complexes shrank), or, with gain 0, held flat at its
// value when the drop began (an electrode off). The records have few drops
// of their own, so the rules that recover from one are judged on these. An
// amplitude drop with a floor (withFloors) scales the input by gain and adds
// white Gaussian noise, so that the noise stays at the level the input had
// before the drop: an electrode that moved, whose amplifier noise does not
// shrink with the signal.
type drop struct {
	from, to time.Duration
	gain     float64
	base     float64 // the record's baseline before the drop (withBaselines); 0 for none
	floor    float64 // the noise's standard deviation at the record's own rate; 0 for none
	seed     uint64  // of the floor's noise
}

// dropsOf returns the drops of a record named name (its database's
// directory and record name), of the given length, at places drawn from
// seed and the name: after a stretch of 20 to 100 s from 10 s on, and then
// of 30 to 150 s after each drop, a drop of 20 to 90 s to a gain of 0.05 to
// 0.35, or one time in four a flat stretch of 0.5 to 8 s. The same seed
// and name give the same drops, on every lead and at every rate.
func dropsOf(seed uint64, name string, length time.Duration) []drop {
	rng := rand.New(rand.NewPCG(seed, nameHash(name)))
	u := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
	}
	var out []drop
	for t := 10*time.Second + u(20, 100); t < length; {
		d := drop{from: t}
		if rng.IntN(4) == 0 {
			d.to = t + u(0.5, 8)
		} else {
			d.to, d.gain = t+u(20, 90), 0.05+0.3*rng.Float64()
		}
		out = append(out, d)
		t = d.to + u(30, 150)
	}
	return out
}

// nameHash is a record's name hashed, for seeds.
func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// levelWindow is the stretch before a drop whose baseline the drop keeps
// and whose noise level its floor keeps.
const levelWindow = 10 * time.Second

// window returns the indices [lo, hi) of the samples of ecg in the
// levelWindow before time t.
func window(ecg *Series, t time.Duration) (lo, hi int) {
	lo, _ = slices.BinarySearch(ecg.T, t-levelWindow)
	hi, _ = slices.BinarySearch(ecg.T, t)
	return lo, min(hi, len(ecg.Axes[0]))
}

// withBaselines returns drops with each amplitude drop's baseline: the
// median of the series ecg's samples (its own, at its own rate) in the
// 10 s before the drop, which the QRS complexes, a tenth of the time,
// hardly move; missing samples (NaN) are left out, and a drop with none
// keeps a baseline of 0. A drop scales the input around its baseline, so
// that a record's DC offset stays where it was: scaled with the rest, an
// offset many times the QRS (14 mV under a QRS of 0.3 mV in QT sele0116's
// second lead) falls and rises with the gain, and the front end's 0.5 Hz
// high-pass makes that a swing of the baseline of several mV at either end
// of the drop, an artefact of the drop's own.
func withBaselines(drops []drop, ecg *Series) []drop {
	out := slices.Clone(drops)
	x := ecg.Axes[0]
	var v []float64
	for k := range out {
		d := &out[k]
		if d.gain == 0 {
			continue
		}
		lo, hi := window(ecg, d.from)
		v = append(v[:0], x[lo:hi]...)
		if m, ok := median(v); ok {
			d.base = m
		}
	}
	return out
}

// median returns the median of the values of v that are not NaN (missing
// samples), reordering v, and false if there are none.
func median(v []float64) (float64, bool) {
	v = slices.DeleteFunc(v, math.IsNaN)
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	return v[len(v)/2], true
}

// withFloors returns drops with a noise floor under each amplitude drop of
// factor times the noise level of the series ecg (its own samples, at its
// own rate) in the 10 s before the drop: the standard deviation of white
// noise that would give the median absolute value of the series' second
// difference x[i] − (x[i−1] + x[i+1])/2, a high-pass residual that the QRS
// complexes, a tenth of the time, hardly move. Each floor's noise is drawn
// from seed and the drop's place: every lead of a record gets the same
// noise, each at its own level.
func withFloors(drops []drop, ecg *Series, factor float64, seed uint64) []drop {
	out := slices.Clone(drops)
	x := ecg.Axes[0]
	var r []float64
	for k := range out {
		d := &out[k]
		if d.gain == 0 {
			continue
		}
		lo, hi := window(ecg, d.from)
		r = r[:0]
		for i := max(lo, 1); i < min(hi, len(x)-1); i++ {
			// a missing sample (NaN) leaves no residual: median skips it
			r = append(r, math.Abs(x[i]-(x[i-1]+x[i+1])/2))
		}
		m, ok := median(r)
		if !ok {
			continue
		}
		// for white noise of deviation σ the residual's deviation is
		// σ√1.5, and a normal variable's median absolute value 0.6745σ
		d.floor = factor * m / 0.6745 / math.Sqrt(1.5)
		d.seed = seed ^ uint64(d.from)
	}
	return out
}

// flat returns the flat stretches among drops, where no beat can be found:
// their beats and detections are not scored.
func flat(drops []drop) []span {
	var out []span
	for _, d := range drops {
		if d.gain == 0 {
			out = append(out, span{d.from, d.to})
		}
	}
	return out
}

// rampTime is how long an amplitude drop takes to fall and to rise again.
const rampTime = 500 * time.Millisecond

// dropState applies drops to a stream of samples in time order.
type dropState struct {
	k    int     // the drop now or next
	in   bool    // in drop k's flat stretch, holding held
	held float64 // the input when the flat stretch began
	// scale is the floors' deviation at the stream's rate over theirs at
	// the record's: √(rate / record's rate), the same noise power per Hz
	scale float64
	noise *rand.Rand // of drop k's floor
}

// apply returns the input x at time t as drops change it.
func (s *dropState) apply(drops []drop, t time.Duration, x float64) float64 {
	for s.k < len(drops) && t >= drops[s.k].to {
		s.k++
		s.in, s.noise = false, nil
	}
	if s.k == len(drops) || t < drops[s.k].from {
		return x
	}
	if d := drops[s.k]; d.gain > 0 {
		// the gain changes over rampTime at either end, around the
		// baseline: a step of the baseline, or of the record's DC offset,
		// would be a drop's artefact of its own
		ramp := min(float64(t-d.from), float64(d.to-t), float64(rampTime)) / float64(rampTime)
		g := 1 - (1-d.gain)*ramp
		y := d.base + (x-d.base)*g
		if d.floor == 0 {
			return y
		}
		if s.noise == nil {
			s.noise = rand.New(rand.NewPCG(d.seed, uint64(s.k)))
		}
		// the input's own noise σ scaled by g and the floor's of factor f
		// make g²σ² + (1 − g²)f²σ²: σ² at every g with factor 1
		return y + d.floor*s.scale*math.Sqrt(max(0, 1-g*g))*s.noise.NormFloat64()
	}
	if !s.in {
		s.held, s.in = x, true
	}
	return s.held
}

// TestDropFloors checks that a drop's noise floor is the record's own noise
// level, read past the QRS-like spikes, and that within the drop the input
// keeps that level while the drop without a floor shrinks it.
func TestDropFloors(t *testing.T) {
	const rate, sigma = 128.0, 0.02
	rng := rand.New(rand.NewPCG(7, 7))
	ecg := &Series{Rate: rate, Axes: [][]float64{nil}}
	for i := range int(60 * rate) {
		x := sigma * rng.NormFloat64()
		if i%128 < 6 { // a complex of 1 mV, 6 samples a second
			x += 1
		}
		ecg.T = append(ecg.T, time.Duration(float64(i)/rate*float64(time.Second)))
		ecg.Axes[0] = append(ecg.Axes[0], x)
	}
	drops := []drop{{from: 20 * time.Second, to: 50 * time.Second, gain: 0.1}, {from: 52 * time.Second, to: 54 * time.Second}}
	floored := withFloors(drops, ecg, 1, 3)
	// the complexes, 5% of the samples, raise the median a little
	if got := floored[0].floor; math.Abs(got-sigma) > 0.15*sigma {
		t.Errorf("floor %g; want the record's noise, %g, within 15%%", got, sigma)
	}
	// 4 s of the 10 s before the drop missing: the rest gives the level
	missing := &Series{Rate: rate, T: ecg.T, Axes: [][]float64{slices.Clone(ecg.Axes[0])}}
	for i := int(12 * rate); i < int(16*rate); i++ {
		missing.Axes[0][i] = math.NaN()
	}
	if got := withFloors(drops, missing, 1, 3)[0].floor; math.Abs(got-sigma) > 0.15*sigma {
		t.Errorf("floor %g with samples missing; want the record's noise, %g, within 15%%", got, sigma)
	}
	if floored[1].floor != 0 || drops[0].floor != 0 {
		t.Errorf("floors %g on a flat stretch and %g on the drops given; want 0 and 0", floored[1].floor, drops[0].floor)
	}
	for _, tt := range []struct {
		drops []drop
		want  float64
	}{
		{drops, 0.1 * sigma},
		{floored, floored[0].floor},
	} {
		s := dropState{scale: 1}
		var sum2 float64
		var n int
		for i, x := range ecg.Axes[0] {
			y := s.apply(tt.drops, ecg.T[i], x)
			if ecg.T[i] >= 25*time.Second && ecg.T[i] < 45*time.Second && i%128 >= 6 {
				sum2 += y * y
				n++
			}
		}
		if got := math.Sqrt(sum2 / float64(n)); math.Abs(got-tt.want) > 0.05*tt.want {
			t.Errorf("deviation within the drop %g; want %g within 5%%", got, tt.want)
		}
	}
	// the same drops give the same samples
	a, b := dropState{scale: 1}, dropState{scale: 1}
	for i, x := range ecg.Axes[0] {
		if ya, yb := a.apply(floored, ecg.T[i], x), b.apply(floored, ecg.T[i], x); ya != yb {
			t.Fatalf("sample %d: %g and %g from the same drops", i, ya, yb)
		}
	}
}

// whiteSeries returns an ECG series of white Gaussian noise of deviation
// sigma at rate, length long.
func whiteSeries(rate, sigma float64, length time.Duration, seed uint64) *Series {
	rng := rand.New(rand.NewPCG(seed, seed))
	s := &Series{Channel: ECG, Rate: rate, Axes: [][]float64{nil}}
	for i := range int(length.Seconds() * rate) {
		s.T = append(s.T, time.Duration(float64(i)/rate*float64(time.Second)))
		s.Axes[0] = append(s.Axes[0], sigma*rng.NormFloat64())
	}
	return s
}

// TestDropFloorRates checks that a drop's noise floor, played at any rate
// through the front end as the detector gets it, keeps the level that the
// record's own noise had there before the drop: the floor has the record's
// power per hertz at every rate.
func TestDropFloorRates(t *testing.T) {
	const sigma = 0.02
	for _, recRate := range []float64{128, 360} { // SVDB's rate and MIT-BIH's
		r := &Recording{Length: 120 * time.Second}
		r.Series[ECG] = whiteSeries(recRate, sigma, r.Length, 5)
		drops := withFloors([]drop{{from: 40 * time.Second, to: 100 * time.Second, gain: 0.05}}, r.Series[ECG], 1, 3)
		for _, rate := range []float64{125, 256, 512} {
			var sum2 [2]float64
			var n [2]int
			i := 0
			playECG(r, rate, drops, func(y float64) {
				at := time.Duration(float64(i) / rate * float64(time.Second))
				i++
				k := -1
				switch {
				case at >= 20*time.Second && at < 38*time.Second:
					k = 0 // before the drop
				case at >= 50*time.Second && at < 90*time.Second:
					k = 1 // within it, past the ramp and the filters' settling
				}
				if k >= 0 {
					sum2[k] += y * y
					n[k]++
				}
			})
			before, within := math.Sqrt(sum2[0]/float64(n[0])), math.Sqrt(sum2[1]/float64(n[1]))
			// the record's noise, resampled, loses a little of its power
			// near 40 Hz: measured 3% to 9% less than the floor
			if ratio := within / before; math.Abs(ratio-1) > 0.15 {
				t.Errorf("a record at %g Hz played at %g Hz: noise %.4f before the drop and %.4f within it (%.2f times); want the same within 15%%",
					recRate, rate, before, within, ratio)
			}
		}
	}
}

// TestDropFloorRamps checks that a drop's noise floor keeps the noise's
// level while the gain falls and rises again, and that the drops leave the
// input outside them as it is.
func TestDropFloorRamps(t *testing.T) {
	const rate, sigma = 1000.0, 0.02
	ecg := whiteSeries(rate, sigma, 60*time.Second, 9)
	var drops []drop
	for from := 5 * time.Second; from < 55*time.Second; from += 5 * time.Second {
		drops = append(drops, drop{from: from, to: from + 2*time.Second, gain: 0.1, floor: sigma, seed: uint64(from)})
	}
	var spans, ramps []span
	for _, d := range drops {
		spans = append(spans, span{d.from, d.to})
		ramps = append(ramps, span{d.from, d.from + rampTime}, span{d.to - rampTime, d.to})
	}
	s := dropState{scale: 1}
	var sum2 float64
	var n int
	for i, x := range ecg.Axes[0] {
		y := s.apply(drops, ecg.T[i], x)
		switch {
		case inSpans(ecg.T[i], ramps):
			sum2 += y * y
			n++
		case !inSpans(ecg.T[i], spans) && y != x:
			t.Fatalf("at %v, outside the drops: %g; want the input, %g", ecg.T[i], y, x)
		}
	}
	if got := math.Sqrt(sum2 / float64(n)); math.Abs(got-sigma) > 0.05*sigma {
		t.Errorf("deviation within the ramps %g; want the record's noise, %g, within 5%%", got, sigma)
	}
}

// TestDropBaselines checks that a drop scales the input around the
// record's baseline before it, so that a record with a DC offset many
// times its QRS (as QT sele0116's second lead, 14 mV under 0.3 mV) keeps
// its baseline in and around the drop, plain or with a floor, both in the
// samples and after the front end; and that a flat stretch makes no step of
// the offset either.
func TestDropBaselines(t *testing.T) {
	const rate, sigma, offset, qrs = 128.0, 0.01, 14.0, 0.3
	spike := func(i int) bool { return i%128 < 6 } // a complex, 6 samples a second
	ecg := whiteSeries(rate, sigma, 60*time.Second, 11)
	for i := range ecg.Axes[0] {
		ecg.Axes[0][i] += offset
		if spike(i) {
			ecg.Axes[0][i] += qrs
		}
	}
	plain := withBaselines([]drop{{from: 20 * time.Second, to: 50 * time.Second, gain: 0.1}, {from: 52 * time.Second, to: 54 * time.Second}}, ecg)
	if got := plain[0].base; math.Abs(got-offset) > sigma/4 {
		t.Errorf("baseline %g; want the offset, %g, within %g", got, offset, sigma/4)
	}
	if plain[1].base != 0 {
		t.Errorf("baseline %g on a flat stretch; want 0", plain[1].base)
	}
	// 4 s of the 10 s before the drop missing: the rest gives the
	// baseline; all 10 s missing: none
	missing := &Series{Rate: rate, T: ecg.T, Axes: [][]float64{slices.Clone(ecg.Axes[0])}}
	for i := int(12 * rate); i < int(16*rate); i++ {
		missing.Axes[0][i] = math.NaN()
	}
	if got := withBaselines(plain[:1], missing)[0].base; math.Abs(got-offset) > sigma/4 {
		t.Errorf("baseline %g with samples missing; want the offset, %g, within %g", got, offset, sigma/4)
	}
	for i := int(10 * rate); i < int(20*rate); i++ {
		missing.Axes[0][i] = math.NaN()
	}
	if got := withBaselines([]drop{{from: 20 * time.Second, to: 50 * time.Second, gain: 0.1}}, missing)[0].base; got != 0 {
		t.Errorf("baseline %g with the 10 s before the drop missing; want 0", got)
	}

	r := &Recording{Length: 60 * time.Second}
	r.Series[ECG] = ecg
	for _, tt := range []struct {
		name  string
		drops []drop
	}{
		{"plain", plain[:1]},
		{"with a floor", withFloors(plain[:1], ecg, 1, 3)},
		// a flat stretch, which has no baseline of its own, holds the
		// input where it began, offset and all: no step of the offset
		{"flat", withBaselines([]drop{{from: 30500 * time.Millisecond, to: 37500 * time.Millisecond}}, ecg)},
	} {
		// in the samples: the baseline within an amplitude drop, past its
		// ramps
		if d := tt.drops[0]; d.gain > 0 {
			s := dropState{scale: 1}
			var sum float64
			var n int
			for i, x := range ecg.Axes[0] {
				y := s.apply(tt.drops, ecg.T[i], x)
				if ecg.T[i] >= d.from+time.Second && ecg.T[i] < d.to-time.Second && !spike(i) {
					sum += y
					n++
				}
			}
			if got := sum / float64(n); math.Abs(got-offset) > sigma {
				t.Errorf("%s: baseline within the drop %g; want the offset, %g, within %g", tt.name, got, offset, sigma)
			}
		}
		// after the front end: the median of every second from 5 s
		// before the amplitude drop to 8 s after it (the flat stretch
		// within them) stays at 0 (the complexes, whose mean the
		// high-pass takes out, lower it by about 0.01 mV), where scaling
		// the offset swings it by 1 to 2 mV at either end, and a flat
		// stretch at 0 steps it by the offset
		const out = 256.0
		var y []float64
		playECG(r, out, tt.drops, func(v float64) { y = append(y, v) })
		for sec := 15; sec < 58; sec++ {
			if m, _ := median(slices.Clone(y[int(float64(sec)*out):int(float64(sec+1)*out)])); math.Abs(m) > 0.05 {
				t.Errorf("%s: at %d s, after the front end, the baseline is %.3f mV; want 0 within 0.05", tt.name, sec, m)
			}
		}
	}
}
