package resource

import "sync"

// Event is one item a Queue hands to its consumer: a notification, or the end
// of a subscription.
type Event struct {
	Sub     *Subscription
	Content any       // the notification's content, when Ended is zero
	Ended   EndReason // non-zero: Sub ended for this reason
}

// Queue is a Sink with a bounded buffer, for a client whose transport sends
// notifications from its own goroutine.
//
// Policy for a slow consumer: a full queue drops new notifications (the
// newest are lost, as a sensor's FIFO loses samples nobody reads) and counts
// them on their subscription; publishers and other clients are never delayed.
// End events are never dropped. A transport may end a client whose queue stays
// full. A topic's Limit caps how many of its notifications may wait for one
// subscriber, below the queue's capacity.
type Queue struct {
	mu     sync.Mutex
	buf    []Event // ring of notifications
	head   int
	n      int
	ends   []Event
	ready  chan struct{}
	closed bool
}

// NewQueue returns a queue that holds at most capacity notifications.
func NewQueue(capacity int) *Queue {
	if capacity < 1 {
		capacity = 1
	}
	return &Queue{buf: make([]Event, capacity), ready: make(chan struct{}, 1)}
}

// Notify queues n, or drops it and returns false when the queue is full or closed.
func (q *Queue) Notify(n Notification) bool {
	q.mu.Lock()
	if q.closed || q.n == len(q.buf) || n.Sub.limit > 0 && n.Sub.pending.Load() >= n.Sub.limit {
		q.mu.Unlock()
		return false
	}
	n.Sub.pending.Add(1)
	i := q.head + q.n
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = Event{Sub: n.Sub, Content: n.Content}
	q.n++
	wake := q.n == 1 && len(q.ends) == 0
	q.mu.Unlock()
	if wake {
		q.signal()
	}
	return true
}

// Ended queues the end of sub.
func (q *Queue) Ended(sub *Subscription, reason EndReason) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.ends = append(q.ends, Event{Sub: sub, Ended: reason})
	q.mu.Unlock()
	q.signal()
}

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Ready returns a channel that receives a value when events may be waiting.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Len returns the number of queued notifications.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Cap returns the queue's capacity in notifications.
func (q *Queue) Cap() int { return len(q.buf) }

// Drain appends the waiting events to dst in order, notifications before
// ends, and empties the queue. Notifications of subscriptions that have
// ended are skipped.
func (q *Queue) Drain(dst []Event) []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.n > 0 {
		e := q.buf[q.head]
		q.buf[q.head] = Event{}
		q.head++
		if q.head == len(q.buf) {
			q.head = 0
		}
		q.n--
		e.Sub.pending.Add(-1)
		if e.Sub.Active() {
			dst = append(dst, e)
		}
	}
	q.head = 0
	dst = append(dst, q.ends...)
	clear(q.ends)
	q.ends = q.ends[:0]
	return dst
}

// Close makes the queue drop everything from now on and discards what waits.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	clear(q.buf)
	q.n, q.head = 0, 0
	q.ends = nil
}
