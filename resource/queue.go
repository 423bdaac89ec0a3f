package resource

import "sync"

// Event is one item a Queue hands to its consumer: a notification, or the end
// of a subscription.
type Event struct {
	Sub     *Subscription
	Content any       // the notification's content, when Ended is zero
	Ended   EndReason // non-zero: Sub ended for this reason
	// Dropped is Sub's Dropped when the queue took the notification, modulo
	// 2³² (the difference of two tells how many between them): those lost
	// before it, which a consumer that accounts for its losses (the data
	// logger) tells from those lost after it while it waited. 32 bits fit
	// in the room Ended leaves: an Event is no larger for it.
	Dropped uint32
}

// Queue is a Sink with a bounded buffer, for a client whose transport sends
// notifications from its own goroutine.
//
// Policy for a slow consumer: a full queue drops new notifications (the
// newest are lost, as a sensor's FIFO loses samples nobody reads) and counts
// them on their subscription; publishers and other clients are never delayed.
// End events are never dropped. A transport may end a client whose queue stays
// full. A topic's Limit caps how many of its notifications may wait for one
// subscriber, below the queue's capacity, unless the subscriber's client
// sets its own (Client.SetWait).
//
// Memory follows use: an idle queue holds no buffer, the buffer doubles as
// notifications wait, up to the capacity, and is let go when a drain finds
// it mostly empty.
type Queue struct {
	mu     sync.Mutex
	buf    []Event // the waiting notifications are buf[:n]; grows up to capacity
	n      int
	cap    int
	ends   []Event
	closed bool
	later  func(wake func()) // set by DeferWake
	wake   func()            // q.signal, made once for later
	onWake func()            // set by WakeWith
	rooms  []func()          // the room callbacks of refused offers, called by the next Drain
}

// minQueueBuffer is the smallest buffer a queue allocates.
const minQueueBuffer = 16

// NewQueue returns a queue that holds at most capacity notifications.
func NewQueue(capacity int) *Queue {
	return &Queue{cap: max(capacity, 1)}
}

// HoldsRecyclable makes a Queue a HoldingSink: its consumer releases the
// Recyclable content it drains, and the queue what it discards.
func (q *Queue) HoldsRecyclable() {}

// Notify queues n, or drops it and returns false when the queue is full or closed.
func (q *Queue) Notify(n Notification) bool {
	q.mu.Lock()
	if q.closed || q.full(n.Sub) {
		q.mu.Unlock()
		return false
	}
	q.put(n)
	return true
}

// put queues n, for which the queue has room, then unlocks q.mu and wakes
// the consumer when it is due; q.mu is held.
func (q *Queue) put(n Notification) {
	if q.n == len(q.buf) {
		q.grow()
	}
	pending := n.Sub.pending.Add(1)
	q.buf[q.n] = Event{Sub: n.Sub, Content: n.Content, Dropped: uint32(n.Sub.dropped.Load())}
	q.n++
	wake := q.n == 1 && len(q.ends) == 0
	full := n.Sub.limit > 0 && pending >= n.Sub.limit
	q.mu.Unlock()
	switch {
	case q.later != nil && full:
		q.signal() // one more would be dropped: no waiting for later
	case wake && q.later != nil:
		q.later(q.wake)
	case wake:
		q.signal()
	}
}

// full reports whether the queue has no room for a notification of sub:
// it holds its capacity, or sub's limit waits. q.mu is held.
func (q *Queue) full(sub *Subscription) bool {
	return q.n == q.cap || sub.limit > 0 && sub.pending.Load() >= sub.limit
}

// offer queues n as Notify does; when the queue has no room for it, room
// is called by the next Drain, after the consumer has taken what waits
// (Subscription.Offer).
func (q *Queue) offer(n Notification, room func()) (taken, later bool) {
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return false, false
	case q.full(n.Sub):
		q.rooms = append(q.rooms, room)
		q.mu.Unlock()
		return false, true
	}
	q.put(n)
	return true, false
}

// DeferWake makes the queue hand the wake-up of its consumer to later
// instead of waking it at once when a notification starts to wait: later
// is to call wake, at once or soon after (a clock.Batcher's AfterPass calls
// it when the clock's pass ends, so that the consumer takes the
// notifications of the pass together). The end of a subscription, and a notification that
// fills its topic's Limit (one more would be dropped), still wake the
// consumer at once. Call DeferWake before the queue is used.
func (q *Queue) DeferWake(later func(wake func())) {
	q.later, q.wake = later, q.signal
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

// grow doubles the buffer, within the capacity, keeping the order.
func (q *Queue) grow() {
	buf := make([]Event, min(max(2*len(q.buf), minQueueBuffer), q.cap))
	copy(buf, q.buf[:q.n])
	q.buf = buf
}

// WakeWith makes the queue wake its consumer by calling f, outside the
// queue's lock, when notifications start to wait (or when its deferral
// says, DeferWake): a consumer that runs only while there is work (a
// session's flush, an app's goroutine) starts then. A queue without it
// wakes nobody: its consumer drains it when it chooses. Call WakeWith
// before the queue is used.
func (q *Queue) WakeWith(f func()) { q.onWake = f }

// Wake wakes the consumer at once, whether or not anything waits, as the
// end of a subscription does: for a consumer that sends something of its
// own with the notifications (a session's pong), whose deferral (DeferWake)
// decides when.
func (q *Queue) Wake() { q.signal() }

func (q *Queue) signal() {
	if q.onWake != nil {
		q.onWake()
	}
}

// Len returns the number of queued notifications.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Cap returns the queue's capacity in notifications.
func (q *Queue) Cap() int { return q.cap }

// Drain appends the waiting events to dst in order, notifications before
// ends, and empties the queue. Notifications of subscriptions that have
// ended are skipped, and their Recyclable content released. Then, without
// the queue's lock, it calls the room callbacks of the offers the queue
// refused (Subscription.Offer), on the caller's goroutine: they may offer
// again, so a consumer does not drain under a lock that its producers
// wait for (a wake, WakeWith, that finds the consumer draining leaves
// what came to it, as a session's flush does).
func (q *Queue) Drain(dst []Event) []Event {
	q.mu.Lock()
	dst = q.drainLocked(dst)
	rooms := q.rooms
	q.rooms = nil
	q.mu.Unlock()
	for _, room := range rooms {
		room()
	}
	return dst
}

// drainLocked is Drain's, under q.mu.
func (q *Queue) drainLocked(dst []Event) []Event {
	if 4*q.n < len(q.buf) && len(q.buf) > minQueueBuffer {
		defer q.release() // a burst has passed: let its buffer go
	}
	for i, e := range q.buf[:q.n] {
		q.buf[i] = Event{}
		e.Sub.pending.Add(-1)
		if e.Sub.Active() {
			dst = append(dst, e)
		} else {
			Release(e.Content) // no consumer takes it
		}
	}
	q.n = 0
	dst = append(dst, q.ends...)
	clear(q.ends)
	q.ends = q.ends[:0]
	return dst
}

// release lets the emptied buffer go; the next notification allocates anew.
func (q *Queue) release() {
	q.buf = nil
	if cap(q.ends) > minQueueBuffer {
		q.ends = nil
	}
}

// Close makes the queue drop everything from now on and discards what
// waits, releasing its Recyclable content, and the room callbacks of
// refused offers, which are not called.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, e := range q.buf[:q.n] {
		Release(e.Content) // no consumer takes it
	}
	q.buf, q.n = nil, 0
	q.ends = nil
	q.rooms = nil
}
