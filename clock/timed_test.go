package clock

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"
)

// The heap gives its calls back in time order, calls at the same time in
// the order they were made, after any mix of pushes, pops, calls scheduled
// again and calls removed, leaving a stale entry or taking their pending
// entry out (cancel), not a stale one of theirs; its first entry is always
// a pending call's, and the stale entries that removed and rescheduled
// calls leave behind never outnumber the pending ones for long.
func TestTimedHeapOrder(t *testing.T) {
	for _, tt := range []struct {
		name  string
		again int // in ten: how often a step schedules a pending call again or removes one
	}{
		{"few removals", 2},
		{"mostly removals", 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var h timedHeap
			var want []*timedCall // pending, in the order the heap must give them
			calls := make([]*timedCall, 40)
			for i := range calls {
				calls[i] = &timedCall{}
			}
			seq := uint64(0)
			order := func(a, b *timedCall) int {
				if a.at != b.at {
					return int(a.at - b.at)
				}
				return int(a.seq) - int(b.seq)
			}
			push := func(c *timedCall) {
				if k := slices.Index(want, c); k >= 0 {
					want = slices.Delete(want, k, k+1)
				}
				seq++
				h.push(c, time.Duration(rng.IntN(50)), seq) // few distinct times, so that ties are common
				i, _ := slices.BinarySearchFunc(want, c, order)
				want = slices.Insert(want, i, c)
			}
			maxLen := 0
			for step := range 20000 {
				switch r := rng.IntN(10); {
				case r < tt.again && len(want) > 0 && rng.IntN(2) == 0: // schedule a pending call again
					push(want[rng.IntN(len(want))])
				case r < tt.again && len(want) > 0: // remove a pending call, leaving its entry or with it
					k := rng.IntN(len(want))
					c := want[k]
					seq := c.seq
					remove, cancel := h.remove, rng.IntN(2) == 0
					if cancel {
						remove = h.cancel
					}
					if !remove(c) || h.remove(c) || h.cancel(c) || c.pending() {
						t.Fatalf("step %d: removing a pending call should succeed once", step)
					}
					if slices.ContainsFunc(h.e, func(e heapEntry) bool { return !e.stale() && e.c == c }) {
						t.Fatalf("step %d: a removed call's entry is not stale", step)
					}
					if cancel && slices.ContainsFunc(h.e, func(e heapEntry) bool { return e.seq == seq }) {
						t.Fatalf("step %d: a cancelled call's entry is still in the heap", step)
					}
					want = slices.Delete(want, k, k+1)
				case r < 8 || len(want) == 0: // push a call that is not pending
					c := calls[rng.IntN(len(calls))]
					if c.pending() {
						continue
					}
					push(c)
				default:
					c := h.pop()
					if c != want[0] || c.pending() {
						t.Fatalf("step %d: popped %v/%d (pending %v), want %v/%d", step, c.at, c.seq, c.pending(), want[0].at, want[0].seq)
					}
					want = want[1:]
				}
				if h.len() != len(want) {
					t.Fatalf("step %d: %d calls in the heap, want %d", step, h.len(), len(want))
				}
				if len(want) > 0 && (h.e[0].c != want[0] || h.first() != want[0].at) {
					t.Fatalf("step %d: the first entry is not the earliest pending call", step)
				}
				maxLen = max(maxLen, len(h.e))
			}
			if maxLen > 2*len(calls)+33 {
				t.Errorf("the heap held %d entries for at most %d pending calls", maxLen, len(calls))
			}
			for len(want) > 0 {
				if c := h.pop(); c != want[0] {
					t.Fatalf("popped %v/%d, want %v/%d", c.at, c.seq, want[0].at, want[0].seq)
				}
				want = want[1:]
			}
			if h.len() != 0 || len(h.e) != 0 {
				t.Errorf("emptied heap: %d pending, %d entries", h.len(), len(h.e))
			}
		})
	}
}

// A call of At or AfterFunc that Stop cancelled lets go of its function at
// once, and so of what the function holds (a device's state), although
// the entry it leaves in the heap stays until it comes to the top, at the
// call's time, or the heap is rebuilt: an earlier call keeps it below.
func TestStoppedCallReleasesItsFunction(t *testing.T) {
	for _, tt := range []struct {
		name  string
		clock Clock
	}{
		{"real", NewReal()},
		{"virtual", NewVirtual()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			earlier := tt.clock.AfterFunc(time.Minute, func() {})
			defer earlier.Stop()
			for _, schedule := range []func(f func()) Timer{
				func(f func()) Timer { return tt.clock.AfterFunc(time.Hour, f) },
				func(f func()) Timer { return At(tt.clock, time.Hour, f) },
			} {
				state, tm := stateHeldBy(schedule)
				if !tm.Stop() {
					t.Fatal("Stop of a pending call reported that it did not stop it")
				}
				runtime.GC()
				if state.Value() != nil {
					t.Error("the state of a stopped call's function is still reachable")
				}
			}
		})
	}
}

// stateHeldBy schedules a function that holds some state and returns a weak
// pointer to the state.
func stateHeldBy(schedule func(f func()) Timer) (weak.Pointer[[64]int], Timer) {
	state := new([64]int)
	return weak.Make(state), schedule(func() { state[0]++ })
}

// A Call that Stop cancelled lets go of the state it lives in, although an
// earlier call keeps its time from coming: its clock's heap takes the
// call's entry out. So does Init of a pending call.
func TestStoppedCallReleasesItsOwner(t *testing.T) {
	r := NewReal()
	defer r.Close()
	for _, tt := range []struct {
		name  string
		clock Clock
	}{
		{"real", r},
		{"virtual", NewVirtual()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			earlier := tt.clock.AfterFunc(time.Minute, func() {})
			defer earlier.Stop()
			for _, stop := range []struct {
				name string
				stop func(c *Call)
			}{
				{"Stop", func(c *Call) { c.Stop() }},
				{"Init", func(c *Call) { c.Init(tt.clock, func() {}) }},
			} {
				owner := callOwner(tt.clock)
				stop.stop(&owner.Value().call)
				runtime.GC()
				if owner.Value() != nil {
					t.Errorf("the owner of a call that %s cancelled is still reachable", stop.name)
				}
			}
		})
	}
}

// callOwner returns a weak pointer to state that lives with its Call, made
// pending an hour from now on c.
func callOwner(c Clock) weak.Pointer[owner] {
	o := new(owner)
	o.call.Init(c, func() { o.state[0]++ })
	o.call.At(c.Now() + time.Hour)
	return weak.Make(o)
}

// owner is state that keeps its Call (Call.Init).
type owner struct {
	call  Call
	state [64]int
}
