package signal

import (
	"slices"
	"time"
)

// Scored is the outcome of matching detected beats against reference beats.
type Scored struct {
	TP, FN, FP int
	// Errors holds, for each true positive, the detection's time minus the
	// reference beat's.
	Errors []time.Duration
	// Missed are the reference beats not found; False the detections that
	// match no reference beat.
	Missed, False []time.Duration
}

// Se returns the sensitivity TP/(TP+FN), in percent.
func (s Scored) Se() float64 { return 100 * float64(s.TP) / float64(max(s.TP+s.FN, 1)) }

// PP returns the positive predictivity TP/(TP+FP), in percent.
func (s Scored) PP() float64 { return 100 * float64(s.TP) / float64(max(s.TP+s.FP, 1)) }

// Add accumulates o into s.
func (s *Scored) Add(o Scored) {
	s.TP, s.FN, s.FP = s.TP+o.TP, s.FN+o.FN, s.FP+o.FP
	s.Errors = append(s.Errors, o.Errors...)
	s.Missed = append(s.Missed, o.Missed...)
	s.False = append(s.False, o.False...)
}

// ErrorQuantile returns the q-quantile (0..1) of the absolute position
// errors of the true positives, or 0 without any.
func (s Scored) ErrorQuantile(q float64) time.Duration {
	if len(s.Errors) == 0 {
		return 0
	}
	a := make([]time.Duration, len(s.Errors))
	for i, e := range s.Errors {
		a[i] = e.Abs()
	}
	slices.Sort(a)
	return a[min(int(q*float64(len(a))), len(a)-1)]
}

// ScoreBeats scores detected beat times against reference beat times, as
// ANSI/AAMI EC57 does: a detection within tol of a reference beat matches it,
// each reference beat matches at most one detection (the nearest unused),
// and both lists are in ascending order.
func ScoreBeats(ref, found []time.Duration, tol time.Duration) Scored {
	var s Scored
	used := make([]bool, len(found))
	j := 0
	for _, r := range ref {
		for j < len(found) && found[j] < r-tol {
			j++
		}
		best := -1
		for k := j; k < len(found) && found[k] <= r+tol; k++ {
			if !used[k] && (best < 0 || (found[k]-r).Abs() < (found[best]-r).Abs()) {
				best = k
			}
		}
		if best >= 0 {
			used[best] = true
			s.TP++
			s.Errors = append(s.Errors, found[best]-r)
		} else {
			s.FN++
			s.Missed = append(s.Missed, r)
		}
	}
	for k, u := range used {
		if !u {
			s.FP++
			s.False = append(s.False, found[k])
		}
	}
	return s
}

// MatchBeats is ScoreBeats reduced to the counts of true positives, false
// negatives (reference beats not found) and false positives (detections
// matching no beat).
func MatchBeats(ref, found []time.Duration, tol time.Duration) (tp, fn, fp int) {
	s := ScoreBeats(ref, found, tol)
	return s.TP, s.FN, s.FP
}
