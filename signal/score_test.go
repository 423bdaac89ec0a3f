package signal

import (
	"testing"
	"time"
)

func TestMatchBeats(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
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
