package clock

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A real clock runs its calls on a scheduler of its own: a heap of calls
// in time order, and runners that take every call that is due and run them
// one after the other. A fleet of devices makes tens of calls per
// device-second; a goroutine and a wake-up of an idle thread for each of
// them cost several times the work of the calls, so the devices of a fleet
// share one clock and its scheduler.
//
// Runners come and go with the work, so nothing runs while no call is
// pending: the scheduler arms one runtime timer for its earliest call, and
// the goroutine that timer starts becomes the runner. A runner goes on
// while the next call is close (within wakeLead), sleeping until it falls
// due; it leaves the rest to a new timer. Runtime timers wake up to a
// millisecond late, so the timer is armed wakeLead early and the runner
// sleeps the remaining time precisely (sleepUntil).
//
// Calls that fall due close together run together: a runner wakes at most
// once per quantum (a millisecond, or what NewRealQuantum gives), so the
// wake-ups of a process stay at one a quantum, a thousand a second at a
// millisecond, however many devices its clock runs, at the price of up to
// a quantum of lateness when calls crowd. A quantum longer than wakeLead
// is the lateness its clock's users accept: its runner sleeps on the
// runtime timer alone, armed for the next wake, and leaves between passes.
// A precise sleep is a system call that holds the runner's processor (P)
// for up to wakeLead while the goroutines the pass made ready wait, or
// another thread is woken to take it over; the runtime timer's millisecond
// is a small part of a longer quantum. Due calls start in time order
// (calls due at the same time in the order they were made), including
// those the calls make: a runner that is behind brings every stream
// forward in step. When the last wake ran more than parallelBatch
// calls per millisecond of its quantum, up to GOMAXPROCS goroutines of the
// runner share the next, and it waits for them: a runner alone keeps up
// with fewer, without the helpers' wake-ups and their contention for the
// schedule. (Counted, not timed: a pass that the system held up is no
// busier, and helpers that it holds up as well make the runner wait.) A
// call that blocks holds up the calls behind it only until the watchdog
// (stallLimit) hands the schedule to a new runner; the runner it replaced
// stops when the call returns, so that one runner runs the schedule.
//
// A wake's run of the due calls is a pass. AfterPass (Real's, the clock's
// Batcher) defers a function to the end of the pass under way: the calls of
// a pass can hand a transport several pieces of data, and it sends them
// together once the pass ends.
//
// The scheduler's goroutines are those the runtime timer starts, runners
// or not, and the helpers a runner waits for. It counts each of the
// timer's from the arming of the timer to its return, and close, which
// drops the calls and refuses new ones, waits for them (Real.Close).
const (
	wakeLead       = time.Millisecond
	defaultQuantum = time.Millisecond
	stallLimit     = 20 * time.Millisecond
	// parallelBatch is how many calls per millisecond of the quantum a
	// wake must have run for the next one to share the work among
	// goroutines.
	parallelBatch = 64
)

// scheduler runs the calls of one real clock. Its times are the clock's:
// durations since start.
type scheduler struct {
	start    time.Time
	quantum  time.Duration // a runner wakes at most once per quantum
	lead     time.Duration // how early the timer fires for a precise sleep; 0 sleeps on the timer alone
	mu       sync.Mutex
	calls    timedHeap
	seq      uint64
	timer    *time.Timer   // the runtime timer that starts a runner or checks on it
	armedFor time.Duration // when timer fires; 0 when stopped
	owner    uint64        // generation of the runner in charge, 0 when none
	gen      uint64
	lastWake time.Duration // when the runner in charge last started on the due calls
	lastRan  int           // how many calls it ran then
	ran      atomic.Uint64 // calls run: the watchdog's measure of progress
	reached  atomic.Int64  // 1 + the due time of the call started last in the pass under way; 0 once a pass ends (Real.Due)
	seen     uint64        // ran when the watchdog last looked

	passMu    sync.Mutex // taken after mu where both are held (endPass)
	passes    int        // passes under way (more than one after the watchdog replaced a runner)
	afterPass []func()   // what deferToPassEnd deferred to the end of the passes under way

	closed     bool           // by close: nothing is scheduled any more, no runner starts
	goroutines sync.WaitGroup // of the runtime timer: one armed to start, or started and not yet returned

	// taken, when set (by tests), runs on a goroutine of a pass that took
	// c as its last step under the lock: a test that lets go of the lock
	// and takes it again there holds the goroutine up as it lets go.
	taken func(c *timedCall)
}

// newScheduler returns a scheduler whose runners wake at most once per
// quantum, sleeping precisely when it is no longer than wakeLead.
func newScheduler(start time.Time, quantum time.Duration) *scheduler {
	s := &scheduler{start: start, quantum: quantum}
	if quantum <= wakeLead {
		s.lead = wakeLead
	}
	s.timer = time.AfterFunc(time.Hour, s.fire)
	s.timer.Stop()
	return s
}

// since returns the scheduler's time now.
func (s *scheduler) since() time.Duration { return time.Since(s.start) }

// stop takes c out of the schedule if it is pending and reports whether
// it was, leaving its entry in the heap, stale.
func (s *scheduler) stop(c *timedCall) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.remove(c)
}

// cancel takes c out of the schedule if it is pending, its entry with it,
// and reports whether it was.
func (s *scheduler) cancel(c *timedCall) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.cancel(c)
}

// push schedules c to run at scheduler time t, after the calls already
// scheduled for t, in place of its pending run if it has one. After close
// it schedules nothing.
func (s *scheduler) push(c *timedCall, t time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.seq++
	s.calls.push(c, t, s.seq)
	if s.owner == 0 && s.calls.e[0].c == c {
		s.arm(max(t, s.lastWake+s.quantum) - s.lead)
	}
}

// arm sets the runtime timer to fire at t (scheduler time); s.mu is held.
func (s *scheduler) arm(t time.Duration) {
	t = max(t, 1) // 0 means stopped
	if s.armedFor != 0 && s.armedFor <= t {
		return // it fires early enough; the runner it starts looks again
	}
	s.armedFor = t
	if !s.timer.Reset(t - s.since()) {
		s.goroutines.Add(1) // it was not armed: it starts a goroutine once more
	}
}

// fire runs when the runtime timer fires: it starts a runner when none is
// in charge, and replaces one that has not finished a call since it last
// looked.
func (s *scheduler) fire() {
	defer s.goroutines.Done()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.armedFor = 0
	if s.owner == 0 && s.calls.len() == 0 {
		s.mu.Unlock()
		return
	}
	if s.owner != 0 {
		if ran := s.ran.Load(); ran != s.seen {
			s.seen = ran
			s.arm(s.since() + stallLimit)
			s.mu.Unlock()
			return
		}
	}
	s.gen++
	g := s.gen
	s.owner = g
	s.seen = s.ran.Load()
	s.arm(s.since() + stallLimit)
	s.mu.Unlock()
	s.run(g) // the timer's own goroutine is the runner
}

// run runs due calls while it is in charge and calls are close.
func (s *scheduler) run(g uint64) {
	var hooks []func() // the runner's own copy of afterPass, reused
	for {
		s.mu.Lock()
		if s.owner != g {
			s.mu.Unlock()
			return // a new runner took over while a call held this one up
		}
		now := s.since()
		if now-s.lastWake >= s.quantum && s.calls.len() > 0 && s.calls.first() <= now {
			s.lastWake = now
			helpers := s.helpers()
			s.mu.Unlock()
			s.beginPass()
			n := s.drain(now, helpers, g)
			hooks = s.endPass(hooks, g)
			s.mu.Lock()
			if s.owner == g { // a runner replaced meanwhile ran its pass in part
				s.lastRan = n
			}
			s.mu.Unlock()
			continue
		}
		if s.calls.len() == 0 {
			s.owner = 0
			s.stopTimer()
			s.mu.Unlock()
			return
		}
		wake := max(s.calls.first(), s.lastWake+s.quantum)
		if wake-now > s.lead {
			s.owner = 0
			s.stopTimer()
			s.arm(wake - s.lead)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.sleepUntil(wake)
	}
}

// helpers returns how many goroutines help the runner with the next pass:
// none unless the last ran parallelBatch calls or more per millisecond of
// the quantum; s.mu is held.
func (s *scheduler) helpers() int {
	if s.lastRan >= parallelBatch*int(s.quantum/time.Millisecond) {
		return runtime.GOMAXPROCS(0) - 1
	}
	return 0
}

// stopTimer stops the runtime timer; s.mu is held.
func (s *scheduler) stopTimer() {
	if s.armedFor != 0 {
		if s.timer.Stop() {
			s.goroutines.Done() // it will not start the goroutine it was armed for
		}
		s.armedFor = 0
	}
}

// close stops the scheduler: the calls pending never run, nor do those
// scheduled after, and no runner starts. It waits for the goroutines of
// the timer, the runners among them, which end after the call under way:
// it must not be called from a call, which it would wait for.
func (s *scheduler) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.stopTimer()
		for _, e := range s.calls.e {
			e.c.seq = 0 // not pending: a call's entries leave the heap with it
		}
		s.calls = timedHeap{} // the runners stop after the call under way, finding none
	}
	s.mu.Unlock()
	s.goroutines.Wait()
}

// drain runs the calls due by now, the earliest first, also those that the
// calls make due by now (a stream that is behind catches up in step with
// the others), on this goroutine and helpers more, which it waits for, for
// as long as runner g is in charge. It returns how many calls ran. Without
// helpers it allocates nothing: it runs about a thousand times a second.
func (s *scheduler) drain(now time.Duration, helpers int, g uint64) int {
	if helpers == 0 {
		return s.work(now, g)
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	for range helpers {
		wg.Go(func() { n.Add(int64(s.work(now, g))) })
	}
	n.Add(int64(s.work(now, g)))
	wg.Wait()
	return int(n.Load())
}

// work runs calls due by now, one after the other, until none is left or
// runner g is no longer in charge, and returns how many it ran. A runner
// that the watchdog replaced while a call held it up stops when the call
// returns: the new runner runs the schedule alone, so that calls made to
// run one after the other do not run two at once, a Call beside its own
// next run among them.
func (s *scheduler) work(now time.Duration, g uint64) int {
	n := 0
	for {
		s.mu.Lock()
		if s.owner != g || s.calls.len() == 0 || s.calls.first() > now {
			s.mu.Unlock()
			return n
		}
		at := s.calls.first() // not c.at once unlocked: c may be scheduled again meanwhile
		c := s.calls.pop()
		// Under the lock, so that Due follows the calls in the order
		// they start, and never goes back to an earlier call's time.
		s.reached.Store(int64(at) + 1)
		if s.taken != nil {
			s.taken(c)
		}
		s.mu.Unlock()
		c.f()
		s.ran.Add(1)
		n++
	}
}

// deferToPassEnd runs f when the pass under way ends, or at once when no
// pass is under way (Real.AfterPass).
func (s *scheduler) deferToPassEnd(f func()) {
	if !s.deferToPass(f) {
		f()
	}
}

// deferToPass defers f to the end of the pass under way and reports true,
// or reports false when no pass is under way (Real.DeferToPass).
func (s *scheduler) deferToPass(f func()) bool {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	if s.passes == 0 {
		return false
	}
	s.afterPass = append(s.afterPass, f)
	return true
}

// beginPass notes a pass under way: deferToPassEnd defers to its end.
func (s *scheduler) beginPass() {
	s.passMu.Lock()
	s.passes++
	s.passMu.Unlock()
}

// endPass notes the end of a pass of runner g and runs what deferToPassEnd
// deferred, taking it into buf, which it returns emptied for the next
// pass.
func (s *scheduler) endPass(buf []func(), g uint64) []func() {
	// The passes' lock is taken before the scheduler's is let go, so that
	// a runner that replaces g after it was found in charge begins its
	// pass only after this one is counted out: what its calls defer is
	// not this pass's to run.
	s.mu.Lock()
	inCharge := s.owner == g
	s.passMu.Lock()
	s.mu.Unlock()
	s.passes--
	if s.passes == 0 || inCharge {
		// Between the passes of the runner in charge Due reads Now, also
		// while the pass of one the watchdog replaced is held up; that
		// pass's end leaves the reading of the one under way.
		s.reached.Store(0)
	}
	if s.passes > 0 && !inCharge {
		// The pass of a runner the watchdog replaced ends while another
		// is under way, as a rule the pass of the runner in charge:
		// what was deferred waits for the end of that one, after its
		// last call, or of the last pass under way.
		s.passMu.Unlock()
		return buf
	}
	buf = append(buf[:0], s.afterPass...)
	clear(s.afterPass)
	s.afterPass = s.afterPass[:0]
	s.passMu.Unlock()
	for _, f := range buf {
		f()
	}
	clear(buf)
	return buf[:0]
}

// sleepUntil sleeps until the scheduler's time t, more precisely than a
// runtime timer.
func (s *scheduler) sleepUntil(t time.Duration) {
	if d := t - s.since(); d > 0 {
		preciseSleep(d)
	}
}
