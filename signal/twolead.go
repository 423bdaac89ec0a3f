package signal

import (
	"math"
	"math/bits"
)

// TwoLeadDetector finds heartbeats in two leads of one ECG sampled
// together: a QRSDetector on each lead, and one stream of beats from the
// two.
//
// A QRS complex is the depolarisation of the whole ventricles: every lead
// sees it, within a few tens of milliseconds of the others, though smaller
// on some. The noise of a moving electrode is local to the leads of that
// electrode, and a lead's own detector knows how noisy its lead is: the
// ratio of its noise level to its signal level (Levels), taken when the
// detector gives the beat, its noise share. And how often a lead sees the
// beats shows in the stream itself: how many of the last 16 beats given
// each lead found. A lead's silence is evidence against a beat only when
// that lead usually sees the beats: a lead to which some complexes are
// small or perpendicular (premature beats of another axis, say) misses
// those beats on a clean signal. So:
//
//  1. a beat found on both leads, their R peaks less than 200 ms apart (no
//     heart beats twice in 200 ms), is a beat, at the first lead's R peak,
//     or at the second's when the first lead is noisy (its noise share
//     above a twentieth) and the second is cleaner;
//  2. a beat found on one lead only is a beat, at that lead's R peak, when
//     the other lead could not have seen it: its detector was learning its
//     levels (before its first beat, or again after 5 s without one), or
//     no interval between beats was given yet;
//  3. or when the other lead has been missing beats and this one has not:
//     the other lead missed at least 2 of the last 16 beats given, this
//     lead at most 1, and this lead's noise share is under a tenth (in
//     noise, noise fills the other lead's gaps);
//  4. or when the rhythm asks for it: without it, the interval from the
//     last beat given to the other lead's next beat would be longer than
//     the average of the last 8 intervals given by more than 6 times this
//     lead's noise share (a tenth more on a lead with a share of a
//     sixtieth, 60% more at a tenth); when the other lead has given no
//     later beat, the interval to the sample it is decided at (1.5 s
//     after its R peak, or the streams' end at Flush). Between two leads
//     that both see the beats, a beat on one only is doubtful, and the
//     noisier that lead the longer the gap it must fill;
//  5. any other beat of one lead only is dropped, and so is every beat
//     less than 200 ms after the last beat given.
//
// Only beats given count for rule 3: a lead's artefacts, dropped, do not
// make the other lead look deaf. The first beats a lead misses are given
// by rule 4, when the rhythm asks for them; rule 3 then keeps the rest.
// The rules use what each lead's detector knows and the stream given;
// they do not look at the signals again.
//
// Latency: the leads' beats are decided in the order of their R peaks. A
// beat found on both leads is decided once the later of the two detectors
// gives it, if that detector gives it by 1.5 s after the earlier R peak
// (a detector's search-back can take longer: then each lead's beat is
// decided alone, and rule 5 drops the later if the earlier was given); a
// beat found on one lead once the other lead gives a later beat, or 1.5 s
// after its R peak. So every beat is given by 1.5 s after its R peak, or
// when a detector gives it if that is later (its search-back): beyond what
// the two detectors take themselves, the stream adds at most 1.5 s. Flush
// decides every beat still waiting. Feed does not allocate when Pop takes
// the beats after each Feed.
type TwoLeadDetector struct {
	lead   [2]*QRSDetector
	n      int64      // sample pairs fed
	pend   [2][]found // each lead's beats not yet decided, in order
	wait   int64      // how long a beat of one lead waits for the other lead, samples
	refrac int64
	last   int64   // R peak of the last beat given, -1 before the first
	rr     []int64 // the last 8 intervals between beats given
	out    []int64
	// seen holds, for each lead, whether it found each of the last 16
	// beats given (bit 0 the latest); given counts the beats given, up to 16
	seen  [2]uint16
	given int
}

// maxPending is how many undecided beats a lead holds; 1.5 s of a
// tachycardia at 300 per minute is 8.
const maxPending = 16

// NewTwoLeadDetector returns a detector for two leads of an ECG sampled at
// fs Hz (at least 100).
func NewTwoLeadDetector(fs float64) *TwoLeadDetector {
	d := &TwoLeadDetector{
		lead:   [2]*QRSDetector{NewQRSDetector(fs), NewQRSDetector(fs)},
		wait:   int64(math.Round(1.5 * fs)),
		refrac: int64(math.Round(0.2 * fs)),
		last:   -1,
		rr:     make([]int64, 0, 8),
		out:    make([]int64, 0, 2*maxPending),
	}
	d.pend[0], d.pend[1] = make([]found, 0, maxPending), make([]found, 0, maxPending)
	return d
}

// Feed processes one sample of each lead, taken at the same time. Beats
// found are returned by Pop.
func (d *TwoLeadDetector) Feed(x0, x1 float64) {
	d.lead[0].Feed(x0)
	d.lead[1].Feed(x1)
	d.n++
	d.collect()
	d.decide(false)
}

// collect moves the leads' beats into their pending lists, deciding the
// earliest first when a list is full.
func (d *TwoLeadDetector) collect() {
	for i, det := range d.lead {
		for {
			r, ok := det.Pop()
			if !ok {
				break
			}
			for len(d.pend[i]) == cap(d.pend[i]) {
				d.decideOne(true)
			}
			f := found{r: r, learning: d.lead[1-i].Learning()}
			for k, det := range d.lead {
				f.noise[k] = noiseShare(det)
			}
			d.pend[i] = append(d.pend[i], f)
		}
	}
}

// decide decides the pending beats that can be decided: every one when
// final is true.
func (d *TwoLeadDetector) decide(final bool) {
	for d.decideOne(final) {
	}
}

// decideOne decides the earliest pending beat when it can, and reports
// whether it did.
func (d *TwoLeadDetector) decideOne(final bool) bool {
	x := 0
	switch {
	case len(d.pend[0]) == 0 && len(d.pend[1]) == 0:
		return false
	case len(d.pend[0]) == 0:
		x = 1
	case len(d.pend[1]) > 0 && d.pend[1][0].r < d.pend[0][0].r:
		x = 1
	}
	y := 1 - x
	f := d.pend[x][0]
	r := f.r
	if len(d.pend[y]) > 0 {
		q := d.pend[y][0].r // not before r
		// the other lead's beat is this one's unless this lead's next
		// beat is nearer to it
		if q-r < d.refrac && (len(d.pend[x]) < 2 || d.pend[x][1].r-q >= q-r) {
			at, noise := d.pend[0][0].r, d.pend[0][0].noise
			if noise[0] > 1.0/20 && noise[1] < noise[0] { // the first lead noisy, the second cleaner
				at = d.pend[1][0].r
			}
			d.pend[0] = drop1(d.pend[0])
			d.pend[1] = drop1(d.pend[1])
			d.give(at, 3)
			return true
		}
	} else if !final && d.n-r <= d.wait {
		return false // the other lead may still find it
	}
	// the other lead's next beat, or, when it has given none, now
	next := d.n
	if len(d.pend[y]) > 0 {
		next = d.pend[y][0].r
	}
	d.pend[x] = drop1(d.pend[x])
	if d.keep(x, f, next) {
		d.give(r, 1<<x)
	}
	return true
}

// keep reports whether a beat f found on lead x only is a beat, the other
// lead's next beat at next (rules 2 to 4; give applies rule 5).
func (d *TwoLeadDetector) keep(x int, f found, next int64) bool {
	if f.learning || len(d.rr) == 0 {
		return true
	}
	share := f.noise[x]
	if share < 1.0/10 && d.missed(x) <= 1 && d.missed(1-x) >= 2 {
		return true // the other lead has been missing beats, this one not
	}
	// the other lead's next beat is late without this one
	return float64(next-d.last) > (1+6*share)*mean(d.rr)
}

// noiseShare returns a detector's noise level as a share of its signal
// level, +Inf while its signal level is 0.
func noiseShare(d *QRSDetector) float64 {
	s, n := d.Levels()
	if s <= 0 {
		return math.Inf(1)
	}
	return n / s
}

// give gives a beat at r, found by the leads whose bits are set in leads,
// unless it comes less than 200 ms after the last.
func (d *TwoLeadDetector) give(r int64, leads uint16) {
	if d.last >= 0 {
		if r-d.last < d.refrac {
			return
		}
		d.rr = push8(d.rr, r-d.last)
	}
	d.last = r
	d.out = append(d.out, r)
	for i := range d.seen {
		d.seen[i] = d.seen[i]<<1 | leads>>i&1
	}
	d.given = min(d.given+1, 16)
}

// missed returns how many of the last beats given (up to 16) lead i did not
// find.
func (d *TwoLeadDetector) missed(i int) int {
	return d.given - bits.OnesCount16(d.seen[i])
}

// found is a beat of one lead, not yet decided: its R peak, each lead's
// noise share (noiseShare) when it was found, and whether the other lead's
// detector was learning then.
type found struct {
	r        int64
	noise    [2]float64
	learning bool
}

// drop1 removes the first element of v, in place.
func drop1[T any](v []T) []T {
	copy(v, v[1:])
	return v[:len(v)-1]
}

// Pop returns the sample index (counted from the first pair fed) of the
// next beat found, in order.
func (d *TwoLeadDetector) Pop() (int64, bool) {
	if len(d.out) == 0 {
		return 0, false
	}
	r := d.out[0]
	d.out = drop1(d.out)
	return r, true
}

// Flush ends the streams: each lead's beat still waiting for confirmation
// is decided, and every beat waiting for the other lead.
func (d *TwoLeadDetector) Flush() {
	for _, det := range d.lead {
		det.Flush()
	}
	d.collect()
	d.decide(true)
}
