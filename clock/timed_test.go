package clock

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The heap gives its calls back in time order, calls at the same time in
// the order they were made, after any mix of pushes, pops and removals, and
// keeps each call's index where the call is.
func TestTimedHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h timedHeap
	var want []*timedCall // pending, in the order the heap must give them
	seq := uint64(0)
	check := func() {
		t.Helper()
		for i, e := range h {
			if e.c.index != i || e.at != e.c.at || e.seq != e.c.seq {
				t.Fatalf("entry %d: call's index %d, keys %v/%d for call at %v/%d", i, e.c.index, e.at, e.seq, e.c.at, e.c.seq)
			}
		}
	}
	for step := range 5000 {
		switch r := rng.IntN(10); {
		case r < 5 || len(want) == 0: // push; few distinct times, so that ties are common
			seq++
			c := &timedCall{at: time.Duration(rng.IntN(50)), seq: seq}
			h.push(c)
			i, _ := slices.BinarySearchFunc(want, c, func(a, b *timedCall) int {
				if a.at != b.at {
					return int(a.at - b.at)
				}
				return int(a.seq) - int(b.seq)
			})
			want = slices.Insert(want, i, c)
		case r < 8:
			c := h.pop()
			if c != want[0] || c.index != -1 {
				t.Fatalf("step %d: popped %v/%d (index %d), want %v/%d", step, c.at, c.seq, c.index, want[0].at, want[0].seq)
			}
			want = want[1:]
		default:
			k := rng.IntN(len(want))
			c := want[k]
			h.remove(c.index)
			if c.index != -1 {
				t.Fatalf("step %d: a removed call keeps index %d", step, c.index)
			}
			want = slices.Delete(want, k, k+1)
		}
		if len(h) != len(want) {
			t.Fatalf("step %d: %d calls in the heap, want %d", step, len(h), len(want))
		}
		check()
	}
	for len(want) > 0 {
		if c := h.pop(); c != want[0] {
			t.Fatalf("popped %v/%d, want %v/%d", c.at, c.seq, want[0].at, want[0].seq)
		}
		want = want[1:]
	}
}
