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

// At on a scaled clock is due at the first scheduler time at which the
// clock reads t, not a little before it, whatever rounding the speed
// brings.
func TestAtScaledNotEarly(t *testing.T) {
	for _, speed := range []float64{1000, 3, 1.5, 0.7} {
		s := NewScaled(speed)
		for _, at := range []time.Duration{1, 7, 999, 1001, time.Hour + 1, 3*time.Hour + 2} {
			tm := At(s, at, func() {})
			d := tm.(*schedCall).at - s.start.Sub(epoch)
			tm.Stop()
			if got := s.reads(d); got < at {
				t.Errorf("speed %g: At(%v) is due when the clock reads %v, before it", speed, at, got)
			}
			if d > 0 && s.reads(d-1) >= at {
				t.Errorf("speed %g: At(%v) is due at %v, later than the clock reads it", speed, at, d)
			}
		}
	}
}
