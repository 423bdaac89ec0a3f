package clock

import "time"

// timedCall is a call at a time, pending in a timedHeap. Calls due at the
// same time run in the order they were made (seq).
type timedCall struct {
	at    time.Duration
	seq   uint64
	f     func()
	index int // in the heap; -1 once taken or stopped
}

// timedHeap orders pending calls by time, then by seq (container/heap).
type timedHeap []*timedCall

func (h timedHeap) Len() int { return len(h) }
func (h timedHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timedHeap) Push(x any) {
	c := x.(*timedCall)
	c.index = len(*h)
	*h = append(*h, c)
}
func (h *timedHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	c.index = -1
	*h = old[:len(old)-1]
	return c
}
