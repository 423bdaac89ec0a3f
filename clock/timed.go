package clock

import "time"

// timedCall is a call at a time, pending in a timedHeap. Calls due at the
// same time run in the order they were made (seq).
//
// The clock reads seq under its lock through any entry of the call, stale
// ones too, at any time: seq is written only under that lock.
type timedCall struct {
	at  time.Duration
	seq uint64 // its pending entry's in the heap; 0 when not pending
	f   func()
}

// pending reports whether c waits in a heap.
func (c *timedCall) pending() bool { return c.seq != 0 }

// heapEntry is a call with its order keys copied beside it, so that ordering
// the heap reads only the heap's own array: a fleet keeps thousands of calls
// pending, and following each call's pointer to compare it costs a cache
// miss. An entry whose seq is no longer its call's is stale: the call was
// stopped or scheduled again.
type heapEntry struct {
	at  time.Duration
	seq uint64
	c   *timedCall
}

func (e heapEntry) before(o heapEntry) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

func (e heapEntry) stale() bool { return e.c.seq != e.seq }

// timedHeap orders pending calls by time, then by seq: a 4-ary heap (fewer
// levels than a binary one, for about as many comparisons per level).
//
// A call stopped or scheduled anew leaves its entry in place, stale, rather
// than finding and removing it: the heap then never writes to the calls it
// moves, whose memory a fleet's thousands of calls keep out of the caches.
// The earliest entry is never stale, and the heap is rebuilt without its
// stale entries once they are the most of it (and more than 32).
//
// A stale entry holds its call until it comes to the top, at the time the
// call was due, or a rebuild drops it. A call of At or AfterFunc lets go of
// its function when stopped (pending.Stop), so only its own few words stay.
// A Call lives in the state of what it calls (Call.Init), which a stale
// entry would keep reachable: its Stop takes its entry out (cancel), found
// by its order number, which the call keeps, rather than by an index kept
// in the call, written at each move of the heap, the writes into the calls
// that stale entries avoid. A Call scheduled again while pending leaves its
// earlier entry stale as other calls do, at a time it asked for.
type timedHeap struct {
	e     []heapEntry
	stale int // stale entries
}

// len returns the number of pending calls.
func (h *timedHeap) len() int { return len(h.e) - h.stale }

// first returns the earliest pending call's time; the heap must not be empty.
func (h *timedHeap) first() time.Duration { return h.e[0].at }

// push makes c pending at time at with order seq, which is larger than any
// the heap holds, in place of its pending run if it has one.
func (h *timedHeap) push(c *timedCall, at time.Duration, seq uint64) {
	again := c.pending()
	c.at, c.seq = at, seq
	h.e = append(h.e, heapEntry{at, seq, c})
	h.up(len(h.e)-1, h.e[len(h.e)-1])
	if again { // its old entry is stale, and may be the first
		h.stale++
		h.settle()
	}
}

// remove takes c out of the heap if it is pending and reports whether it was.
func (h *timedHeap) remove(c *timedCall) bool {
	if !c.pending() {
		return false
	}
	c.seq = 0
	h.stale++
	h.settle()
	return true
}

// cancel takes c out of the heap if it is pending, its entry with it, and
// reports whether it was. It finds the entry by its order number, which
// no other entry has, in a scan of the heap's array that reads none of
// the calls (BenchmarkCallStop): a search down the heap, which reads only
// the entries due before c, took 10 to 25 times longer.
func (h *timedHeap) cancel(c *timedCall) bool {
	if !c.pending() {
		return false
	}
	for i := range h.e {
		if h.e[i].seq == c.seq {
			c.seq = 0
			h.removeAt(i)
			h.settle() // the first entry may have been c's, and the next one stale
			return true
		}
	}
	panic("clock: a pending call without its entry in the heap")
}

// removeAt removes the entry at index i.
func (h *timedHeap) removeAt(i int) {
	n := len(h.e) - 1
	last := h.e[n]
	h.e[n] = heapEntry{}
	h.e = h.e[:n]
	switch {
	case i == n:
	case i > 0 && last.before(h.e[(i-1)/4]):
		h.up(i, last)
	default:
		h.down(i, last)
	}
}

// pop removes and returns the earliest call; the heap must not be empty.
func (h *timedHeap) pop() *timedCall {
	c := h.e[0].c
	h.removeFirst()
	c.seq = 0
	h.settle()
	return c
}

// settle drops the stale entries at the top, so that the first entry is a
// pending call's, and rebuilds the heap once stale entries are the most of
// it.
func (h *timedHeap) settle() {
	if h.stale > 32 && 2*h.stale > len(h.e) {
		h.rebuild()
		return
	}
	for len(h.e) > 0 && h.e[0].stale() {
		h.removeFirst()
		h.stale--
	}
}

// rebuild drops every stale entry and orders the rest again.
func (h *timedHeap) rebuild() {
	live := h.e[:0]
	for _, e := range h.e {
		if !e.stale() {
			live = append(live, e)
		}
	}
	clear(h.e[len(live):])
	h.e, h.stale = live, 0
	for i := (len(live) - 2) / 4; i >= 0 && len(live) > 1; i-- {
		h.down(i, live[i])
	}
}

// removeFirst removes the first entry.
func (h *timedHeap) removeFirst() {
	n := len(h.e) - 1
	last := h.e[n]
	h.e[n] = heapEntry{}
	h.e = h.e[:n]
	if n > 0 {
		h.down(0, last)
	}
}

// up places e at index i or above it, moving the later parents down.
func (h *timedHeap) up(i int, e heapEntry) {
	a := h.e
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = e
}

// down places e at index i or below it, moving the earlier children up.
func (h *timedHeap) down(i int, e heapEntry) {
	a := h.e
	n := len(a)
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		m := first
		for j := first + 1; j < min(first+4, n); j++ {
			if a[j].before(a[m]) {
				m = j
			}
		}
		if !a[m].before(e) {
			break
		}
		a[i] = a[m]
		i = m
	}
	a[i] = e
}
