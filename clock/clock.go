// Package clock owns device time: the Clock interface every timed part of a
// device uses, a real-time clock with its scheduler (runners that come and
// go with the work, calls run in passes, and functions deferred to the end
// of a pass), and a virtual clock that runs scheduled work in time order,
// either when a test advances it or, driven by Run, as fast as possible or
// at a multiple of real time (what the program's --speed uses).
package clock

import "time"

// Clock is a device's source of time.
type Clock interface {
	// Now returns the time elapsed since the clock started.
	Now() time.Duration
	// AfterFunc arranges for f to run once d has elapsed. With a real
	// clock f runs on the clock's scheduler, after the calls due before
	// it; with a virtual clock, on the goroutine that advances the clock.
	// f should not block: it holds up the calls due after it.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call of AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not run and reports whether it did so.
	Stop() bool
}

// A Batcher is a clock that runs its calls in passes: each wake of its
// scheduler runs every call due by then, one after the other. A transport
// to which the calls of a pass hand data can send it all at once when the
// pass ends (AfterPass), instead of piece by piece while the pass runs.
// The real clock is one; a transport asserts it on its device's clock and
// sends at once on a clock that is not.
type Batcher interface {
	Clock
	// AfterPass runs f when the pass under way ends, after the last call
	// due in it has run, or at once when no pass is under way. f runs on
	// the scheduler's goroutine and holds up the next pass: it should be
	// quick and not block.
	AfterPass(f func())
	// DeferToPass defers f to the end of the pass under way, as AfterPass
	// does, and reports true; when no pass is under way it reports false
	// and does not run f: a function deferred from outside the clock's
	// calls, which would run at once, is the caller's to place.
	DeferToPass(f func()) bool
	// Quantum returns the least time between two passes: the calls that
	// fall due within it run together in one pass, up to that late.
	Quantum() time.Duration
}

// A Lagging clock may run its calls later than they fall due: the real
// clock, when its process is held up (descheduled on a busy machine,
// stopped) or its scheduler falls behind, runs the calls that fell due
// meanwhile at once. Due tells when the calls under way fell due: work
// that models time as a timeline of its own (the radio's connection
// events) reads it rather than Now, so that what ran late is placed when
// it fell due, as on a virtual clock, whose calls read Now at their due
// time.
type Lagging interface {
	Clock
	// Due returns when the call under way fell due. Outside the clock's
	// calls it returns the time they have reached while a pass of them
	// runs, and Now between passes.
	Due() time.Duration
}

// Due returns when the call under way on c fell due (Lagging), or c's
// reading now on a clock that does not tell it.
func Due(c Clock) time.Duration {
	if l, ok := c.(Lagging); ok {
		return l.Due()
	}
	return c.Now()
}

// scheduling is a clock on which At and Call schedule a timedCall by the
// clock's own reading, without allocating: the real and the virtual clock.
type scheduling interface {
	// schedule makes c due when the clock reads t (at once if t has
	// passed), after the calls already due then, in place of its pending
	// run if it has one.
	schedule(c *timedCall, t time.Duration)
	// unschedule takes c out of the schedule if it is pending and reports
	// whether it was, leaving its entry in the clock's heap (timedHeap).
	unschedule(c *timedCall) bool
	// cancel is unschedule, which takes c's entry out of the heap as well
	// (timedHeap.cancel).
	cancel(c *timedCall) bool
}

// At arranges for f to run when c reads t (at once if t has passed). Work
// scheduled by absolute time does not drift however late each call runs.
//
// For a *Real clock the call is due exactly when c reads t: the
// scheduler's time is the clock's. For other clocks At reads c and
// schedules f with the time left, which is exact when nothing advances c
// in between: a *Virtual clock advanced by the goroutine that calls At, or
// At called from a call the clock runs. When another goroutine advances a
// *Virtual clock meanwhile, f runs as much later as it advanced (at once if
// t has passed by then).
func At(c Clock, t time.Duration, f func()) Timer {
	if s, ok := c.(scheduling); ok {
		p := newPending(s, f)
		s.schedule(&p.timedCall, t)
		return p
	}
	return c.AfterFunc(max(t-c.Now(), 0), f)
}

// pending is a call of At or AfterFunc on a scheduling clock.
type pending struct {
	timedCall
	on scheduling
}

func newPending(on scheduling, f func()) *pending {
	return &pending{timedCall: timedCall{f: f}, on: on}
}

// Stop cancels the call if it has not started. It lets go of the function,
// which no runner can take any more: the entry the call leaves in its
// clock's heap holds the call until the heap drops it (see timedHeap), and
// what the function holds, a device's state, would stay reachable with it.
func (p *pending) Stop() bool {
	if !p.on.unschedule(&p.timedCall) {
		return false
	}
	p.f = nil
	return true
}

// Real is the wall clock, counted from when it was made. Its calls run on
// a scheduler of its own, which wakes at most once per quantum, a
// millisecond unless NewRealQuantum says otherwise, however many calls it
// runs (see sched.go): the devices of a fleet share one Real clock, and
// so its scheduler. Whoever makes a Real clock closes it (Close) once
// what runs on it has stopped.
type Real struct{ s *scheduler }

// NewReal returns a real-time clock that reads zero now, whose calls run
// within about a millisecond of their time.
func NewReal() *Real { return NewRealQuantum(defaultQuantum) }

// NewRealQuantum returns a real-time clock that reads zero now and wakes
// at most once per quantum (at least a millisecond): the calls that fall
// due within a quantum of its last wake wait for the next and run
// together, up to a quantum late. A quantum longer than a millisecond
// sleeps on the runtime's timer, which adds up to a millisecond more, and
// costs the program less CPU time for each wake than the precise sleep of
// NewReal's (see sched.go). A fleet whose clients take its notifications
// every 100 ms has no use for calls on time to the millisecond.
func NewRealQuantum(quantum time.Duration) *Real {
	return &Real{s: newScheduler(time.Now(), max(quantum, defaultQuantum))}
}

// Close stops the clock's scheduler and waits for its goroutines to end,
// after the call under way if one is: the calls pending never run, nor do
// those scheduled after Close, which AfterFunc, At and Call.At take and
// drop (their Stop reports that nothing was pending). Now, Due and
// AfterPass go on as between passes. Close must not be called from a call
// of the clock, nor from a function AfterPass deferred to a pass's end,
// whose end it would wait for. Closing a closed clock does nothing more.
func (r *Real) Close() { r.s.close() }

// Quantum returns the least time between two wakes of the clock's
// scheduler (NewRealQuantum).
func (r *Real) Quantum() time.Duration { return r.s.quantum }

// Now returns the time since the clock was made.
func (r *Real) Now() time.Duration { return r.s.since() }

// AfterFunc runs f on the clock's scheduler after d.
func (r *Real) AfterFunc(d time.Duration, f func()) Timer {
	p := newPending(r, f)
	r.s.push(&p.timedCall, r.s.since()+max(d, 0))
	return p
}

// Due implements Lagging: while a pass of the clock's scheduler runs, the
// time the call it started last fell due; other goroutines read it too.
// Between passes it returns Now, also beside a pass whose call is held up
// past the watchdog's limit (a new runner took over from it).
//
// The calls of a pass start in time order, so a call reads its own due
// time, or in a pass shared among goroutines that of a call started beside
// it since, no later than the pass's time: never an earlier call's, but
// for a call made during the pass for a time already passed, which starts
// after calls due later than it. Due is one value per clock, not per
// goroutine, as Go tells a function nothing of the goroutine it runs on: a
// call that must know its own due time exactly in a shared pass is to be
// handed it. The difference is the due times of the calls that start while
// it runs, before it reads Due; the radio's model of the air, which reads
// it, keeps its time from going back (airQueue.at).
func (r *Real) Due() time.Duration {
	if d := r.s.reached.Load(); d > 0 {
		return time.Duration(d - 1)
	}
	return r.Now()
}

// AfterPass implements Batcher: f runs when the pass of the clock's
// scheduler under way ends (a pass is one wake of the scheduler, which
// runs every call due by then), or at once when no pass is under way.
func (r *Real) AfterPass(f func()) { r.s.deferToPassEnd(f) }

// DeferToPass implements Batcher: f runs when the pass under way ends, as
// with AfterPass; when no pass is under way it reports false and f does
// not run.
func (r *Real) DeferToPass(f func()) bool { return r.s.deferToPass(f) }

func (r *Real) schedule(c *timedCall, t time.Duration) { r.s.push(c, t) }
func (r *Real) unschedule(c *timedCall) bool           { return r.s.stop(c) }
func (r *Real) cancel(c *timedCall) bool               { return r.s.cancel(c) }

// Call is a call of one function that can be scheduled again and again on
// one clock, each time at a clock reading, like At, without allocating:
// a stream that schedules its next batch from the call of the last one
// reuses one Call. A Call is pending from At until it runs or Stop cancels
// it; calls due at the same time run in the order they were scheduled, as
// with At.
type Call struct {
	clk   Clock
	entry timedCall
	other Timer // the pending call on a clock other than *Real and *Virtual
}

// NewCall returns a call of f on c, not yet scheduled.
func NewCall(c Clock, f func()) *Call {
	call := new(Call)
	call.Init(c, f)
	return call
}

// Init makes c a call of f on clk, not yet scheduled, as NewCall does, for
// a Call kept in the state of what it calls: a fleet's clock runs thousands
// of calls, and a call that leads straight to the state it works on meets
// one cache miss fewer. A pending run of c is cancelled.
//
// A Call made for a *Real or *Virtual clock stays on it: the clock's heap
// may hold an entry of the call after it ran or was scheduled again, which
// the order numbers of another clock could make pending again. Init for
// another clock panics.
//
// Init does not wait for a run of c under way, which it must not race.
func (c *Call) Init(clk Clock, f func()) {
	if old, ok := c.clk.(scheduling); ok {
		if s, _ := clk.(scheduling); s != old {
			panic("clock: Call.Init for a clock other than the call's")
		}
	}
	c.Stop()
	// All but the order number, which Stop left at zero, not pending: the
	// clock reads it through the call's stale entries under its lock, at
	// any time (timedCall), and Init writes without the lock.
	c.clk, c.other = clk, nil
	c.entry.at, c.entry.f = 0, f
}

// At schedules the call to run when the clock reads t (at once if t has
// passed), exactly as At(c, t, f) would, in place of a pending one.
func (c *Call) At(t time.Duration) {
	if s, ok := c.clk.(scheduling); ok {
		s.schedule(&c.entry, t)
		return
	}
	c.Stop()
	c.other = At(c.clk, t, c.entry.f)
}

// Stop cancels the call if it is pending and reports whether it was. The
// clock lets go of the call, and so of the state it lives in, at once:
// but for the entries that scheduling it again while it was pending left
// in the clock's heap, at the times it had asked for before (see
// timedHeap). Stop of a pending call scans the clock's heap, microseconds
// for tens of thousands of calls: a call scheduled again needs no Stop
// before At.
func (c *Call) Stop() bool {
	if s, ok := c.clk.(scheduling); ok {
		return s.cancel(&c.entry)
	}
	if c.other == nil {
		return false
	}
	t := c.other
	c.other = nil
	return t.Stop()
}
