package load

import (
	"math"
	"math/bits"
	"senseboard/content"
	"sync/atomic"
	"time"
)

// tally counts what one subscription of one device delivered.
//
// A sampled stream (a path that ends in its rate, /Meas/ECG/125) carries a
// Timestamp, the device's relative time in ms of the notification's first
// sample, and an array of samples. Consecutive notifications whose
// timestamps lie further apart than their samples span are a gap: the
// samples of the notifications that should have come in between are lost.
// A notification's due time is when its last sample has been taken, one
// period after that sample; its lateness is how much later it arrives than
// the least delayed notification of the same stream, so that the constant
// part of the delay (the transport, the offset between the device's clock
// and this computer's) is not counted.
//
// A stream without a rate (/Meas/HR) is counted by its RR intervals: their
// sum is the time the beats delivered span.
//
// Each notification is decoded into the stream's notification type of
// package content, one value reused for the stream's notifications.
type tally struct {
	rate float64         // samples per second; 0 for the heart rate
	note content.Decoder // the stream's notification, decoded into

	notifications int64
	samples       int64 // delivered
	lost          int64 // in gaps between timestamps
	disorder      int64 // notifications that do not decode, and timestamps that went back

	started  bool
	ts0      uint32  // Timestamp of the first notification
	lastTS   uint32  // of the latest notification
	lastN    int     // samples of the latest notification
	k        int64   // index of the next expected sample since the first
	minDelay float64 // least (arrival - due), seconds since start
	first    time.Time
	last     time.Time

	rrSum  float64    // ms, heart rate: RR intervals after the first notification
	lastRR float64    // ms, heart rate: of the latest notification
	late   *histogram // the stream's, shared by every device
	lateMs float64    // latest lateness, ms
}

// newTally returns the tally of the stream at path, of the given rate
// (PathRate), whose lateness goes to late.
func newTally(path string, rate float64, late *histogram) tally {
	return tally{rate: rate, note: content.ForPath(path), late: late}
}

// add counts one notification that arrived at at.
func (t *tally) add(payload []byte, at time.Time) {
	t.notifications++
	if t.note == nil || t.note.DecodeJSON(payload) != nil {
		t.disorder++
		return
	}
	var ts uint32
	var n int
	switch c := t.note.(type) {
	case *content.HRData:
		t.addBeats(c.RRData, at)
		return
	case *content.MotionData:
		ts, n = c.Timestamp, max(len(c.ArrayAcc), len(c.ArrayGyro), len(c.ArrayMagn))
	case *content.ECGData:
		ts, n = c.Timestamp, len(c.Samples)
	case *content.ECGDataMV:
		ts, n = c.Timestamp, len(c.Samples)
	}
	if n == 0 {
		t.disorder++
		return
	}
	t.samples += int64(n)
	if !t.started {
		t.started, t.ts0, t.first = true, ts, at
	} else {
		span := float64(int64(ts)-int64(t.lastTS)) * t.rate / 1000 // samples between the two first samples
		if span <= 0 {
			t.disorder++
		} else if missing := math.Round(span/float64(t.lastN)) - 1; missing > 0 {
			// whole notifications of the previous size did not come
			t.lost += int64(missing) * int64(t.lastN)
			t.k += int64(missing) * int64(t.lastN)
		}
	}
	t.lastTS, t.lastN, t.last = ts, n, at
	// device time (s, since this stream's first sample) the notification was due
	due := float64(t.k+int64(n)) / t.rate
	t.k += int64(n)
	delay := at.Sub(t.first).Seconds() - due
	if t.notifications == 1 || delay < t.minDelay {
		t.minDelay = delay
	}
	t.lateMs = (delay - t.minDelay) * 1000
	if t.late != nil {
		t.late.add(time.Duration((delay - t.minDelay) * float64(time.Second)))
	}
}

// addBeats counts a heart-rate notification with the intervals rr.
func (t *tally) addBeats(rr []uint16, at time.Time) {
	sum := 0.0
	for _, v := range rr {
		sum += float64(v)
	}
	t.lastRR = sum
	t.samples++
	if !t.started {
		t.started, t.first = true, at
	} else {
		t.rrSum += sum
	}
	t.last = at
}

// expected returns how many samples the stream should have delivered by now
// since it was subscribed at since: those due more than grace ago. For the
// heart rate it is the time, in ms, since the first beat arrived, less the
// latest interval (the beat in progress), to compare with the RR intervals
// delivered.
func (t *tally) expected(since, now time.Time, grace time.Duration) float64 {
	if t.rate == 0 {
		if !t.started {
			return 0
		}
		// the beat in progress is not due yet: allow the latest interval
		return max(0, float64((now.Sub(t.first)-grace).Milliseconds())-t.lastRR)
	}
	d := now.Sub(since) - grace
	if d <= 0 {
		return 0
	}
	return math.Floor(d.Seconds() * t.rate)
}

// delivered is what expected is compared with.
func (t *tally) delivered() float64 {
	if t.rate == 0 {
		return t.rrSum
	}
	return float64(t.samples)
}

// histogram counts durations in buckets of about 6% width from 1 µs up, in
// a fixed array, so that it can be read without keeping samples. The
// devices of a stream add to one histogram at once: its counters are
// atomic.
type histogram struct {
	counts [64 * 16]atomic.Int64
	n      atomic.Int64
	max    atomic.Int64 // a time.Duration
}

// bucket returns the bucket of d: sixteen per power of two of microseconds.
func bucket(d time.Duration) int {
	us := uint64(max(d.Microseconds(), 0))
	if us < 16 {
		return int(us)
	}
	e := bits.Len64(us) - 5 // us >> e is 16..31
	return e*16 + int(us>>e)
}

// bucketValue returns the lower bound of bucket i.
func bucketValue(i int) time.Duration {
	if i < 32 {
		return time.Duration(i) * time.Microsecond
	}
	e := i/16 - 1
	m := uint64(i%16 + 16)
	return time.Duration(m<<e) * time.Microsecond
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucket(d)].Add(1)
	h.n.Add(1)
	for m := h.max.Load(); int64(d) > m && !h.max.CompareAndSwap(m, int64(d)); m = h.max.Load() {
	}
}

// quantile returns the lower bound of the bucket holding quantile q.
func (h *histogram) quantile(q float64) time.Duration {
	n, hmax := h.n.Load(), time.Duration(h.max.Load())
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(bucketValue(i), hmax)
		}
	}
	return hmax
}
