// Package clock owns device time: the Clock interface every timed part of a
// device uses, a real-time clock, a scaled real-time clock (--speed), the
// scheduler of the process that runs the calls of both (runners that come
// and go with the work, and functions deferred to the end of their passes),
// and a virtual clock that runs scheduled work in time order, either when a
// test advances it or as fast as possible.
package clock

import (
	"math"
	"time"
)

// Clock is a device's source of time.
type Clock interface {
	// Now returns the time elapsed since the clock started.
	Now() time.Duration
	// AfterFunc arranges for f to run once d has elapsed. With a real or
	// scaled clock f runs on the process's scheduler, after the calls due
	// before it; with a virtual clock, on the goroutine that advances the
	// clock. f should not block: it holds up the calls due after it.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call of AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not run and reports whether it did so.
	Stop() bool
}

// At arranges for f to run when c reads t (at once if t has passed). Work
// scheduled by absolute time does not drift however late each call runs.
//
// For a *Real or *Scaled clock the call is due exactly when c reads t: At
// turns t into the scheduler's time without reading the clock. For other
// clocks At reads c and calls AfterFunc with the time left, which is exact
// when nothing advances c in between: a *Virtual clock advanced by the
// goroutine that calls At, or At called from a call the clock runs. When
// another goroutine advances a *Virtual clock meanwhile, f runs as much
// later as it advanced (at once if t has passed by then).
func At(c Clock, t time.Duration, f func()) Timer {
	if at, ok := procTime(c, t); ok {
		return procSched.at(at, f)
	}
	d := t - c.Now()
	if d < 0 {
		d = 0
	}
	return c.AfterFunc(d, f)
}

// procTime returns when time t of clock c falls on the process's scheduler,
// for the clocks that run on it (Real and Scaled).
func procTime(c Clock, t time.Duration) (time.Duration, bool) {
	switch c := c.(type) {
	case *Real:
		return c.start.Sub(epoch) + t, true
	case *Scaled:
		return c.start.Sub(epoch) + c.reaches(t), true
	}
	return 0, false
}

// Real is the wall clock, counted from when it was made.
type Real struct{ start time.Time }

// NewReal returns a real-time clock that reads zero now.
func NewReal() *Real { return &Real{start: time.Now()} }

// Now returns the time since the clock was made.
func (r *Real) Now() time.Duration { return time.Since(r.start) }

// AfterFunc runs f on the process's scheduler after d.
func (r *Real) AfterFunc(d time.Duration, f func()) Timer {
	return procSched.after(d, f)
}

// Scaled is the wall clock running speed times faster (or slower).
type Scaled struct {
	start time.Time
	speed float64
}

// NewScaled returns a clock that reads zero now and advances speed seconds
// per wall-clock second. speed must be positive.
func NewScaled(speed float64) *Scaled {
	if !(speed > 0) {
		panic("clock: speed must be positive")
	}
	return &Scaled{start: time.Now(), speed: speed}
}

// Now returns the scaled time since the clock was made.
func (s *Scaled) Now() time.Duration { return s.reads(time.Since(s.start)) }

// reads returns what s reads when wall time d has passed since its start.
func (s *Scaled) reads(d time.Duration) time.Duration { return time.Duration(float64(d) * s.speed) }

// reaches returns the wall time since s's start at which s first reads t:
// t over the speed, rounded up, so that the clock does not read less than
// t then (a step more where the division rounded down).
func (s *Scaled) reaches(t time.Duration) time.Duration {
	d := time.Duration(math.Ceil(float64(t) / s.speed))
	if s.reads(d) < t {
		d++
	}
	return d
}

// AfterFunc runs f on the process's scheduler after d of scaled time.
func (s *Scaled) AfterFunc(d time.Duration, f func()) Timer {
	return procSched.after(time.Duration(float64(d)/s.speed), f)
}

// Call is a call of one function that can be scheduled again and again on
// one clock, each time at a clock reading, like At, without allocating:
// a stream that schedules its next batch from the call of the last one
// reuses one Call. A Call is pending from At until it runs or Stop cancels
// it; calls due at the same time run in the order they were scheduled, as
// with At.
type Call struct {
	clk   Clock
	entry timedCall
	other Timer // the pending call on a clock other than *Real, *Scaled and *Virtual
}

// NewCall returns a call of f on c, not yet scheduled.
func NewCall(c Clock, f func()) *Call {
	return &Call{clk: c, entry: timedCall{f: f, index: -1}}
}

// At schedules the call to run when the clock reads t (at once if t has
// passed), exactly as At(c, t, f) would, in place of a pending one.
func (c *Call) At(t time.Duration) {
	if at, ok := procTime(c.clk, t); ok {
		procSched.push(&c.entry, at)
		return
	}
	switch clk := c.clk.(type) {
	case *Virtual:
		clk.push(&c.entry, t-clk.Now())
	default:
		c.Stop()
		c.other = At(c.clk, t, c.entry.f)
	}
}

// Stop cancels the call if it is pending and reports whether it was.
func (c *Call) Stop() bool {
	switch clk := c.clk.(type) {
	case *Real, *Scaled:
		return procSched.stop(&c.entry)
	case *Virtual:
		return clk.stop(&c.entry)
	}
	if c.other == nil {
		return false
	}
	t := c.other
	c.other = nil
	return t.Stop()
}
