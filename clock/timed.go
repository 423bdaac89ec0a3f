package clock

import "time"

// timedCall is a call at a time, pending in a timedHeap. Calls due at the
// same time run in the order they were made (seq).
type timedCall struct {
	at    time.Duration
	seq   uint64
	f     func()
	index int // in the heap; -1 when not in it (not yet scheduled, taken or stopped)
}

// heapEntry is a pending call with its order keys copied beside it, so that
// ordering the heap reads only the heap's own array: a fleet keeps thousands
// of calls pending, and following each call's pointer to compare it costs a
// cache miss.
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

// timedHeap orders pending calls by time, then by seq: a 4-ary heap (fewer
// levels than a binary one, for about as many comparisons per level).
type timedHeap []heapEntry

// push adds c.
func (h *timedHeap) push(c *timedCall) {
	*h = append(*h, heapEntry{c.at, c.seq, c})
	h.up(len(*h)-1, (*h)[len(*h)-1])
}

// pop removes and returns the earliest call; the heap must not be empty.
func (h *timedHeap) pop() *timedCall {
	c := (*h)[0].c
	h.remove(0)
	return c
}

// remove removes the call at index i.
func (h *timedHeap) remove(i int) {
	old := *h
	c := old[i].c
	last := old[len(old)-1]
	old[len(old)-1] = heapEntry{}
	*h = old[:len(old)-1]
	c.index = -1
	if i == len(*h) {
		return
	}
	if i > 0 && last.before((*h)[(i-1)/4]) {
		h.up(i, last)
	} else {
		h.down(i, last)
	}
}

// up places e at index i or above it, moving the later parents down.
func (h timedHeap) up(i int, e heapEntry) {
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(h[p]) {
			break
		}
		h[i] = h[p]
		h[i].c.index = i
		i = p
	}
	h[i] = e
	e.c.index = i
}

// down places e at index i or below it, moving the earlier children up.
func (h timedHeap) down(i int, e heapEntry) {
	n := len(h)
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		m := first
		for j := first + 1; j < min(first+4, n); j++ {
			if h[j].before(h[m]) {
				m = j
			}
		}
		if !h[m].before(e) {
			break
		}
		h[i] = h[m]
		h[i].c.index = i
		i = m
	}
	h[i] = e
	e.c.index = i
}
