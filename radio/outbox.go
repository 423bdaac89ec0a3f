package radio

import (
	"sync"
	"sync/atomic"
)

// The limits of what waits for the central to take it: the device's
// notification queue (which flow control counts, see Notify) and the
// queues of the heart-rate and serial services.
const (
	notesLimit = 256
	hrsLimit   = 64
	nusLimit   = 64
)

// keepCap is the most items a queue's storage keeps once taken: a burst
// larger than it leaves with the reader, and the storage grows again from
// small.
const keepCap = 32

// outbox holds what a connection hands the central and the central has not
// taken yet: notifications, heart-rate measurements and serial data, each
// in order up to its limit. What waits is held in storage that grows as
// items wait and goes when the central takes them (Take), so an idle or a
// quiet connection holds no queue of its limit's size. The reader hears
// of what was handed out through its wake function (WakeWith), called
// once the connection's locks are let go.
type outbox struct {
	mu     sync.Mutex // taken after p.mu and airMu; nothing is called under it
	notes  queue[Notification]
	hrs    queue[HRSData]
	nus    queue[[]byte]
	closed bool
	wake   func() // the reader's, set by WakeWith

	pending atomic.Bool // something was handed out since the reader was last woken
}

func (o *outbox) init() {
	o.notes.limit, o.hrs.limit, o.nus.limit = notesLimit, hrsLimit, nusLimit
}

// put adds v to q; it reports false, and drops v, when q is full or the
// connection ended. The reader is woken when the caller lets go of the
// connection's locks (wakeReader).
func put[T any](o *outbox, q *queue[T], v T) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || !q.put(v) {
		return false
	}
	o.pending.Store(true)
	return true
}

// waiting returns how many items wait in q.
func waiting[T any](o *outbox, q *queue[T]) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(q.items)
}

// close ends the outbox: nothing more is put; what waits stays to be
// taken, and the reader is woken (wakeReader) to hear of the end.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	o.pending.Store(true)
}

// handed notes that something for the reader was handed out other than
// by put: a notification of the connection's subscriptions.
func (o *outbox) handed() { o.pending.Store(true) }

// wakeReader calls the reader's wake function when something was handed
// out since it was last called. Its caller holds none of the connection's
// locks.
func (o *outbox) wakeReader() {
	if !o.pending.Load() {
		return
	}
	o.mu.Lock()
	wake := o.wake
	o.mu.Unlock()
	if wake != nil && o.pending.Swap(false) {
		wake()
	}
}

// take swaps what waits with the reader's.
func (o *outbox) take(t *Taken) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t.Notes = o.notes.take(t.Notes)
	t.HRS = o.hrs.take(t.HRS)
	t.NUS = o.nus.take(t.NUS)
}

// queue is one kind of item of an outbox, in order, at most limit of them.
type queue[T any] struct {
	items []T
	limit int
}

func (q *queue[T]) put(v T) bool {
	if len(q.items) >= q.limit {
		return false
	}
	q.items = append(q.items, v)
	return true
}

// take returns what waits and keeps spare, emptied, as the storage of what
// comes next, unless it is large.
func (q *queue[T]) take(spare []T) []T {
	clear(spare)
	if cap(spare) > keepCap {
		spare = nil
	}
	items := q.items
	q.items = spare[:0]
	return items
}

// Taken is what a central took from its connection with Take: the
// notifications, heart-rate measurements and serial data the device sent,
// each kind in the order it was sent.
type Taken struct {
	Notes []Notification
	HRS   []HRSData
	NUS   [][]byte
}

// Take replaces t's items with what the device sent the central since the
// last Take, without waiting; t's slices become the storage of what the
// device sends next, so a reader passes the same Taken again once it is
// done with its items (Take clears them). It takes also after the
// connection ended, what the device sent before.
func (c *Conn) Take(t *Taken) { c.out.take(t) }

// Untaken returns how many notifications of its characteristics the
// device handed the central that it has not taken yet (Take): the
// device's notification queue, which TryNotify's flow control counts, at
// most 256.
func (c *Conn) Untaken() int { return waiting(&c.out, &c.out.notes) }

// WakeWith makes the connection call wake when it hands the central
// something to take with Take: a notification of its services, or a
// notification or end of a subscription made over it (to the sink given
// to Connect); and when the connection ends. A reader that takes
// everything after each call misses nothing. wake is called on the
// goroutine that handed it out (the connection event's, mostly: the
// device clock's), once the connection's locks are let go, and at once
// when something waits already; it must not block, and goroutines that
// hand out at the same time may call it at once. Call WakeWith once,
// right after Connect.
func (c *Conn) WakeWith(wake func()) {
	c.out.mu.Lock()
	c.out.wake = wake
	c.out.mu.Unlock()
	c.out.wakeReader()
}
