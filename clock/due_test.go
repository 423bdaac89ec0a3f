package clock

import (
	"testing"
	"time"
)

// The calls of a real clock's pass that run late read the times they fell
// due with Due, while Now reads later; between passes Due reads Now. A
// virtual clock's calls run at their due time: Due is its Now.
func TestDueIsWhenTheCallFellDue(t *testing.T) {
	s := newScheduler(time.Now().Add(-time.Hour), defaultQuantum) // the calls below fell due long ago
	s.owner = 1                                                   // as if a runner were in charge: push arms no timer, the test runs the pass
	r := &Real{s: s}
	var _ Lagging = r
	var dues, nows []time.Duration
	for _, at := range []time.Duration{time.Second, 2 * time.Second} {
		s.push(&timedCall{f: func() { dues, nows = append(dues, Due(r)), append(nows, r.Now()) }}, at)
	}
	s.beginPass()
	s.drain(s.since(), 0, s.owner)
	s.endPass(nil, s.owner)
	if len(dues) != 2 || dues[0] != time.Second || dues[1] != 2*time.Second || nows[0] < time.Hour {
		t.Errorf("calls due at 1s and 2s that ran after an hour read Due %v and Now %v", dues, nows)
	}
	before := r.Now()
	between := Due(r)
	if after := r.Now(); between < before || between > after {
		t.Errorf("between passes Due read %v, Now %v then %v; want Now", between, before, after)
	}
	v := NewVirtual()
	v.Advance(time.Second)
	if Due(v) != v.Now() {
		t.Errorf("a virtual clock's Due is %v, its Now %v", Due(v), v.Now())
	}
}

// A pass whose call is held up past the watchdog's limit stays under way
// while a new runner runs the passes after it: between those, Due reads
// Now, not the due time of the call the new runner ran last, which falls
// further behind for as long as the clock has nothing to run; and the end
// of the pass held up leaves a call of the new runner's its due time.
func TestDueBesideAPassHeldUp(t *testing.T) {
	s := newScheduler(time.Now().Add(-time.Hour), defaultQuantum)
	const old, runner = 1, 2
	s.owner = runner // the watchdog replaced the runner old, whose call is held up
	r := &Real{s: s}
	s.beginPass() // old's
	s.push(&timedCall{f: func() {}}, time.Second)
	s.beginPass()
	s.drain(s.since(), 0, s.owner)
	s.endPass(nil, runner)
	before := r.Now()
	between := r.Due()
	if after := r.Now(); between < before || between > after {
		t.Errorf("between the passes of the runner in charge Due read %v, Now %v then %v; want Now", between, before, after)
	}
	var due time.Duration
	s.push(&timedCall{f: func() { s.endPass(nil, old); due = r.Due() }}, 2*time.Second)
	s.beginPass()
	s.drain(s.since(), 0, s.owner)
	s.endPass(nil, runner)
	if due != 2*time.Second {
		t.Errorf("a call due at 2s read Due %v once the pass held up ended beside it", due)
	}
}

// In a pass shared among goroutines a call reads with Due its own due time
// or that of a call started after it beside it, never an earlier one's, and
// none later than the pass's time. The goroutines of a pass store the due
// time of each call they start: stored outside the scheduler's lock, the
// time of a call taken first could land after that of a call taken later
// and hold Due back. The test interleaves the two goroutines of a pass just
// so: the one that takes the first call lets go of the lock and is held up
// before anything it does after (scheduler.taken) until the other has
// taken the second call and started it; the second call reads Due once the
// first has started. A due time stored outside the lock, anywhere between
// the letting go and the call's run, is stored late.
func TestDueNeverBeforeTheCallsOwn(t *testing.T) {
	s := newScheduler(time.Now().Add(-time.Hour), defaultQuantum) // the calls below fell due long ago
	s.owner = 1                                                   // as if a runner were in charge: push arms no timer, the test runs the pass
	r := &Real{s: s}
	var dues [2]time.Duration
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	first := &timedCall{f: func() {
		close(started[0])
		dues[0] = r.Due()
	}}
	second := &timedCall{f: func() {
		close(started[1])
		<-started[0]
		dues[1] = r.Due()
	}}
	s.push(first, time.Second)
	s.push(second, 2*time.Second)
	s.taken = func(c *timedCall) {
		if c == first { // the other goroutine of the pass takes the second call meanwhile
			s.mu.Unlock()
			<-started[1]
			s.mu.Lock()
		}
	}
	s.beginPass()
	s.drain(s.since(), 1, s.owner)
	s.endPass(nil, s.owner)
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if dues[i] < want || dues[i] > 2*time.Second {
			t.Errorf("of the calls due at 1s and 2s of a shared pass, the one due at %v read Due %v", want, dues[i])
		}
	}
}
