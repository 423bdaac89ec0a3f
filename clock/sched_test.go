package clock

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard/internal/await"
)

// The real clock's calls run in time order, calls due together in the order
// they were made, also when they were made out of order; calls made from
// inside other calls run; a stopped call does not run.
func TestSchedulerRunsInTimeOrder(t *testing.T) {
	r := NewReal()
	defer r.Close()
	var mu sync.Mutex
	var got []string
	nested := false
	var done sync.WaitGroup
	done.Add(2)
	rec := func(s string) func() {
		return func() { mu.Lock(); got = append(got, s); mu.Unlock() }
	}
	base := r.Now() + 20*time.Millisecond
	At(r, base+30*time.Millisecond, func() { rec("d")(); done.Done() })
	At(r, base+10*time.Millisecond, rec("b"))
	At(r, base, rec("a"))
	At(r, base+10*time.Millisecond, rec("b2"))
	stopped := At(r, base+5*time.Millisecond, rec("stopped"))
	At(r, base+15*time.Millisecond, func() {
		rec("c")()
		// when the runner is behind, a call made by a call of its batch
		// runs after that batch, so nested may run after d
		At(r, base+25*time.Millisecond, func() { mu.Lock(); nested = true; mu.Unlock(); done.Done() })
	})
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should succeed once")
	}
	done.Wait()
	mu.Lock()
	defer mu.Unlock()
	if want := "[a b b2 c d]"; fmt.Sprint(got) != want || !nested {
		t.Errorf("ran %v and nested %v, want %v and the nested call", got, nested, want)
	}
}

// Many calls due close together run together, each once, also when a batch
// is shared among several goroutines.
func TestSchedulerManyCalls(t *testing.T) {
	r := NewReal()
	defer r.Close()
	const n = 5000
	var mu sync.Mutex
	ran := make([]int, n)
	var wg sync.WaitGroup
	wg.Add(n)
	base := r.Now() + 5*time.Millisecond
	for i := range n {
		At(r, base+time.Duration(i%7)*time.Millisecond, func() {
			mu.Lock()
			ran[i]++
			mu.Unlock()
			wg.Done()
		})
	}
	wg.Wait()
	if slices.ContainsFunc(ran, func(c int) bool { return c != 1 }) {
		t.Error("a call did not run exactly once")
	}
}

// A call that blocks does not stop the calls after it for good: the
// watchdog hands the schedule to a new runner.
func TestSchedulerBlockingCall(t *testing.T) {
	r := NewReal()
	defer r.Close()
	release := make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	defer let() // before Close, which waits for the blocked call: a guard that fails ends the test
	blocked := make(chan struct{})
	r.AfterFunc(0, func() { close(blocked); <-release })
	await.Within(t, blocked, "the call at 0 has not run")
	r.AfterFunc(time.Millisecond, let) // runs only if the schedule moves on
	await.Within(t, release, "the schedule has not moved on past a blocked call")
}

// A stopped call reports that it stopped only before it ran.
func TestSchedulerStopAfterRun(t *testing.T) {
	r := NewReal()
	defer r.Close()
	ran := make(chan struct{})
	tm := r.AfterFunc(0, func() { close(ran) })
	await.Within(t, ran, "the call at 0 has not run")
	if tm.Stop() {
		t.Error("Stop after the call ran must report false")
	}
}

// AfterPass runs its function at once outside a pass, before the first
// and after one, and within a pass after every call of the pass has run.
func TestAfterPass(t *testing.T) {
	r := NewReal()
	defer r.Close()
	var _ Batcher = r
	ran := false
	r.AfterPass(func() { ran = true })
	if !ran {
		t.Fatal("AfterPass outside a pass did not run its function at once")
	}
	var mu sync.Mutex
	var got []string
	rec := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	var hooks sync.WaitGroup
	const n = 3
	hooks.Add(n)
	// calls made by a call, due when it is, run in its pass
	at := r.Now() + time.Millisecond
	At(r, at, func() {
		for i := range n {
			At(r, at, func() {
				rec(fmt.Sprint("call", i))
				r.AfterPass(func() { rec(fmt.Sprint("after", i)); hooks.Done() })
			})
		}
	})
	hooks.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2*n {
		t.Fatalf("ran %v, want %d calls and as many functions after them", got, n)
	}
	for i, s := range got {
		if after := strings.HasPrefix(s, "after"); after != (i >= n) {
			t.Fatalf("ran %v: every call of the pass must run before the functions deferred to its end", got)
		}
	}
	// once the pass has ended, AfterPass runs its function at once again
	after := make(chan bool, 1)
	r.AfterFunc(0, func() {
		r.AfterPass(func() {
			ran := false
			r.AfterPass(func() { ran = true })
			after <- ran
		})
	})
	if !await.Within(t, after, "the pass has not run") {
		t.Error("AfterPass after a pass ended did not run its function at once")
	}
}

// DeferToPass defers its function to the end of the pass under way, as
// AfterPass does, and outside a pass reports false without running it.
func TestDeferToPass(t *testing.T) {
	r := NewReal()
	defer r.Close()
	if r.DeferToPass(func() { t.Error("DeferToPass outside a pass ran its function") }) {
		t.Error("DeferToPass outside a pass reported true")
	}
	type result struct{ deferred, ranAfterCall, ranAgain, deferredAfter bool }
	results := make(chan result, 1)
	r.AfterFunc(0, func() {
		var res result
		callDone := false
		res.deferred = r.DeferToPass(func() {
			res.ranAfterCall = callDone
			// at the end of the pass, no pass is under way any more
			res.deferredAfter = r.DeferToPass(func() { res.ranAgain = true })
			results <- res
		})
		callDone = true
	})
	res := await.Within(t, results, "the pass has not run")
	if !res.deferred || !res.ranAfterCall {
		t.Errorf("DeferToPass within a pass: reported %v, ran after the call %v; want true, true", res.deferred, res.ranAfterCall)
	}
	if res.deferredAfter || res.ranAgain {
		t.Errorf("DeferToPass at the end of a pass: reported %v, ran %v; want false, false", res.deferredAfter, res.ranAgain)
	}
}

// Each real clock has a scheduler of its own: a pass of one clock is no
// pass of another, whose AfterPass runs its function at once.
func TestAfterPassIsTheClocks(t *testing.T) {
	r1, r2 := NewReal(), NewReal()
	defer r1.Close()
	defer r2.Close()
	result := make(chan bool, 1)
	r1.AfterFunc(0, func() {
		ran := false
		r2.AfterPass(func() { ran = true })
		result <- ran
	})
	if !await.Within(t, result, "the pass has not run") {
		t.Error("AfterPass of a clock waited for the pass of another")
	}
}

// A pass without helpers allocates nothing: the scheduler runs about a
// thousand of them a second.
func TestSchedulerDrainAllocs(t *testing.T) {
	s := newScheduler(time.Now(), defaultQuantum)
	s.owner = 1 // as if a runner were in charge: push arms no timer, the test drains
	ran := 0
	c := &timedCall{f: func() { ran++ }}
	n := testing.AllocsPerRun(100, func() {
		s.push(c, 0)
		s.drain(s.since(), 0, s.owner)
	})
	if n != 0 {
		t.Errorf("a pass allocates %v times, want 0", n)
	}
	if ran != 101 {
		t.Errorf("the call ran %d times, want 101", ran)
	}
}

// A call runs no earlier than asked, and a call made in place of the
// earliest pending one moves it: one run stays pending, which Stop cancels.
func TestRealAfterFuncAndReschedule(t *testing.T) {
	r := NewReal()
	defer r.Close()
	const d = 20 * time.Millisecond
	start := r.Now()
	done := make(chan time.Duration, 1)
	r.AfterFunc(d, func() { done <- r.Now() })
	if at := await.Within(t, done, "the call has not run"); at-start < d {
		t.Errorf("a call after %v ran after %v", d, at-start)
	}
	c := NewCall(r, func() {})
	c.At(time.Hour)
	c.At(2 * time.Hour) // in place of the earliest pending run
	r.s.mu.Lock()
	n := r.s.calls.len()
	r.s.mu.Unlock()
	if n != 1 || !c.Stop() || c.Stop() {
		t.Errorf("%d runs pending after scheduling one twice, want 1, which Stop cancels once", n)
	}
}

// A call runs at its time when the scheduler's timer was set for a later
// one, on a clock that has run for long, and when a blocking call holds
// the runner after the watchdog found nothing else to run.
func TestRealWakesForEachCall(t *testing.T) {
	later := NewReal()
	defer later.Close()
	far := later.AfterFunc(time.Hour, func() {})
	defer far.Stop()
	old := &Real{s: newScheduler(time.Now().Add(-time.Hour), defaultQuantum)}
	for _, tt := range []struct {
		name string
		r    *Real
	}{
		{"a call before a pending one", later},
		{"a clock an hour old", old},
	} {
		done := make(chan struct{})
		tt.r.AfterFunc(time.Millisecond, func() { close(done) })
		await.Within(t, done, tt.name+": the call has not run")
	}

	r := NewReal()
	defer r.Close()
	release := make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	defer let() // before Close, which waits for the blocked call: a guard that fails ends the test
	blocked := make(chan struct{})
	r.AfterFunc(0, func() { close(blocked); <-release })
	await.Within(t, blocked, "the call at 0 has not run")
	time.Sleep(3 * stallLimit) // the watchdog looks, and finds no call to run
	r.AfterFunc(0, let)
	await.Within(t, release, "a call made while another blocks has not run")
}

// A pass runs the calls due by its time, those due exactly then too, with
// helpers or without, and counts them; the later ones stay pending.
func TestSchedulerDrainCounts(t *testing.T) {
	for _, tt := range []struct {
		at      []time.Duration
		now     time.Duration
		helpers int
		ran     int
	}{
		{nil, time.Second, 0, 0},
		{[]time.Duration{1, 2, 3}, 2, 0, 2},
		{[]time.Duration{1, 2, 3}, 3, 0, 3},
		{[]time.Duration{5, 1, 2, 7}, 5, 1, 3},
		{[]time.Duration{4}, 3, 2, 0},
	} {
		s := newScheduler(time.Now(), defaultQuantum)
		s.owner = 1 // as if a runner were in charge: push arms no timer, the test drains
		var mu sync.Mutex
		var ran []time.Duration
		for _, at := range tt.at {
			c := &timedCall{f: func() { mu.Lock(); ran = append(ran, at); mu.Unlock() }}
			s.push(c, at)
		}
		n := s.drain(tt.now, tt.helpers, s.owner)
		if n != tt.ran || len(ran) != tt.ran || s.calls.len() != len(tt.at)-tt.ran {
			t.Errorf("calls at %v drained at %v with %d helpers: %d counted, %d ran, %d pending; want %d ran",
				tt.at, tt.now, tt.helpers, n, len(ran), s.calls.len(), tt.ran)
		}
		for _, at := range ran {
			if at > tt.now {
				t.Errorf("calls at %v drained at %v: the call at %v ran", tt.at, tt.now, at)
			}
		}
	}
}

// A call scheduled again from another goroutine while the scheduler takes
// it to run: the run reads the time its call fell due, not the time the
// other goroutine gives it meanwhile (under go test -race, a read of the
// call's time outside the scheduler's lock is a race).
func TestRealCallScheduledAgainWhileItRuns(t *testing.T) {
	r := NewReal()
	defer r.Close()
	var ran, ahead atomic.Int64
	c := NewCall(r, func() {
		if Due(r) > r.Now() {
			ahead.Add(1)
		}
		ran.Add(1)
	})
	for ran.Load() < 100 {
		c.At(r.Now())
		c.At(r.Now() + time.Hour) // in place of the run the runner may be taking
		c.At(r.Now())
		runtime.Gosched()
	}
	c.Stop()
	if n := ahead.Load(); n > 0 {
		t.Errorf("%d of %d runs read a Due ahead of Now: the time of a run scheduled meanwhile", n, ran.Load())
	}
}

// A clock with a quantum runs the calls that fall due within a quantum of
// its last wake together, in the next wake's pass, none before its time;
// the passes start at least a quantum apart. The calls are made by the
// first pass's call, due just after its start, and read the start of the
// pass they run in from the scheduler: the test bounds no wall-clock time,
// so a busy machine that holds up a call changes nothing it checks.
func TestRealQuantumGathersCalls(t *testing.T) {
	const q = 50 * time.Millisecond
	r := NewRealQuantum(q)
	defer r.Close()
	passStart := func() time.Duration {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		return r.s.lastWake
	}
	const n = 3
	var first time.Duration // the start of the first call's pass
	starts := make([]time.Duration, n)
	var wg sync.WaitGroup
	wg.Add(n)
	r.AfterFunc(0, func() {
		first = passStart()
		for i := range n {
			due := first + time.Duration(i+1)*time.Millisecond // within a quantum of the wake
			At(r, due, func() {
				defer wg.Done()
				if now := r.Now(); now < due {
					t.Errorf("call %d due at %v ran at %v", i, due, now)
				}
				starts[i] = passStart()
			})
		}
	})
	wg.Wait()
	for i, s := range starts {
		if s != starts[0] {
			t.Fatalf("calls due %v apart within a quantum of %v ran in passes starting at %v, want one pass", time.Millisecond, q, starts)
		}
		if s-first < q {
			t.Errorf("call %d ran in a pass that started %v after the last, less than the quantum %v", i, s-first, q)
		}
	}
}

// NewReal's quantum is a millisecond, and a quantum below it is raised to
// it; a longer one sleeps on the runtime's timer alone.
func TestRealQuantum(t *testing.T) {
	for _, tt := range []struct {
		r             *Real
		quantum, lead time.Duration
	}{
		{NewReal(), time.Millisecond, wakeLead},
		{NewRealQuantum(0), time.Millisecond, wakeLead},
		{NewRealQuantum(5 * time.Millisecond), 5 * time.Millisecond, 0},
	} {
		if tt.r.Quantum() != tt.quantum || tt.r.s.lead != tt.lead {
			t.Errorf("quantum %v and lead %v, want %v and %v", tt.r.Quantum(), tt.r.s.lead, tt.quantum, tt.lead)
		}
	}
}

// A pass is shared among goroutines only when the last ran parallelBatch
// calls or more per millisecond of the quantum: a runner alone keeps up
// with fewer, and a single device's few calls a pass never share one. The
// test runs at four processors, whatever the machine has, so that a pass
// shared has helpers to tell it from one that is not (at one processor a
// shared pass has none).
func TestSchedulerHelpers(t *testing.T) {
	const procs = 4
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	const more = procs - 1
	for _, tt := range []struct {
		quantum time.Duration
		ran     int
		helpers int
	}{
		{time.Millisecond, 0, 0},
		{time.Millisecond, 63, 0},
		{time.Millisecond, 64, more},
		{5 * time.Millisecond, 250, 0}, // 2,000 streaming devices
		{5 * time.Millisecond, 320, more},
	} {
		s := newScheduler(time.Now(), tt.quantum)
		s.lastRan = tt.ran
		if got := s.helpers(); got != tt.helpers {
			t.Errorf("quantum %v, %d calls in the last pass: %d helpers, want %d", tt.quantum, tt.ran, got, tt.helpers)
		}
	}
}

// A runner that the watchdog replaced while a call held it up stops once
// the call returns. If it went on with the calls due by its pass's time, it
// would run them beside the runner in charge: two calls at once where a
// runner runs them one after the other, a Call beside its own next run.
// Nor does the end of its pass run what the calls of the pass under way
// deferred to their pass's end, before the last of them has run, or set
// the count on which the runner in charge decides on helpers.
func TestSchedulerReplacedRunnerStops(t *testing.T) {
	s := newScheduler(time.Now().Add(-time.Hour), defaultQuantum) // the calls below fell due long ago
	const old, runner = 1, 2
	s.owner = old // as fire makes a runner; the test replaces it as the watchdog does
	blocked, release := make(chan struct{}), make(chan struct{})
	s.push(&timedCall{f: func() { close(blocked); <-release }}, time.Second)
	var ran, hooked atomic.Bool
	next := &timedCall{f: func() { ran.Store(true) }}
	s.push(next, 2*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(old)
	}()
	await.Within(t, blocked, "the call has not run")
	s.mu.Lock()
	s.owner, s.lastRan = runner, 100 // the watchdog's replacement, after a busy pass
	s.mu.Unlock()
	s.beginPass() // the new runner's, under way: a call of it defers a hook
	s.deferToPassEnd(func() { hooked.Store(true) })
	close(release)
	await.Within(t, done, "the old runner has not returned")
	if ran.Load() || !next.pending() {
		t.Error("the replaced runner ran a call due after the one that held it up")
	}
	if hooked.Load() {
		t.Error("the end of the replaced runner's pass ran a hook of the pass under way")
	}
	if s.lastRan != 100 {
		t.Errorf("the replaced runner set the count of the last pass to %d", s.lastRan)
	}
	s.endPass(nil, runner)
	if !hooked.Load() {
		t.Error("the end of the pass under way did not run its hook")
	}
}

// A runner's pass that ends as the watchdog replaces the runner decides
// whether it is the pass of the runner in charge before the new runner's
// first pass begins. Deciding, and letting go of the scheduler's lock,
// before it counted its end under the passes' lock, the end of the old
// pass could find itself in charge and yet meet the new pass under way,
// and run the hooks that the calls of the new pass had deferred, before
// its last call. The test holds the passes' lock while the old pass ends,
// and replaces the runner then if the scheduler's lock lets it.
func TestSchedulerPassEndBesideReplacement(t *testing.T) {
	s := newScheduler(time.Now(), defaultQuantum)
	const old, runner = 1, 2
	s.owner = old
	s.beginPass() // old's, at its end
	s.passMu.Lock()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s.endPass(nil, old)
	}()
	for !endingPass() {
		runtime.Gosched()
	}
	var hooked atomic.Bool
	hook := func() { hooked.Store(true) }
	replaced := s.mu.TryLock() // the watchdog, if it can replace the runner now
	if replaced {
		s.owner = runner
		s.mu.Unlock()
		// The new runner's pass begins, and a call of it defers a hook,
		// as beginPass and deferToPassEnd do under the lock held here.
		s.passes++
		s.afterPass = append(s.afterPass, hook)
	}
	s.passMu.Unlock()
	await.Within(t, ended, "the old pass has not ended")
	if !replaced { // the old pass's end held the watchdog off until it had counted itself
		s.mu.Lock()
		s.owner = runner
		s.mu.Unlock()
		s.beginPass()
		s.deferToPassEnd(hook)
	}
	if hooked.Load() {
		t.Error("the end of the replaced runner's pass ran a hook of the new runner's pass under way")
	}
	s.endPass(nil, runner)
	if !hooked.Load() {
		t.Error("the end of the new runner's pass did not run its hook")
	}
}

// endingPass reports whether a goroutine waits for a lock in
// scheduler.endPass.
func endingPass() bool { return waitsIn("[sync.Mutex.Lock", "clock.(*scheduler).endPass(") }

// waitsIn reports whether the stack of a goroutine holds both wait, what
// it waits in, and fn, a function it waits from.
func waitsIn(wait, fn string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, wait) && strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

// The end of the last pass under way runs what was deferred to the end of
// the passes, also when the watchdog replaced its runner: the runner in
// charge may have no pass under way, and none may come.
func TestSchedulerReplacedRunnersPassEndsLast(t *testing.T) {
	s := newScheduler(time.Now(), defaultQuantum)
	const old, runner = 1, 2
	s.owner = old
	s.beginPass()
	s.owner = runner // the watchdog's replacement, whose passes have ended
	hooked := false
	s.deferToPassEnd(func() { hooked = true })
	s.endPass(nil, old)
	if !hooked {
		t.Error("the end of the last pass under way, a replaced runner's, did not run its hook")
	}
}

// Close stops the clock's runners, one that a call holds up and the one
// the watchdog put in its place, and its timer: it waits for the call
// under way, and no goroutine of the clock survives it. The calls pending
// never run; those scheduled after Close are dropped.
func TestRealClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := NewReal()
	ticked := make(chan struct{}, 1)
	var tick *Call
	tick = NewCall(r, func() { // a runner always has work
		select {
		case ticked <- struct{}{}:
		default:
		}
		tick.At(r.Now() + time.Millisecond)
	})
	tick.At(0)
	blocked, release := make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	r.AfterFunc(0, func() {
		close(blocked)
		<-release
		returned.Store(true)
	})
	pending := r.AfterFunc(time.Hour, func() { t.Error("a call pending at Close ran") })
	await.Within(t, blocked, "the call at 0 has not run")
	select { // a tick of the runner now held up
	case <-ticked:
	default:
	}
	await.Within(t, ticked, "the runner the watchdog put in its place has not ticked")
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		r.Close()
	}()
	// The call under way returns once Close waits for it, or has
	// returned without waiting.
wait:
	for !closing() {
		select {
		case <-closed:
			t.Error("Close returned while a call was under way")
			break wait
		default:
			runtime.Gosched()
		}
	}
	close(release)
	await.Within(t, closed, "Close has not returned")
	if !returned.Load() {
		t.Error("Close returned before the call under way")
	}
	if pending.Stop() || tick.Stop() {
		t.Error("a call was pending after Close")
	}
	r.AfterFunc(0, func() { t.Error("a call made after Close ran") })
	tick.At(0)
	if tick.Stop() || r.s.calls.len() > 0 || r.s.armedFor != 0 {
		t.Error("a call made after Close is pending")
	}
	r.Close() // again: nothing more
}

// closing reports whether a goroutine waits in scheduler.close for the
// scheduler's goroutines.
func closing() bool { return waitsIn("sync.(*WaitGroup).Wait", "clock.(*scheduler).close(") }
