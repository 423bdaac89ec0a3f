package clock

import (
	"testing"
	"time"
)

// At on the wall clocks is due exactly when the clock reads t: the
// scheduler's time of t follows from the clock's start and speed, not from
// a second reading of the clock.
func TestAtIsExactOnWallClocks(t *testing.T) {
	r, s := NewReal(), NewScaled(1000)
	for _, tt := range []struct {
		name string
		c    Clock
		at   time.Duration // when the clock reads an hour, scheduler time
	}{
		{"real", r, r.start.Sub(epoch) + time.Hour},
		{"scaled", s, s.start.Sub(epoch) + time.Hour/1000},
	} {
		tm := At(tt.c, time.Hour, func() {})
		if got := tm.(*schedCall).at; got != tt.at {
			t.Errorf("%s: due at %v scheduler time, want %v", tt.name, got, tt.at)
		}
		if !tm.Stop() {
			t.Errorf("%s: the call could not be stopped", tt.name)
		}
	}
}
