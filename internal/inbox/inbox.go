// Package inbox holds what a client receives for one subscription: a
// buffered channel that drops what its reader does not take in time,
// counting it, and that closes when the subscription ends, keeping why.
package inbox

import "sync"

// Inbox is one subscription's notifications on their way to the reader.
type Inbox[T any] struct {
	ch chan T

	mu      sync.Mutex
	err     error
	dropped uint64
	closed  bool
}

// New returns an inbox that holds up to size notifications.
func New[T any](size int) *Inbox[T] { return &Inbox[T]{ch: make(chan T, size)} }

// C returns the notifications; it is closed when the inbox finishes.
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
	if b.closed {
		return
	}
	select {
	case b.ch <- v:
	default:
		b.dropped++
	}
}

// Finish closes the inbox with a reason (nil when it was asked to end);
// later calls do nothing.
func (b *Inbox[T]) Finish(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed, b.err = true, err
		close(b.ch)
	}
}
