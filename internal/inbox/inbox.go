// Package inbox holds what a client receives for one subscription: a
// bounded queue that drops what its reader does not take in time, counting
// it, handed to the reader on a channel that closes when the subscription
// ends, keeping why.
//
// Memory follows use. The channel has 16 slots of its own, which carry a
// reader that keeps up with nothing more. Beyond them, notifications wait
// in a ring that doubles as they pile up (from 16), up to the inbox's
// size, halves as the reader catches up, whenever a quarter of it is in
// use, and goes when it empties: an idle inbox holds the channel's slots
// alone. While the ring holds some, a goroutine of the inbox hands them
// to the channel in order. That goroutine is the inbox's: Close stops it
// and waits for it; after Finish it ends once the reader has taken what
// waited.
package inbox

import "sync"

const (
	chanBuffer = 16 // the channel's own slots
	minBuffer  = 16 // the smallest ring an inbox allocates
)

// Inbox is one subscription's notifications on their way to the reader.
type Inbox[T any] struct {
	ch   chan T        // chanBuffer slots; more wait in buf
	stop chan struct{} // closed by Close: the handing goroutine returns
	wg   sync.WaitGroup

	mu       sync.Mutex
	size     int // the most notifications that wait, in ch and buf
	buf      []T // ring; grows up to size-cap(ch), shrinks as it drains
	head, n  int
	handing  bool // the handing goroutine runs
	err      error
	dropped  uint64
	finished bool // no more notifications come in
	stopped  bool // Close was called
}

// New returns an inbox that holds up to size notifications (at least one).
func New[T any](size int) *Inbox[T] {
	size = max(size, 1)
	return &Inbox[T]{ch: make(chan T, min(size, chanBuffer)), stop: make(chan struct{}), size: size}
}

// C returns the notifications; it is closed when the inbox finishes and
// its reader has taken what waited.
func (b *Inbox[T]) C() <-chan T { return b.ch }

// Err says why the inbox finished, or nil while it is open or when it
// finished without an error.
func (b *Inbox[T]) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Dropped counts notifications lost because C was not read fast enough.
func (b *Inbox[T]) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Deliver hands on a notification without blocking; a full inbox drops it.
func (b *Inbox[T]) Deliver(v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	if b.n == 0 { // nothing before it in the ring: the channel, when it has room
		select {
		case b.ch <- v:
			return
		default:
		}
	}
	ring := b.size - cap(b.ch)
	if b.n == ring {
		b.dropped++
		return
	}
	if b.n == len(b.buf) {
		b.resize(min(max(2*len(b.buf), minBuffer), ring))
	}
	b.buf[(b.head+b.n)%len(b.buf)] = v
	b.n++
	if !b.handing {
		b.handing = true
		b.wg.Add(1)
		go b.hand()
	}
}

// hand moves the ring's notifications to the channel, oldest first, until
// none wait there or Close stops it; then it closes C if the inbox has
// finished. The notification on its way stays in the ring until it is in
// the channel, so that Deliver puts none before it.
func (b *Inbox[T]) hand() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		if b.n == 0 {
			b.handing = false
			if b.finished && !b.stopped {
				close(b.ch)
			}
			b.mu.Unlock()
			return
		}
		v := b.buf[b.head]
		b.mu.Unlock()
		select {
		case b.ch <- v:
		case <-b.stop:
			return
		}
		b.mu.Lock()
		b.take()
		b.mu.Unlock()
	}
}

// take removes the oldest notification, now in the channel; an emptied
// ring goes, and one larger than the smallest halves once a quarter of it
// is in use.
func (b *Inbox[T]) take() {
	var zero T
	b.buf[b.head] = zero
	b.head = (b.head + 1) % len(b.buf)
	b.n--
	switch {
	case b.n == 0:
		b.buf, b.head = nil, 0
	case len(b.buf) > minBuffer && b.n <= len(b.buf)/4:
		b.resize(max(len(b.buf)/2, minBuffer))
	}
}

// resize moves the waiting notifications, in order, to a ring of size.
func (b *Inbox[T]) resize(size int) {
	buf := make([]T, size)
	if b.n > 0 {
		k := copy(buf, b.buf[b.head:min(b.head+b.n, len(b.buf))])
		copy(buf[k:b.n], b.buf)
	}
	b.buf, b.head = buf, 0
}

// Finish ends the inbox with a reason (nil when it was asked to end): no
// more notifications come in, those waiting still reach the reader, and
// then C closes. Later calls do nothing.
func (b *Inbox[T]) Finish(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished, b.err = true, err
	if !b.handing {
		close(b.ch)
	}
}

// Close finishes the inbox with a reason, as Finish does, but lets go what
// waits: it stops the goroutine that hands notifications on, waits for
// it, closes C and empties it. After Finish it keeps Finish's reason and
// only lets go what waits; a second Close does nothing.
func (b *Inbox[T]) Close(err error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.stopped = true
	if !b.finished {
		b.finished, b.err = true, err
		if !b.handing {
			close(b.ch)
		}
	}
	if b.handing {
		close(b.stop)
		b.mu.Unlock()
		b.wg.Wait() // it returns without closing C: stopped is set
		b.mu.Lock()
		close(b.ch)
	}
	b.buf, b.head, b.n = nil, 0, 0
	b.mu.Unlock()
	for len(b.ch) > 0 {
		<-b.ch // C is closed: this never blocks
	}
}
