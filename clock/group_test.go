package clock

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// groupCall is a call of TestSchedulerPassByGroup: scheduled on the
// clock's group, at a time, and what it does when it runs.
type groupCall struct {
	name  string
	group uint64
	at    time.Duration
	then  func(p *groupRun) // nil for nothing
}

// groupPass is a pass of TestSchedulerPassByGroup: its time, its helpers
// and what is done before it, outside the clock's calls.
type groupPass struct {
	now     time.Duration
	helpers int
	before  func(p *groupRun) // nil for nothing
}

// groupRun schedules a test's calls on a real clock whose passes the test
// runs (an owner set, so that no timer starts a runner).
type groupRun struct {
	t     *testing.T
	r     *Real
	calls map[string]*Call
	times map[string]time.Duration // each call's last scheduled time
	names map[*timedCall]string
	taken []string // in the order the passes took them
	mu    sync.Mutex
	ran   []string // in the order they ran
	// shared is set during a pass with helpers, whose calls may read the
	// time of a call started beside them in Due
	shared bool
}

func newGroupRun(t *testing.T) *groupRun {
	p := &groupRun{t: t, r: NewRealQuantum(time.Hour), calls: map[string]*Call{},
		times: map[string]time.Duration{}, names: map[*timedCall]string{}}
	p.r.s.owner = 1
	p.r.s.taken = func(c *timedCall) { p.taken = append(p.taken, p.names[c]) }
	return p
}

// at schedules c, made on c.group's clock the first time.
func (p *groupRun) at(c groupCall) {
	call, ok := p.calls[c.name]
	if !ok {
		clk := p.r.Group(c.group)
		call = NewCall(clk, func() {
			if d, want := Due(clk), p.times[c.name]; d != want && !p.shared {
				p.t.Errorf("%s read Due %v, want its own time %v", c.name, d, want)
			}
			p.mu.Lock()
			p.ran = append(p.ran, c.name)
			p.mu.Unlock()
			if c.then != nil {
				c.then(p)
			}
		})
		p.calls[c.name] = call
		p.names[&call.entry] = c.name
	}
	p.times[c.name] = c.at
	call.At(c.at)
}

// pass runs a pass as the runner does.
func (p *groupRun) pass(now time.Duration, helpers int) {
	s := p.r.s
	p.shared = helpers > 0
	s.mu.Lock()
	s.gather(now, helpers == 0)
	s.mu.Unlock()
	s.beginPass()
	s.drain(now, helpers, s.owner)
	s.endPass(nil, s.owner)
}

// The calls of a pass on a clock's groups run group by group, in the
// order of the keys, the calls of no group first, each group's calls in
// time order (calls due together in the order they were made), those the
// calls make due by the pass's time too; each reads its own time in Due.
// A pass shared among goroutines takes its calls in time order.
func TestSchedulerPassByGroup(t *testing.T) {
	at := func(name string, group uint64, t time.Duration) func(*groupRun) {
		return func(p *groupRun) { p.at(groupCall{name: name, group: group, at: t}) }
	}
	stop := func(name string) func(*groupRun) {
		return func(p *groupRun) { p.calls[name].Stop() }
	}
	pass50 := []groupPass{{now: 50}}
	for _, tt := range []struct {
		name    string
		calls   []groupCall
		passes  []groupPass
		want    []string // taken, in order
		pending int
	}{
		{"groups in the order of their keys, each in time order, no group first",
			[]groupCall{{"a", 2, 10, nil}, {"b", 1, 30, nil}, {"c", 2, 20, nil}, {"d", 1, 10, nil}, {"e", 0, 50, nil}, {"f", 3, 0, nil}},
			pass50, []string{"e", "d", "b", "a", "c", "f"}, 0},
		{"a group's calls due together in the order they were made",
			[]groupCall{{"a", 1, 10, nil}, {"b", 1, 10, nil}, {"c", 1, 5, nil}, {"d", 2, 10, nil}},
			pass50, []string{"c", "a", "b", "d"}, 0},
		{"calls of no group in time order",
			[]groupCall{{"a", 0, 30, nil}, {"b", 0, 10, nil}, {"c", 0, 20, nil}},
			pass50, []string{"b", "c", "a"}, 0},
		{"a call made due by the pass runs with its group, in time order",
			[]groupCall{{"a", 1, 10, at("a2", 1, 25)}, {"b", 1, 30, nil}, {"c", 2, 20, at("c2", 2, 60)}},
			pass50, []string{"a", "a2", "b", "c"}, 1},
		{"a call made for the pass's own time runs in it, with its group",
			[]groupCall{{"a", 1, 10, at("a2", 1, 50)}, {"b", 1, 30, nil}, {"c", 2, 20, nil}},
			pass50, []string{"a", "b", "a2", "c"}, 0},
		{"a call made for a group that ran runs next",
			[]groupCall{{"a", 1, 10, nil}, {"b", 2, 10, at("x", 1, 5)}, {"c", 2, 20, nil}},
			pass50, []string{"a", "b", "x", "c"}, 0},
		{"a call of the pass stopped by an earlier one does not run",
			[]groupCall{{"a", 1, 10, stop("b")}, {"b", 2, 5, nil}},
			pass50, []string{"a"}, 0},
		{"a call of the pass moved past it waits for a later pass",
			[]groupCall{{"a", 1, 10, at("b", 2, 100)}, {"b", 2, 5, nil}, {"c", 3, 5, nil}},
			[]groupPass{{now: 50}, {now: 100}}, []string{"a", "c", "b"}, 0},
		{"a later call moved into the pass runs in its group",
			[]groupCall{{"a", 1, 10, at("b", 2, 20)}, {"b", 2, 90, nil}, {"c", 3, 5, nil}},
			pass50, []string{"a", "b", "c"}, 0},
		{"a call made between passes for a time a pass reached runs in the next",
			[]groupCall{{"a", 2, 10, nil}, {"b", 1, 60, nil}},
			[]groupPass{{now: 50}, {now: 70, before: at("x", 3, 30)}}, []string{"a", "b", "x"}, 0},
		{"a pass shared among goroutines in time order",
			[]groupCall{{"a", 2, 10, nil}, {"b", 1, 30, nil}, {"c", 2, 20, nil}, {"d", 1, 5, nil}},
			[]groupPass{{now: 50, helpers: 1}}, []string{"d", "a", "c", "b"}, 0},
		{"a pass in time order after one by group, with calls the last one left, in time order",
			[]groupCall{{"a", 2, 10, nil}},
			[]groupPass{{now: 50}, {now: 70, helpers: 1, before: func(p *groupRun) { at("x", 3, 20)(p); at("y", 1, 40)(p) }}},
			[]string{"a", "x", "y"}, 0},
		{"a pass in time order after one by group, with a call the last one left",
			[]groupCall{{"a", 2, 10, nil}, {"b", 1, 60, nil}, {"c", 2, 55, nil}},
			[]groupPass{{now: 50}, {now: 70, helpers: 1, before: at("x", 3, 20)}}, []string{"a", "x", "c", "b"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newGroupRun(t)
			defer p.r.Close()
			for _, c := range tt.calls {
				p.at(c)
			}
			for _, ps := range tt.passes {
				if ps.before != nil {
					ps.before(p)
				}
				p.pass(ps.now, ps.helpers)
			}
			if !slices.Equal(p.taken, tt.want) {
				t.Errorf("taken %v, want %v", p.taken, tt.want)
			}
			if ps := tt.passes[len(tt.passes)-1]; ps.helpers == 0 && !slices.Equal(p.ran, p.taken) {
				t.Errorf("ran %v, taken %v: a pass of one goroutine runs what it takes", p.ran, p.taken)
			}
			p.r.s.mu.Lock()
			n := p.r.s.len()
			p.r.s.mu.Unlock()
			if n != tt.pending {
				t.Errorf("%d calls pending after the passes, want %d", n, tt.pending)
			}
		})
	}
}

// A clock in a group schedules in it with AfterFunc and At as with a Call,
// and its Group(0) is the clock in no group.
func TestRealGroup(t *testing.T) {
	r := NewRealQuantum(time.Hour)
	defer r.Close()
	r.s.owner = 1 // the test runs the pass
	var ran []string
	rec := func(s string) func() { return func() { ran = append(ran, s) } }
	r.Group(2).AfterFunc(0, rec("after 2"))
	At(r.Group(1), 0, rec("at 1"))
	At(r, 0, rec("at none"))
	r.Group(1).AfterFunc(0, rec("after 1"))
	stopped := r.Group(1).AfterFunc(0, rec("stopped"))
	stopped.Stop()
	var inPass Timer // stopped by a call of the pass it waits in
	r.Group(3).AfterFunc(0, func() { ran = append(ran, "stops"); inPass.Stop() })
	inPass = r.Group(4).AfterFunc(0, rec("stopped in the pass"))
	r.Group(5).AfterFunc(0, rec("after 5"))
	r.s.mu.Lock()
	r.s.gather(time.Hour, true)
	r.s.mu.Unlock()
	r.s.drain(time.Hour, 0, r.s.owner)
	if want := []string{"at none", "at 1", "after 1", "after 2", "stops", "after 5"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if g := r.Group(3); g == r || g.Group(0) != r || r.Group(0) != r || g.Quantum() != r.Quantum() {
		t.Errorf("Group(3) %p, its Group(0) %p, the clock's %p, want a clock of its own whose Group(0) is the clock %p", g, g.Group(0), r.Group(0), r)
	}
}

// BenchmarkSchedulerPass runs passes of 100 ms of the calls of a fleet's
// streams, as BenchmarkFleetCalls schedules them (2,000 devices of three
// streams each, 13, 8 and 4 calls a second), in time order or by group,
// a device's streams in a group: the scheduler's own cost per call, which
// gathering a pass by group adds to, without the calls' work whose
// state it brings together.
func BenchmarkSchedulerPass(b *testing.B) {
	const devices, quantum = 2000, 100 * time.Millisecond
	periods := []time.Duration{time.Second / 13, time.Second * 16 / 125, time.Second / 4}
	for _, grouped := range []bool{false, true} {
		b.Run(fmt.Sprintf("groups=%v", grouped), func(b *testing.B) {
			r := NewRealQuantum(quantum)
			defer r.Close()
			r.s.owner = 1 // the benchmark runs the passes
			ran := 0
			for i := range 3 * devices {
				clk := r
				if grouped {
					clk = r.Group(uint64(i/3) + 1)
				}
				p := periods[i%3]
				next := time.Duration(i) * time.Microsecond
				var call *Call
				call = NewCall(clk, func() {
					ran++
					next += p
					call.At(next)
				})
				call.At(next)
			}
			now := time.Duration(0)
			pass := func() {
				now += quantum
				r.s.mu.Lock()
				r.s.gather(now, true)
				r.s.mu.Unlock()
				r.s.drain(now, 0, r.s.owner)
			}
			for range 10 {
				pass()
			}
			ran = 0
			cpu0 := cpuTime()
			for b.Loop() {
				pass()
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(ran), "ns-CPU/call")
		})
	}
}

// A call for a time before the clock's start, which a pass by group left
// among its calls and a pass in time order (a shared one) took back into
// the heap in time order, is stopped there: a stop that looked for it
// among the calls of a pass by group counted it out of the wrong heap,
// and the next pass took a call from an empty one.
func TestSchedulerStopCallBeforeStart(t *testing.T) {
	p := newGroupRun(t)
	defer p.r.Close()
	p.at(groupCall{"a", 1, 10, nil})
	p.pass(50, 0)
	p.shared = true // a call before the start reads Now in Due
	p.at(groupCall{"x", 2, -10, func(p *groupRun) { p.calls["y"].Stop() }})
	p.at(groupCall{"y", 2, -5, nil})
	s := p.r.s
	s.mu.Lock()
	s.gather(70, false) // as for a pass shared among goroutines
	s.mu.Unlock()
	s.drain(70, 0, s.owner)
	if want := []string{"a", "x"}; !slices.Equal(p.taken, want) {
		t.Errorf("taken %v, want %v", p.taken, want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls.len() != 0 || s.due.len() != 0 {
		t.Errorf("%d and %d calls pending in the heaps, want none", s.calls.len(), s.due.len())
	}
}

// A clock without groups runs its passes from the heap in time order: it
// moves none of its calls into the heap of a pass by group.
func TestRealWithoutGroups(t *testing.T) {
	r := NewRealQuantum(time.Hour)
	defer r.Close()
	r.s.owner = 1 // the test runs the pass
	var inPass int
	for range 3 {
		r.AfterFunc(0, func() { inPass = max(inPass, r.s.due.len()) })
	}
	r.s.mu.Lock()
	r.s.gather(time.Hour, true)
	r.s.mu.Unlock()
	if n := r.s.drain(time.Hour, 0, r.s.owner); n != 3 || inPass != 0 {
		t.Errorf("%d calls ran, %d of them in the heap by group at most; want 3, none", n, inPass)
	}
}

// A runner runs a pass by group, but one it shares among goroutines in
// time order.
func TestSchedulerRunnerPassOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // a shared pass has helpers
	for _, tt := range []struct {
		lastRan int // calls in the pass before
		want    []string
	}{
		{0, []string{"b", "a"}},
		{parallelBatch, []string{"a", "b"}},
	} {
		r := NewReal()
		s := r.s
		s.start = s.start.Add(-time.Second) // the calls are due
		s.owner, s.lastRan = 1, tt.lastRan  // the test runs the runner; no timer starts one
		names := map[*timedCall]string{}
		var taken []string
		s.taken = func(c *timedCall) { taken = append(taken, names[c]) }
		for _, c := range []struct {
			name  string
			group uint64
			at    time.Duration
		}{{"a", 2, 10}, {"b", 1, 20}} {
			call := NewCall(r.Group(c.group), func() {})
			names[&call.entry] = c.name
			call.At(c.at)
		}
		s.run(1)
		r.Close()
		if !slices.Equal(taken, tt.want) {
			t.Errorf("after a pass of %d calls the runner took %v, want %v", tt.lastRan, taken, tt.want)
		}
	}
}

// A call made between passes, while no runner is in charge, for a time
// that the last pass by group reached arms the timer that starts one.
func TestSchedulerCallForAPassReachedArms(t *testing.T) {
	p := newGroupRun(t)
	defer p.r.Close()
	p.at(groupCall{"a", 1, 10, nil})
	p.pass(50, 0)
	s := p.r.s
	s.mu.Lock()
	s.owner = 0 // the runner left
	s.mu.Unlock()
	p.at(groupCall{"b", 2, 20, nil})
	s.mu.Lock()
	armed := s.armedFor
	s.mu.Unlock()
	if armed == 0 {
		t.Error("a call pending with no runner in charge and no timer armed to start one")
	}
}

// A runner in charge takes the calls made between passes for a time that
// the last pass by group reached, also when no other call is due, or the
// next is far ahead.
func TestSchedulerRunnerTakesCallForAPassReached(t *testing.T) {
	for _, later := range []bool{false, true} {
		r := NewReal()
		s := r.s
		s.start = s.start.Add(-time.Second) // the calls are due
		s.owner = 1                         // the test runs the runner
		ran := 0
		At(r.Group(1), 10, func() { ran++ })
		s.mu.Lock()
		s.gather(50, true)
		s.mu.Unlock()
		s.drain(50, 0, s.owner)
		At(r.Group(2), 20, func() { ran++ }) // among the pass's calls
		if later {
			At(r.Group(1), time.Hour, func() {})
		}
		s.run(1)
		r.Close()
		if ran != 2 {
			t.Errorf("with a call pending later %v: %d calls ran, want 2", later, ran)
		}
	}
}

// Close during a pass by group drops the calls of the pass still to run:
// none of them runs after, nor is pending.
func TestRealCloseDuringPassByGroup(t *testing.T) {
	r := NewReal()
	s := r.s
	s.start = s.start.Add(-time.Second) // the calls are due
	s.owner = 1                         // the test runs the runner, which Close does not wait for
	blocked, release := make(chan struct{}), make(chan struct{})
	At(r.Group(1), 10, func() { close(blocked); <-release })
	next := At(r.Group(2), 20, func() { t.Error("a call of the pass ran after Close") })
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(1)
	}()
	<-blocked
	r.Close()
	close(release)
	<-done
	if next.Stop() {
		t.Error("a call of the pass was pending after Close")
	}
}
