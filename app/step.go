package app

import (
	"sync"

	"senseboard/resource"
)

// holder is a clock that work running elsewhere can hold
// (clock.Virtual.Hold).
type holder interface {
	Hold(n int)
	Release(n int)
}

// step keeps an app in step with a virtual clock: every piece of work
// handed to the app's goroutines (an event, a call, a notification) holds
// the clock until it has run, so that the app sees the time at which the
// work was set off and what it sends leaves then, as on the device, not in
// a burst when the app catches up with a clock that ran ahead. With other
// clocks a Context has no step, and every method of a nil step does
// nothing.
//
// It is also the sink of the app's subscriptions: a notification the
// queue takes holds the clock until the app's goroutine has handled it.
// Not being a resource.Queue itself, it is handed pooled content to keep
// (resource.Recyclable's Keep): on a virtual clock an app's notifications
// never go back to their pool, whether it borrows them
// (Subscription.Borrow) or not.
type step struct {
	clock holder
	notes *resource.Queue

	mu    sync.Mutex
	holds int  // held and not released
	queue int  // of them, notifications the queue holds
	ended bool // the context closed: nothing more is held
}

// hold holds the clock for one piece of work.
func (s *step) hold() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.ended {
		s.holds++
		s.clock.Hold(1)
	}
	s.mu.Unlock()
}

// release ends n holds.
func (s *step) release(n int) {
	if s == nil || n <= 0 {
		return
	}
	s.mu.Lock()
	n = min(n, s.holds)
	s.holds -= n
	s.clock.Release(n)
	s.mu.Unlock()
}

// end releases every hold: the app's goroutines stop.
func (s *step) end() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.ended = true
	s.clock.Release(s.holds)
	s.holds, s.queue = 0, 0
	s.mu.Unlock()
}

// Notify implements resource.Sink: the queue takes n, and the clock is
// held until the app has handled it.
func (s *step) Notify(n resource.Notification) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.notes.Notify(n) {
		return false
	}
	if !s.ended {
		s.holds++
		s.queue++
		s.clock.Hold(1)
	}
	return true
}

// Ended implements resource.Sink.
func (s *step) Ended(sub *resource.Subscription, reason resource.EndReason) {
	s.notes.Ended(sub, reason)
}

// drain drains q into dst and returns how many holds the drained
// notifications carry, to be released once they are handled.
func (s *step) drain(q *resource.Queue, dst []resource.Event) ([]resource.Event, int) {
	if s == nil {
		return q.Drain(dst), 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.queue
	s.queue = 0
	return q.Drain(dst), n
}
