// Package inbox holds what a client receives for one subscription: a
// bounded queue that drops what its reader does not take in time, counting
// it, handed to the reader on a channel that closes when the subscription
// ends, keeping why.
//
// Memory follows use: an inbox that has received nothing holds no buffer,
// and an idle one runs no goroutine. Notifications wait in a ring that
// doubles as they pile up (from 16), up to the inbox's size, and halves as
// the reader catches up, whenever a quarter of it is in use, down to 16
// again: a burst's memory goes with it, and a steady trickle does not
// allocate a ring for each notification. While some wait, a goroutine of
// the inbox hands them to the reader one at a time. That goroutine is the
// inbox's: Close stops it and waits for it; after Finish it ends once the
// reader has taken what waited.
package inbox

import "sync"

// minBuffer is the smallest ring an inbox allocates.
const minBuffer = 16

// Inbox is one subscription's notifications on their way to the reader.
type Inbox[T any] struct {
	ch   chan T        // unbuffered: what waits is in buf
	stop chan struct{} // closed by Close: the handing goroutine returns
	wg   sync.WaitGroup

	mu       sync.Mutex
	size     int // the most notifications that wait
	buf      []T // ring; grows up to size, shrinks as it drains
	head, n  int
	handing  bool // the handing goroutine runs
	err      error
	dropped  uint64
	finished bool // no more notifications come in
	stopped  bool // Close was called
}

// New returns an inbox that holds up to size notifications (at least one).
func New[T any](size int) *Inbox[T] {
	return &Inbox[T]{ch: make(chan T), stop: make(chan struct{}), size: max(size, 1)}
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
	if b.n == b.size {
		b.dropped++
		return
	}
	if b.n == len(b.buf) {
		b.resize(min(max(2*len(b.buf), minBuffer), b.size))
	}
	b.buf[(b.head+b.n)%len(b.buf)] = v
	b.n++
	if !b.handing {
		b.handing = true
		b.wg.Add(1)
		go b.hand()
	}
}

// hand gives the waiting notifications to the reader, oldest first, until
// none wait or Close stops it. The last one out closes C once the inbox
// has finished.
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

// take removes the oldest notification, which the reader has, and halves
// a ring larger than the smallest once a quarter of it is in use.
func (b *Inbox[T]) take() {
	var zero T
	b.buf[b.head] = zero
	b.head = (b.head + 1) % len(b.buf)
	b.n--
	if len(b.buf) > minBuffer && b.n <= len(b.buf)/4 {
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
// waits: it stops the goroutine that hands notifications to the reader,
// waits for it, and closes C at once. Later calls, after Finish too, only
// let go what waits.
func (b *Inbox[T]) Close(err error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	if !b.finished {
		b.finished, b.err = true, err
	} else if !b.handing {
		b.stopped = true // C is closed already
		b.mu.Unlock()
		return
	}
	b.stopped = true
	close(b.stop)
	b.mu.Unlock()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf, b.head, b.n = nil, 0, 0
	close(b.ch)
}
