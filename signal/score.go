package signal

import "time"

// MatchBeats scores detected beat times against reference beat times, as
// ANSI/AAMI EC57 does: a detection within tol of a reference beat matches it,
// each reference beat matches at most one detection (the nearest unused),
// and both lists are in ascending order. It returns the true positives,
// false negatives (reference beats not found) and false positives
// (detections matching no beat). Sensitivity is tp/(tp+fn), positive
// predictivity tp/(tp+fp).
func MatchBeats(ref, found []time.Duration, tol time.Duration) (tp, fn, fp int) {
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
			tp++
		} else {
			fn++
		}
	}
	for _, u := range used {
		if !u {
			fp++
		}
	}
	return tp, fn, fp
}
