package clock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Virtual is a clock that only moves when it is advanced. Scheduled calls run
// in time order (calls due at the same time in the order they were made) on
// the goroutine that advances the clock, with the clock reading their time.
// Work that runs on goroutines of its own in response (an app's) keeps in
// step with it through Hold and Release.
// It is safe for concurrent use.
type Virtual struct {
	mu     sync.Mutex
	now    time.Duration
	seq    uint64
	events timedHeap
	wake   chan struct{} // signalled when an event is added

	held   atomic.Int64 // work under way elsewhere (Hold)
	heldMu sync.Mutex
	idle   *sync.Cond // on heldMu, broadcast when held falls to zero
}

// NewVirtual returns a virtual clock that reads zero.
func NewVirtual() *Virtual {
	v := &Virtual{wake: make(chan struct{}, 1)}
	v.idle = sync.NewCond(&v.heldMu)
	return v
}

// Hold tells the clock that n pieces of work run elsewhere, on goroutines
// of their own, at the time the clock reads now (an app's goroutine running
// what a scheduled call or a caller handed it): until Release ends every
// hold, AdvanceTo runs no further call and does not move the time. So that
// work sees the time at which it was set off, as it would on the device,
// and what it sends leaves then, not in bursts when it catches up. Work
// that is held must neither advance the clock nor wait for it to advance
// (the clock's own goroutine may take holds for work it hands on, and go on).
func (v *Virtual) Hold(n int) { v.held.Add(int64(n)) }

// Release ends n holds of Hold.
func (v *Virtual) Release(n int) {
	if n > 0 && v.held.Add(-int64(n)) <= 0 {
		v.heldMu.Lock()
		v.idle.Broadcast()
		v.heldMu.Unlock()
	}
}

// settle waits until no work is held, and reports false when ctx ended
// first (Run wakes it then).
func (v *Virtual) settle(ctx context.Context) bool {
	if v.held.Load() <= 0 {
		return true
	}
	v.heldMu.Lock()
	defer v.heldMu.Unlock()
	for v.held.Load() > 0 {
		if ctx.Err() != nil {
			return false
		}
		v.idle.Wait()
	}
	return true
}

func (v *Virtual) schedule(c *timedCall, t time.Duration) { v.push(c, t-v.Now()) }

func (v *Virtual) unschedule(c *timedCall) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.events.remove(c)
}

func (v *Virtual) cancel(c *timedCall) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.events.cancel(c)
}

// Now returns the clock's time.
func (v *Virtual) Now() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// AfterFunc schedules f at Now()+d.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	p := newPending(v, f)
	v.push(&p.timedCall, d)
	return p
}

// push schedules c at Now()+d (Now() when d is negative), after the calls
// already scheduled for then, in place of its pending run if it has one.
func (v *Virtual) push(c *timedCall, d time.Duration) {
	v.mu.Lock()
	v.seq++
	v.events.push(c, v.now+max(d, 0), v.seq)
	v.mu.Unlock()
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// Pending returns the number of scheduled calls.
func (v *Virtual) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.events.len()
}

// Next returns the time of the earliest scheduled call.
func (v *Virtual) Next() (time.Duration, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.events.len() == 0 {
		return 0, false
	}
	return v.events.first(), true
}

// Advance moves the clock forward by d, running every call due on the way.
func (v *Virtual) Advance(d time.Duration) { v.AdvanceTo(v.Now() + d) }

// AdvanceTo moves the clock to t (if t is ahead), running every call due up
// to and including t, each with the clock reading its time. Calls scheduled by
// those calls run too when they fall due by t. Before each call, and before
// it moves the time to t, it waits for the work that is held (Hold).
func (v *Virtual) AdvanceTo(t time.Duration) { v.advanceTo(context.Background(), t) }

// advanceTo is AdvanceTo, which gives up when ctx ends while work is held.
func (v *Virtual) advanceTo(ctx context.Context, t time.Duration) {
	for {
		if !v.settle(ctx) {
			return
		}
		v.mu.Lock()
		if v.events.len() == 0 || v.events.first() > t {
			if t > v.now {
				v.now = t
			}
			v.mu.Unlock()
			return
		}
		e := v.events.pop()
		if e.at > v.now {
			v.now = e.at
		}
		v.mu.Unlock()
		e.f()
	}
}

// Run drives the clock until ctx ends. With speed > 0 the clock follows the
// wall clock speed times faster, stepping at least every 10 ms of wall time so
// that Now moves between scheduled calls; with speed 0 it jumps from one
// scheduled call to the next as fast as they run, and waits when nothing is
// scheduled. When ctx ends while work is held (Hold), Run returns without
// waiting for it.
func (v *Virtual) Run(ctx context.Context, speed float64) {
	const step = 10 * time.Millisecond
	stop := context.AfterFunc(ctx, func() {
		v.heldMu.Lock()
		v.idle.Broadcast() // settle looks at ctx again
		v.heldMu.Unlock()
	})
	defer stop()
	wallStart, virtStart := time.Now(), v.Now()
	for ctx.Err() == nil {
		if speed <= 0 {
			next, ok := v.Next()
			if !ok {
				select {
				case <-ctx.Done():
				case <-v.wake:
				}
				continue
			}
			v.advanceTo(ctx, next)
			continue
		}
		target := virtStart + time.Duration(float64(time.Since(wallStart))*speed)
		v.advanceTo(ctx, target)
		wait := step
		if next, ok := v.Next(); ok {
			if d := time.Duration(float64(next-target) / speed); d < wait {
				wait = max(d, 0)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-v.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}
