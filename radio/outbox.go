package radio

import "sync"

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
// items wait and goes when the central takes them (Take), and wake hears
// of each hand-out, so an idle or a quiet connection holds no queue of its
// limit's size. A central that reads a channel (Notifications, HRS, NUS)
// gets one of the limit's capacity, which holds the items of its kind from
// then on; Take takes them from it too.
type outbox struct {
	mu     sync.Mutex // taken after p.mu and airMu; nothing is called under it
	notes  queue[Notification]
	hrs    queue[HRSData]
	nus    queue[[]byte]
	closed bool
	wake   chan struct{} // capacity 1: something was handed out, or the connection ended
}

func (o *outbox) init() {
	o.notes.limit, o.hrs.limit, o.nus.limit = notesLimit, hrsLimit, nusLimit
	o.wake = make(chan struct{}, 1)
}

// signal wakes the reader, without waiting; o.mu is held.
func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// put adds v to q and wakes the reader; it reports false, and drops v,
// when q is full or the connection ended.
func put[T any](o *outbox, q *queue[T], v T) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || !q.put(v) {
		return false
	}
	o.signal()
	return true
}

// waiting returns how many items wait in q.
func waiting[T any](o *outbox, q *queue[T]) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return q.len()
}

// channel returns q's channel, made on the first call with what waits.
func channel[T any](o *outbox, q *queue[T]) <-chan T {
	o.mu.Lock()
	defer o.mu.Unlock()
	if q.ch == nil {
		q.ch = make(chan T, q.limit)
		for _, v := range q.items {
			q.ch <- v
		}
		q.items = nil
		if o.closed {
			close(q.ch)
		}
	}
	return q.ch
}

// close ends the outbox: nothing more is put, the channels close and the
// reader wakes; what waits stays to be taken.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.closed = true
	o.notes.close()
	o.hrs.close()
	o.nus.close()
	o.signal()
}

// take swaps what waits with the reader's.
func (o *outbox) take(t *Taken) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t.Notes = o.notes.take(t.Notes)
	t.HRS = o.hrs.take(t.HRS)
	t.NUS = o.nus.take(t.NUS)
}

// queue is one kind of item of an outbox, in order, at most limit of them:
// in items, or in ch once a reader asked for a channel.
type queue[T any] struct {
	items []T
	ch    chan T
	limit int
}

func (q *queue[T]) put(v T) bool {
	if q.ch != nil {
		select {
		case q.ch <- v:
			return true
		default:
			return false
		}
	}
	if len(q.items) >= q.limit {
		return false
	}
	q.items = append(q.items, v)
	return true
}

func (q *queue[T]) len() int {
	if q.ch != nil {
		return len(q.ch)
	}
	return len(q.items)
}

// take returns what waits and keeps spare, emptied, as the storage of what
// comes next, unless it is large. With a channel, what waits in it is
// taken into spare.
func (q *queue[T]) take(spare []T) []T {
	clear(spare)
	if cap(spare) > keepCap {
		spare = nil
	}
	if q.ch != nil {
		spare = spare[:0]
		for {
			select {
			case v, ok := <-q.ch:
				if !ok { // closed, and empty
					return spare
				}
				spare = append(spare, v)
			default:
				return spare
			}
		}
	}
	items := q.items
	q.items = spare[:0]
	return items
}

func (q *queue[T]) close() {
	if q.ch != nil {
		close(q.ch)
	}
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
// done with its items. It takes also after the connection ended, what the
// device sent before. A kind the central asked a channel for
// (Notifications, HRS, NUS) is taken from the channel: a central reads
// one way or the other.
func (c *Conn) Take(t *Taken) { c.out.take(t) }

// Wake receives when the device sends the central something to take with
// Take, and when the connection ends. It holds one wake-up: a reader that
// takes everything after each wake-up misses nothing.
func (c *Conn) Wake() <-chan struct{} { return c.out.wake }
