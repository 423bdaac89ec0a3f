package signal

import (
	"fmt"
	"testing"
	"time"
)

// ms returns durations of the given milliseconds.
func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestMatchBeats(t *testing.T) {
	tests := []struct {
		name       string
		ref, found []time.Duration
		tp, fn, fp int
	}{
		{"all found", ms(1000, 2000, 3000), ms(1010, 1990, 3100), 3, 0, 0},
		{"one missed, one extra", ms(1000, 2000), ms(1000, 2500), 1, 1, 1},
		{"outside the tolerance", ms(1000), ms(1151), 0, 1, 1},
		{"two detections near one beat", ms(1000), ms(950, 1020), 1, 0, 1},
		{"one detection between two beats", ms(1000, 1200), ms(1100), 1, 1, 0},
		{"nothing detected", ms(1000, 2000), nil, 0, 2, 0},
		{"no reference", nil, ms(5), 0, 0, 1},
	}
	for _, tt := range tests {
		tp, fn, fp := MatchBeats(tt.ref, tt.found, 150*time.Millisecond)
		if tp != tt.tp || fn != tt.fn || fp != tt.fp {
			t.Errorf("%s: tp %d fn %d fp %d, want %d %d %d", tt.name, tp, fn, fp, tt.tp, tt.fn, tt.fp)
		}
	}
}

// TestScoreBeats checks which detection each reference beat takes: the
// nearest unused one within the tolerance, the earlier of two as near, and
// one exactly at the tolerance on either side, not one past it.
func TestScoreBeats(t *testing.T) {
	const tol = 150 * time.Millisecond
	tests := []struct {
		name                  string
		ref, found            []time.Duration
		errors, missed, false []time.Duration
	}{
		{"the nearest of three", ms(1000), ms(900, 1020, 1100), ms(20), nil, ms(900, 1100)},
		{"the nearest after a farther one", ms(1000), ms(880, 960), ms(-40), nil, ms(880)},
		{"the earlier of two as near", ms(1000), ms(900, 1100), ms(-100), nil, ms(1100)},
		{"exactly the tolerance early", ms(1000), ms(850), ms(-150), nil, nil},
		{"exactly the tolerance late", ms(1000), ms(1150), ms(150), nil, nil},
		{"a nanosecond past the tolerance early", ms(1000), []time.Duration{850*time.Millisecond - 1}, nil, ms(1000), []time.Duration{850*time.Millisecond - 1}},
		{"a nanosecond past the tolerance late", ms(1000), []time.Duration{1150*time.Millisecond + 1}, nil, ms(1000), []time.Duration{1150*time.Millisecond + 1}},
		{"a detection taken is not taken again", ms(1000, 1100), ms(1060), ms(60), ms(1100), nil},
		{"each beat its own", ms(1000, 1100), ms(1040, 1090), ms(40, -10), nil, nil},
		{"detections before, between and after", ms(1000, 2000), ms(100, 1010, 1500, 1990, 2900), ms(10, -10), nil, ms(100, 1500, 2900)},
	}
	for _, tt := range tests {
		s := ScoreBeats(tt.ref, tt.found, tol)
		got := fmt.Sprint(s.Errors, s.Missed, s.False, s.TP, s.FN, s.FP)
		want := fmt.Sprint(tt.errors, tt.missed, tt.false, len(tt.errors), len(tt.missed), len(tt.false))
		if got != want {
			t.Errorf("%s: errors, missed, false, TP, FN, FP %s, want %s", tt.name, got, want)
		}
	}
}

func TestScoredSums(t *testing.T) {
	var s Scored
	if s.Se() != 0 || s.PP() != 0 || s.ErrorQuantile(0.5) != 0 {
		t.Errorf("empty: Se %v, PP %v, median error %v, want 0", s.Se(), s.PP(), s.ErrorQuantile(0.5))
	}
	s.Add(ScoreBeats(ms(1000, 2000, 3000), ms(970, 2010, 2500), 150*time.Millisecond))
	s.Add(ScoreBeats(ms(1000, 2000), ms(1040, 2020, 2100), 150*time.Millisecond))
	if s.TP != 4 || s.FN != 1 || s.FP != 2 || s.Se() != 80 || s.PP() != 400.0/6 {
		t.Errorf("TP %d FN %d FP %d Se %v PP %v, want 4 1 2 80 66.7", s.TP, s.FN, s.FP, s.Se(), s.PP())
	}
	if got, want := fmt.Sprint(s.Errors, s.Missed, s.False), fmt.Sprint(ms(-30, 10, 40, 20), ms(3000), ms(2500, 2100)); got != want {
		t.Errorf("errors, missed, false %s, want %s", got, want)
	}
	// the absolute errors in order: 10 20 30 40 ms
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0, 10}, {0.2, 10}, {0.25, 20}, {0.5, 30}, {0.74, 30}, {0.75, 40}, {0.99, 40}, {1, 40}} {
		if got := s.ErrorQuantile(tt.q); got != tt.want*time.Millisecond {
			t.Errorf("ErrorQuantile(%v) = %v, want %v", tt.q, got, tt.want*time.Millisecond)
		}
	}
}
