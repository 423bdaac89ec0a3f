package signal

import "math"

// QRSDetector finds heartbeats in an ECG, after Pan and Tompkins, "A
// real-time QRS detection algorithm" (IEEE Trans. Biomed. Eng. 32(3), 1985),
// and Hamilton's open-source ECG analysis (OSEA), for any sample rate:
//
//  1. a 5-15 Hz band-pass (Butterworth high-pass and low-pass of order 2),
//  2. the five-point derivative,
//  3. squaring,
//  4. moving-window integration over 150 ms,
//  5. peaks of the integrated signal: a maximum is a peak once the signal
//     falls to half of it, or 95 ms after it (as OSEA finds them), and a
//     peak waits 200 ms for a larger one, which replaces it, before it is
//     classified. So a complex of a fast rhythm (ventricular tachycardia)
//     is a peak of its own even when the next one rises higher,
//  6. classification against adaptive signal and noise levels (threshold =
//     noise + a quarter of the difference), learnt over the first 2 s,
//  7. a peak within 360 ms of the previous beat whose steepest slope is
//     under half the reference steepness is a T wave, and so is one that
//     comes before half the regular RR interval with under four fifths of
//     it (a premature beat that conducts normally is as steep as the
//     others). The reference is the previous beat's steepest slope, or
//     three quarters of the typical beat's (the median of the last 8) when
//     that is more: after a wide ventricular beat, less steep than the
//     others, its own late part is no beat. A T wave stays a candidate for
//     search-back when it is at least three quarters as steep as the
//     typical beat (an early, wide ventricular beat looks like one); a less
//     steep one does not, nor does one below the threshold less than half
//     as steep as the reference,
//  8. search-back: when no beat came for 166% of the regular RR average,
//     the largest candidate above half the threshold since the last beat is
//     a beat. Search-back waits while a peak above the threshold is waiting
//     its 200 ms, and looks back when that peak is taken: it looks for the
//     beat missed before the next one, not for a stand-in of a beat still to
//     be confirmed. In an irregular rhythm (one of the last 8 intervals off
//     the regular average by more than -8% or +16%) the average is that of
//     every interval, and a beat is looked for also when the interval that
//     a new beat ends is longer than 140% of that average: the largest
//     candidate above half the threshold, past the last beat's T-wave
//     window and 200 ms before the new beat. In atrial fibrillation an
//     early beat that the detector missed is followed by no pause. The
//     average of every interval only while the noise level is under a
//     twentieth of the signal level, the look into a long interval only
//     while it is under a tenth: noise makes the rhythm look irregular, and
//     search-back in noise finds noise. Above a twentieth the candidate must
//     look like a beat: not held back as small (rule 11), at least 0.6
//     times as steep as the typical beat, and correlating 0.9 or more with
//     the template (the fibrillation waves of atrial fibrillation raise
//     the noise level),
//  9. recovery: after two and a half intervals without a beat, the levels
//     restart from a candidate four times the others' level, or twice it
//     when it correlates 0.95 or more with the template, so a QRS that
//     shrank tenfold is found again within a few beats; the candidate is a
//     beat when it resembles the template or the second template, or
//     comes on time: within a fifth of a whole number of regular intervals
//     after the last beat, as a beat after missed ones does, of whatever
//     shape (a ventricular or fusion beat); one unlike both and not on
//     time is an artefact, and the candidates before it are forgotten.
//     Otherwise the levels stay as they are, however long the pause,
//  10. noise veto: while the signal is not clean (the noise level above a
//     fortieth of the signal level), a candidate that comes before 80% of
//     the regular RR average and does not resemble the running QRS template
//     (correlation of the band-passed complex under 0.5) is not taken as a
//     beat at once. It stays a candidate for search-back: an early beat of
//     another shape that a pause follows (a ventricular beat and its
//     compensatory pause) is still found, while an artefact, after which
//     the rhythm goes on, is not. When the next beat resembles the vetoed
//     candidate (correlation 0.5 or more), both are beats of that other
//     shape (ventricular beats in a row) and the candidate is taken first. A
//     candidate that resembles the second template, of the beats unlike the
//     first, is not vetoed: in atrial fibrillation no pause follows a
//     ventricular beat, and beats of a shape seen before are beats. On a
//     clean signal early beats of another shape are taken at once, unless
//     they are under half the signal level and less than 0.6 times as
//     steep as the typical beat in a regular rhythm (the long quiet
//     stretches of a slow rhythm keep the noise level low), and beats that
//     come on time are taken whatever their shape,
//  11. small-peak veto: while the noise level is above a twentieth of the
//     signal level, a candidate that comes before 80% of the regular RR
//     average, under half the signal level and less than 0.6 times as steep
//     as the typical beat, is not taken as a beat at once either, even when
//     it resembles the template: the noise of moving electrodes holds
//     complexes of a QRS's shape, but smaller and less steep. It stays a
//     candidate for search-back, not for the noise veto's rescue (it
//     resembles the next beat, as that noise does), and the beat that ends
//     an interval longer than 125% of the average of every interval takes
//     the largest such candidate first (past the T-wave window and 200 ms
//     before it): noise comes between beats that come on time, while a
//     small beat that is missed leaves a long interval, in an irregular
//     rhythm too,
//  12. a flat line: nothing under an absolute floor of the integrated
//     signal (flatFloor, a signal of a few µV, under an ECG amplifier's
//     noise) is a beat, at once or by search-back, recovery or a look into
//     a long interval; it counts as noise only. The levels are not learnt
//     from a flat line (learning goes on until its 2 s hold something at
//     the floor), the recovery restarts them only while the signal goes on
//     (something at the floor within the last regular interval: the last
//     complex before a flat line stands above it, whatever it is), and a
//     flat line (2 s under the floor) is no pause of the heart: the
//     detector does not learn its levels again on it, and its 5 s without
//     a beat count again from the signal's return, which it meets with the
//     levels and templates it had, or, when no beat came of those levels
//     (learnt from a front end settling before the electrodes touched),
//     learns them again from. So a flat line, exact, rounded or
//     quantised (one unit either way at 200 units per mV), gives no beat,
//     from the start of a stream or after beats, however long.
//
// The template is the average band-passed complex (120 ms around the R
// peak) of the beats that resemble it, learnt from the first beats; the
// second template is the average complex of the beats unlike the first, as
// long as they resemble each other (one unlike both starts it again); the
// correlation allows for a misalignment of 8 ms.
//
// The beat is placed at the R peak: the sample of the detector's input
// farthest from the local baseline within the integration window, moved back
// by the band-pass's group delay. Flush decides a beat still waiting for
// confirmation at the end of a stream. A detector that finds no beat for 5 s
// of a signal (a QRS that shrank under its levels, for example) learns its
// levels again; a flat line does not count (rule 12). Feed does not
// allocate.
type QRSDetector struct {
	fs     float64
	bp     Cascade
	delay  int64 // band-pass delay, samples
	win    []float64
	wi     int
	wsum   float64
	d      [4]float64 // band-passed history for the derivative
	n      int64      // samples fed
	hist   int
	h      int       // where sample n goes in the rings: n % hist
	xv     []float32 // input values, ring
	bpv    []float32 // band-passed values, ring
	refrac int64
	tWave  int64
	fall   int64 // how long after its top a maximum is a peak, samples
	search float64

	learnFrom int64
	learnMax  float64
	learnSum  float64
	learnN    int
	learning  bool
	// where 5 s without a beat count from when no beat came since: the
	// end of learning, or the signal's return after a flat line
	since int64
	live  int64 // the last sample whose integrated signal was at flatFloor or above

	candV float64 // the peak waiting to be classified, 0 for none
	candI int64
	pkV   float64 // the integrated signal's maximum, not yet a peak
	pkI   int64

	spki, npki float64
	lastQRS    int64 // integrated-signal peak of the last beat, -1 before the first
	lastR      int64
	lastSlope  float64
	slopes     [8]float64 // the steepest slopes of the last beats, a ring
	slopeN     int        // beats whose slope is in slopes
	rr         []int64    // the last 8 intervals
	rrOK       []int64    // the last 8 regular intervals
	noise      []peak     // noise peaks since the last beat

	tmpl  []float64 // running QRS template: band-passed complex, mean removed
	seg   []float64 // a complex being compared, with d.lag either side
	ref   []float64 // a vetoed complex, as long as the template
	tmplN int       // beats learnt into the template
	alt   []float64 // the other shape: the running complex of beats unlike the template
	altN  int       // beats learnt into alt since it last started again

	half int64 // template half-width, samples
	lag  int64 // largest misalignment the correlation allows, samples

	out []int64
}

// flatFloor is the level of the integrated signal, (mV/s)², under which
// there is no ECG: what a sine of 10 Hz (the band-pass's middle) and 7 µV
// gives, under an ECG amplifier's noise of about 10 µV. A QRS of 1 mV
// gives 130 to 330, one of 20 µV 0.05 to 0.13; a flat line, exact or
// rounded, nothing; the noise of one unit either way of a recording at 200
// units per mV (MIT-BIH's), 0.03 to 0.08 at 125 to 512 Hz.
const flatFloor = 0.1

// flatTime is how long the integrated signal stays under flatFloor for a
// flat line, s: longer than an interval of a heart at 30 a minute.
const flatTime = 2

// maxPeaks is how many candidate peaks since the last beat search-back
// chooses from; beyond it the smallest is dropped.
const maxPeaks = 32

type peak struct {
	v      float64
	i      int64
	vetoed bool // by the noise veto, as unlike the template
	small  bool // by the noise veto, as small and shallow
}

// NewQRSDetector returns a detector for an ECG sampled at fs Hz (at least 100).
func NewQRSDetector(fs float64) *QRSDetector {
	hp, _ := Butterworth(HighPass, 2, 5, fs)
	lp, _ := Butterworth(LowPass, 2, 15, fs)
	d := &QRSDetector{
		fs:      fs,
		bp:      append(hp, lp...),
		win:     make([]float64, int(math.Round(0.15*fs))),
		hist:    int(4 * fs),
		refrac:  int64(0.2 * fs),
		tWave:   int64(0.36 * fs),
		fall:    int64(0.095 * fs),
		lastQRS: -1,
		lastR:   -1,
	}
	d.xv = make([]float32, d.hist)
	d.bpv = make([]float32, d.hist)
	d.noise = make([]peak, 0, maxPeaks)
	d.rr, d.rrOK = make([]int64, 0, 8), make([]int64, 0, 8)
	d.out = make([]int64, 0, 4) // beats not yet popped: Pop after every Feed leaves at most a few
	d.delay = bandPassDelay(d.bp, fs)
	d.half = int64(math.Round(0.06 * fs))
	d.lag = max(int64(math.Round(0.008*fs)), 1)
	d.tmpl = make([]float64, 2*d.half+1)
	d.seg = make([]float64, len(d.tmpl)+2*int(d.lag))
	d.ref = make([]float64, len(d.tmpl))
	d.alt = make([]float64, len(d.tmpl))
	d.bp.Reset()
	d.relearn(0)
	return d
}

// bandPassDelay returns the band-pass's group delay, in samples, as the
// centroid of its impulse response's energy, plus the derivative's delay.
func bandPassDelay(c Cascade, fs float64) int64 {
	c.Reset()
	var e, et float64
	for i := range int(fs) {
		x := 0.0
		if i == 0 {
			x = 1
		}
		y := c.Step(x)
		e += y * y
		et += y * y * float64(i)
	}
	return int64(math.Round(et/e)) + 2
}

func (d *QRSDetector) relearn(from int64) {
	d.learning, d.learnFrom = true, from
	d.learnMax, d.learnSum, d.learnN = 0, 0, 0
	d.lastQRS, d.lastR = -1, -1
	d.rr, d.rrOK, d.noise = d.rr[:0], d.rrOK[:0], d.noise[:0]
	d.tmplN, d.altN, d.slopeN = 0, 0, 0
}

// Learning reports whether the detector is still learning its levels, before
// its first beat.
func (d *QRSDetector) Learning() bool { return d.learning || d.lastR < 0 }

// Levels returns the detector's running signal and noise levels: the
// levels of the integrated signal's peaks taken as beats and as noise.
func (d *QRSDetector) Levels() (signal, noise float64) { return d.spki, d.npki }

// Feed processes one sample. Beats found are returned by Pop.
func (d *QRSDetector) Feed(x float64) {
	n := d.n
	d.n++
	b := d.bp.Step(x)
	// five-point derivative, scaled to units per second
	der := (2*b + d.d[0] - d.d[2] - 2*d.d[3]) * d.fs / 8
	d.d[3], d.d[2], d.d[1], d.d[0] = d.d[2], d.d[1], d.d[0], b
	h := d.h
	if d.h++; d.h == d.hist {
		d.h = 0
	}
	d.xv[h] = float32(x)
	d.bpv[h] = float32(b)
	sq := der * der
	d.wsum += sq - d.win[d.wi]
	d.win[d.wi] = sq
	if d.wi++; d.wi == len(d.win) {
		d.wi = 0
	}
	m := d.wsum / float64(len(d.win))
	if m < 0 { // rounding in the running sum
		m, d.wsum = 0, 0
	}

	if m >= flatFloor {
		if n-d.live > int64(flatTime*d.fs) { // the signal returns
			d.since = n
			if !d.learning && d.lastQRS < 0 {
				// no beat came of the levels before the flat line (learnt
				// from a front end settling, say): they are learnt again
				d.relearn(n)
			}
		}
		d.live = n
	}
	if d.learning {
		if n-d.learnFrom > int64(len(d.win)) { // skip the filters' start-up
			d.learnMax = math.Max(d.learnMax, m)
			d.learnSum += m
			d.learnN++
		}
		if n-d.learnFrom >= int64(2*d.fs) {
			if d.learnMax < flatFloor { // a flat line: nothing to learn from
				d.learnFrom, d.learnMax, d.learnSum, d.learnN = n, 0, 0, 0
				return
			}
			d.learning, d.since = false, n
			d.spki = d.learnMax / 3
			d.npki = d.learnSum / float64(max(d.learnN, 1)) / 2
			d.pkV, d.pkI, d.candV = m, n, 0
		}
		return
	}
	d.peaks(m, n)
	// search-back waits for a pending peak above the threshold: classify
	// looks back when it takes it
	if t1, _ := d.thresholds(); d.lastQRS >= 0 && len(d.rr) > 0 && float64(n-d.lastQRS) > d.search && !(d.candV > t1 && d.candI-d.lastQRS > d.refrac) {
		d.searchBack()
	}
	// the levels learnt again after 5 s of a signal without a beat; not on
	// a flat line, which is no pause of the heart and teaches nothing: the
	// 5 s count again from the signal's return
	if last := max(d.lastQRS, d.since); n-last > int64(5*d.fs) && n-d.live <= int64(flatTime*d.fs) {
		d.relearn(n)
	}
}

// peaks finds the peaks of the integrated signal m at sample n: a maximum
// is a peak once the signal falls to half of it, or 95 ms after it. A peak
// waits 200 ms, for a larger one that replaces it, before it is classified.
func (d *QRSDetector) peaks(m float64, n int64) {
	if d.candV > 0 && n-d.candI >= d.refrac {
		d.classify(d.candV, d.candI)
		d.candV = 0
	}
	if m > d.pkV {
		d.pkV, d.pkI = m, n
		return
	}
	if m >= d.pkV/2 && n-d.pkI < d.fall {
		return
	}
	if d.pkV > d.candV {
		d.candV, d.candI = d.pkV, d.pkI
	}
	d.pkV, d.pkI = m, n
}

func (d *QRSDetector) thresholds() (float64, float64) {
	t1 := d.npki + 0.25*(d.spki-d.npki)
	return t1, t1 / 2
}

// classify decides on a peak of the integrated signal at index i.
func (d *QRSDetector) classify(v float64, i int64) {
	t1, _ := d.thresholds()
	if d.lastQRS >= 0 && i-d.lastQRS <= d.refrac {
		d.npki = 0.125*v + 0.875*d.npki // the tail of the last beat
		return
	}
	if v > t1 && v >= flatFloor {
		s := d.maxSlope(i)
		if d.lastQRS >= 0 && i-d.lastQRS < d.tWave && d.tWaveLike(i, s) {
			d.npki = 0.125*v + 0.875*d.npki // a T wave, unless search-back finds otherwise
			// one less steep than the typical beat is no candidate for
			// search-back: in an irregular rhythm a pause may follow it
			if s >= 0.75*d.typicalSlope() {
				d.keep(peak{v: v, i: i})
			}
			return
		}
		r := d.locate(i)
		early := float64(i-d.lastQRS) < 0.8*mean(d.rrOK)
		// under half the signal level and less than 0.6 times as steep as
		// the typical beat
		small := early && v < 0.5*d.spki && s < 0.6*d.typicalSlope()
		// on a clean signal, only a small peak in a regular rhythm: the
		// quiet stretches of a slow rhythm keep the noise level low, and
		// an artefact in them would be taken
		if early && (d.npki > d.spki/40 || small && !d.irregular()) &&
			d.corr(r) < 0.5 && !d.likeAlt(r) {
			d.npki = 0.125*v + 0.875*d.npki // noise unlike a QRS, too early
			d.keep(peak{v: v, i: i, vetoed: true})
			return
		}
		if small && d.npki > d.spki/20 {
			d.npki = 0.125*v + 0.875*d.npki // noise like a small QRS, too early
			d.keep(peak{v: v, i: i, small: true})
			return
		}
		if len(d.rr) > 0 && float64(i-d.lastQRS) > d.search {
			d.searchBack()
		} else if d.irregular() && d.npki <= d.spki/10 && float64(i-d.lastQRS) > 1.4*mean(d.rr) {
			d.searchGap(i)
		}
		if float64(i-d.lastQRS) > 1.25*mean(d.rr) {
			d.takeSmall(i)
		}
		d.spki = 0.125*v + 0.875*d.spki
		d.rescue(i, r)
		d.beat(i, r, s)
		return
	}
	d.npki = 0.125*v + 0.875*d.npki
	if d.lastQRS >= 0 {
		// a T wave below the threshold is no candidate for search-back
		if i-d.lastQRS >= d.tWave || d.maxSlope(i) >= d.refSlope()/2 {
			d.keep(peak{v: v, i: i})
		}
	}
}

// searchGap looks, before the beat at i is taken, for a missed beat in the
// gap since the last: the largest candidate above half the threshold, past
// the T-wave window of the last beat and at least the refractory period
// before i. While the noise level is above a twentieth of the signal level,
// only a candidate that looks like a beat (likeBeat) is one: noise comes in
// the gaps too.
func (d *QRSDetector) searchGap(i int64) {
	_, t2 := d.thresholds()
	noisy := d.npki > d.spki/20
	best := d.largest(func(p peak) bool {
		return p.i-d.lastQRS >= d.tWave && i-p.i > d.refrac && p.v > t2 && p.v >= flatFloor && (!noisy || d.likeBeat(p))
	})
	if best < 0 {
		return
	}
	p := d.noise[best]
	d.spki = 0.25*p.v + 0.75*d.spki
	d.beat(p.i, d.locate(p.i), d.maxSlope(p.i))
}

// likeBeat reports whether a kept peak looks like a beat of the running
// template: not held back as small and shallow, at least 0.6 times as steep
// as the typical beat, and its complex correlating 0.9 or more with the
// template.
func (d *QRSDetector) likeBeat(p peak) bool {
	return !p.small && d.maxSlope(p.i) >= 0.6*d.typicalSlope() && d.corr(d.locate(p.i)) >= 0.9
}

// takeSmall looks, before the beat at i is taken, for a beat that the
// noise veto held back as small and shallow in the interval that i ends,
// longer than 125% of the average of every interval: the largest such peak
// past the T-wave window of the last beat and at least the refractory
// period before i. Noise comes between beats on time; a small beat that
// was missed leaves an interval longer than the others, also in an
// irregular rhythm.
func (d *QRSDetector) takeSmall(i int64) {
	best := d.largest(func(p peak) bool { return p.small && p.i-d.lastQRS >= d.tWave && i-p.i > d.refrac })
	if best < 0 {
		return
	}
	p := d.noise[best]
	d.beat(p.i, d.locate(p.i), d.maxSlope(p.i))
}

// largest returns the index in d.noise of the largest kept peak that ok
// accepts, the first of equal ones, or -1 when there is none.
func (d *QRSDetector) largest(ok func(peak) bool) int {
	best := -1
	for k, p := range d.noise {
		if ok(p) && (best < 0 || p.v > d.noise[best].v) {
			best = k
		}
	}
	return best
}

// keep keeps a peak for search-back, dropping the smallest kept when there
// is no room.
func (d *QRSDetector) keep(p peak) {
	v := p.v
	if len(d.noise) < cap(d.noise) {
		d.noise = append(d.noise, p)
		return
	}
	low := 0
	for k, p := range d.noise {
		if p.v < d.noise[low].v {
			low = k
		}
	}
	if v > d.noise[low].v {
		copy(d.noise[low:], d.noise[low+1:])
		d.noise[len(d.noise)-1] = p
	}
}

// rescue decides, before the beat at i (R peak at ri) is taken, on the
// largest candidate the noise veto kept since the last beat: when its
// complex resembles the new beat's, both are beats of another shape than
// the template (ventricular beats in a row), and it is taken first.
func (d *QRSDetector) rescue(i, ri int64) {
	best := d.largest(func(p peak) bool { return p.vetoed && i-p.i > d.refrac })
	if best < 0 {
		return
	}
	p := d.noise[best]
	r := d.locate(p.i)
	// the vetoed complex, mean removed, as the reference
	x := d.complex(r)[d.lag : int64(len(d.seg))-d.lag]
	copy(d.ref, x)
	mu := mean(d.ref)
	for k := range d.ref {
		d.ref[k] -= mu
	}
	if d.corrWith(d.ref, ri) >= 0.5 {
		d.beat(p.i, r, d.maxSlope(p.i))
	}
}

// searchBack looks for a missed beat since the last one: the largest peak
// above half the threshold.
func (d *QRSDetector) searchBack() {
	_, t2 := d.thresholds()
	best := d.largest(func(peak) bool { return true })
	if best < 0 || d.noise[best].v < flatFloor {
		// nothing to find: look again one interval later
		d.search += float64(len(d.win))
		return
	}
	p := d.noise[best]
	r := d.locate(p.i)
	if p.v > t2 {
		d.spki = 0.25*p.v + 0.75*d.spki
		d.beat(p.i, r, d.maxSlope(p.i))
		return
	}
	// the other peaks' level: when the largest stands well above it
	// (stands), after two and a half intervals without a beat, the signal
	// shrank (an electrode moved), and the levels start again from the
	// largest. It is a beat when it resembles a template or comes on time
	// (onTime), as a beat of a new shape after missed ones does; one unlike
	// both templates at another time is an artefact: no beat, and the
	// candidates before it are forgotten
	sum, n := 0.0, 0
	for k, q := range d.noise {
		if k != best {
			sum += q.v
			n++
		}
	}
	// and only while the signal goes on (something at the floor within the
	// last regular interval): the last complex before a flat line stands
	// above the flat line, whatever it is
	long := float64(d.n-d.lastQRS) > 2.5*mean(d.rrOK)
	live := float64(d.n-1-d.live) <= mean(d.rrOK) // d.n-1 is now
	if long && live && n > 0 && p.i-d.lastQRS >= d.tWave && d.stands(p.v, sum/float64(n), r) {
		d.spki, d.npki = p.v, sum/float64(n)
		if d.corr(r) < 0.5 && !d.likeAlt(r) && !d.onTime(r) {
			d.noise = d.noise[:0] // the artefact with them
			d.search += float64(len(d.win))
			return
		}
		d.beat(p.i, r, d.maxSlope(p.i))
		return
	}
	// nothing found: look again one integration window later, the levels
	// as they are (a long pause is no reason to take noise for a beat)
	d.search += float64(len(d.win))
}

// stands reports whether a recovery candidate of integrated peak v whose R
// peak is at r stands above the other candidates' level, others: four
// times it, or twice it when its complex correlates 0.95 or more with the
// template. A QRS that shrank keeps its shape, and its T wave and the
// noise, which shrank with it, may stand at a third or half of it.
func (d *QRSDetector) stands(v, others float64, r int64) bool {
	return v > 4*others || v > 2*others && d.corr(r) >= 0.95
}

// onTime reports whether an R peak at r comes within a fifth of a whole
// number k of regular intervals after the last beat's (|t/RR - k| < k/5):
// where a beat comes after k-1 missed ones in a regular rhythm. From 2.5
// intervals on, every time is on time (the windows of k and k+1 overlap).
// On the development records, their signal dropped to a tenth for a
// minute in every two, 105 of the 155 true recoveries of candidates unlike
// both templates came on time, and 18 of the 90 false ones.
func (d *QRSDetector) onTime(r int64) bool {
	t, rr := float64(r-d.lastR), mean(d.rrOK)
	k := math.Round(t / rr)
	return 5*math.Abs(t-k*rr) < k*rr
}

// tWaveLike reports whether a peak at i whose steepest slope is s, inside
// the T-wave window of the last beat, is to be taken for a T wave: when it
// is less than half as steep as the reference (refSlope), or, when it comes
// before half the regular RR interval, less than four fifths as steep.
func (d *QRSDetector) tWaveLike(i int64, s float64) bool {
	ls := d.refSlope()
	return s < ls/2 || s < 0.8*ls && float64(i-d.lastQRS) < 0.5*mean(d.rrOK)
}

// refSlope returns the steepness the T-wave tests compare a peak with: the
// last beat's, or three quarters of the typical beat's when that is more.
// After a wide ventricular beat, less steep than the others, its own late
// part or its T wave is then not taken for a beat.
func (d *QRSDetector) refSlope() float64 {
	return max(d.lastSlope, 0.75*d.typicalSlope())
}

// typicalSlope returns the median steepest slope of the last 8 beats, or 0
// before the first.
func (d *QRSDetector) typicalSlope() float64 {
	n := min(d.slopeN, len(d.slopes))
	var v [8]float64
	copy(v[:], d.slopes[:n])
	// insertion sort: eight values at most, no allocation
	for i := 1; i < n; i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	if n == 0 {
		return 0
	}
	return v[n/2]
}

// maxSlope returns the steepest slope of the QRS complex ending at i: the
// largest magnitude of the five-point derivative of the band-passed values,
// as Feed computes it.
func (d *QRSDetector) maxSlope(i int64) float64 {
	s := 0.0
	k := max(i-int64(len(d.win)), d.n-int64(d.hist)+5, 0)
	if k > i {
		return s
	}
	h := d.hist
	j := int(k % int64(h))
	// the ring positions of k-1, k-3 and k-4; before the first sample the
	// ring holds zeros, as the derivative's history did
	j1, j3, j4 := (j+h-1)%h, (j+h-3)%h, (j+h-4)%h
	for ; k <= i; k++ {
		b0, b1, b3, b4 := float64(d.bpv[j]), float64(d.bpv[j1]), float64(d.bpv[j3]), float64(d.bpv[j4])
		der := (2*b0 + b1 - b3 - 2*b4) * d.fs / 8
		if v := math.Abs(der); v > s || v != v { // math.Max(s, v): slopes are not negative
			s = v
		}
		j1, j3, j4 = j, next(j3, h), next(j4, h)
		j = next(j, h)
	}
	return s
}

// next returns the ring position after j in a ring of n.
func next(j, n int) int {
	if j++; j == n {
		return 0
	}
	return j
}

// locate returns the R peak of the QRS complex whose integrated-signal
// peak is at i: the sample of the input farthest from the line joining the
// ends of the window where, the band-pass delay corrected, the integration
// window saw the complex.
func (d *QRSDetector) locate(i int64) int64 {
	c := i - d.delay - int64(len(d.win))/2
	lo := max(c-int64(len(d.win))/2-d.margin(), d.n-int64(d.hist)+1, 0)
	hi := min(c+int64(len(d.win))/2, d.n-1)
	if hi <= lo {
		return max(i-d.delay, 0)
	}
	x0, x1 := float64(d.xv[int(lo%int64(d.hist))]), float64(d.xv[int(hi%int64(d.hist))])
	slope := (x1 - x0) / float64(hi-lo)
	r, best := lo, -1.0
	for k := lo; k <= hi; k++ {
		v := math.Abs(float64(d.xv[int(k%int64(d.hist))]) - x0 - slope*float64(k-lo))
		if v > best {
			best, r = v, k
		}
	}
	return r
}

// margin returns how far around the expected place the R peak is looked
// for: 30 ms, in samples.
func (d *QRSDetector) margin() int64 { return int64(math.Round(0.03 * d.fs)) }

// beat records a beat whose integrated-signal peak is at i and R peak at r.
func (d *QRSDetector) beat(i, r int64, slope float64) {
	if d.lastR >= 0 {
		rr := r - d.lastR
		if rr <= 0 {
			return
		}
		d.rr = push8(d.rr, rr)
		avg2 := mean(d.rrOK)
		if len(d.rrOK) == 0 {
			avg2 = mean(d.rr)
		}
		if float64(rr) > 0.92*avg2 && float64(rr) < 1.16*avg2 || len(d.rrOK) == 0 {
			d.rrOK = push8(d.rrOK, rr)
		}
		d.search = 1.66 * mean(d.rrOK)
		if d.irregular() && d.npki <= d.spki/20 {
			d.search = 1.66 * mean(d.rr) // irregular rhythm
		}
	}
	d.lastQRS, d.lastR, d.lastSlope = i, r, slope
	d.slopes[d.slopeN%len(d.slopes)] = slope
	d.slopeN++
	d.learn(r)
	d.noise = d.noise[:0]
	d.out = append(d.out, r)
}

// complex copies the band-passed values around the input sample r (the
// template's width and d.lag either way) into d.seg, 0 outside the history.
func (d *QRSDetector) complex(r int64) []float64 {
	// the band-passed value of input sample k is at k+delay-2: the
	// derivative's delay is not the band-pass's
	from := r - d.half - d.lag + d.delay - 2
	h := int64(d.hist)
	j := int(((from % h) + h) % h)
	for k := range d.seg {
		if at := from + int64(k); at < 0 || at <= d.n-h || at >= d.n {
			d.seg[k] = 0
		} else {
			d.seg[k] = float64(d.bpv[j])
		}
		if j++; j == d.hist {
			j = 0
		}
	}
	return d.seg
}

// learn adds the complex of a beat whose R peak is at r to the template:
// the first 8 beats evenly, then by an exponential average over about 10
// beats of those that resemble it. A beat unlike the template goes to the
// other shape, alt: the first 4 evenly, then over about 5, as long as they
// resemble each other; one unlike alt starts it again.
func (d *QRSDetector) learn(r int64) {
	if d.tmplN >= 8 && d.corr(r) < 0.5 {
		if d.altN > 0 && !d.likeAlt(r) {
			d.altN = 0
		}
		d.average(d.alt, d.altN, 4, 0.2, r)
		d.altN++
		return
	}
	d.average(d.tmpl, d.tmplN, 8, 0.1, r)
	d.tmplN++
}

// average adds the complex at r, mean removed, to the running template t
// that n complexes made: the first even of them evenly, then with weight w.
func (d *QRSDetector) average(t []float64, n, even int, w float64, r int64) {
	x := d.complex(r)[d.lag : int64(len(d.seg))-d.lag]
	mu := mean(x)
	if n < even {
		w = 1 / float64(n+1)
	}
	for k, v := range x {
		t[k] += w * (v - mu - t[k])
	}
}

// likeAlt reports whether the complex at r resembles the other shape, alt
// (correlation 0.5 or more), once alt has a beat.
func (d *QRSDetector) likeAlt(r int64) bool {
	return d.altN > 0 && d.corrWith(d.alt, r) >= 0.5
}

// corr returns the largest correlation coefficient between the template
// and the complex at r moved by up to d.lag samples either way, or 1 before
// the template is learnt.
func (d *QRSDetector) corr(r int64) float64 {
	if d.tmplN < 8 {
		return 1
	}
	return d.corrWith(d.tmpl, r)
}

// corrWith returns the largest correlation coefficient between tmpl (mean
// removed, as long as the template) and the complex at r moved by up to
// d.lag samples either way.
func (d *QRSDetector) corrWith(tmpl []float64, r int64) float64 {
	seg := d.complex(r)
	syy := 0.0
	for _, y := range tmpl {
		syy += y * y
	}
	best := -1.0
	for l := range 2*d.lag + 1 {
		x := seg[l : l+int64(len(tmpl))]
		var sx, sxy, sxx float64
		for k, y := range tmpl {
			sx += x[k]
			sxy += x[k] * y
			sxx += x[k] * x[k]
		}
		// the template's mean is 0, so the complex's mean drops out of sxy
		sxx -= sx * sx / float64(len(tmpl))
		if sxx > 0 && syy > 0 {
			best = math.Max(best, sxy/math.Sqrt(sxx*syy))
		}
	}
	return best
}

// push8 appends x, keeping the last 8 values in place.
func push8(v []int64, x int64) []int64 {
	if len(v) == 8 {
		copy(v, v[1:])
		v[7] = x
		return v
	}
	return append(v, x)
}

// mean returns the average of v, 0 when it is empty.
func mean[T int64 | float64](v []T) float64 {
	if len(v) == 0 {
		return 0
	}
	var s T
	for _, x := range v {
		s += x
	}
	return float64(s) / float64(len(v))
}

// irregular reports whether the rhythm is irregular: of the last 8
// intervals, one is off the regular average by more than -8% or +16%.
func (d *QRSDetector) irregular() bool {
	return len(d.rr) == 8 && !allWithin(d.rr, mean(d.rrOK))
}

func allWithin(v []int64, avg float64) bool {
	for _, x := range v {
		if float64(x) < 0.92*avg || float64(x) > 1.16*avg {
			return false
		}
	}
	return true
}

// Pop returns the sample index (counted from the first sample fed) of the
// next beat found, in order.
func (d *QRSDetector) Pop() (int64, bool) {
	if len(d.out) == 0 {
		return 0, false
	}
	r := d.out[0]
	copy(d.out, d.out[1:])
	d.out = d.out[:len(d.out)-1]
	return r, true
}

// Flush ends the stream: a beat still waiting for confirmation (for
// 200 ms after its peak) is decided now.
func (d *QRSDetector) Flush() {
	if d.learning {
		return
	}
	if d.pkV > 0 { // the maximum is a peak now
		if d.candV > 0 && d.pkI-d.candI >= d.refrac {
			d.classify(d.candV, d.candI)
			d.candV = 0
		}
		if d.pkV > d.candV {
			d.candV, d.candI = d.pkV, d.pkI
		}
		d.pkV = 0
	}
	if d.candV > 0 {
		d.classify(d.candV, d.candI)
		d.candV = 0
	}
}
