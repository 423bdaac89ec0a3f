package clock

import (
	"testing"
	"time"
)

// At on the real clock is due exactly when the clock reads t: the
// scheduler's time is the clock's, not a second reading of it.
func TestAtIsExactOnTheRealClock(t *testing.T) {
	r := NewReal()
	defer r.Close()
	tm := At(r, time.Hour, func() {})
	if got := tm.(*pending).at; got != time.Hour {
		t.Errorf("due at %v scheduler time, want %v", got, time.Hour)
	}
	if !tm.Stop() {
		t.Errorf("the call could not be stopped")
	}
	if tm.Stop() {
		t.Errorf("the call was stopped twice")
	}
}
