package radio

import (
	"testing"
	"time"

	"senseboard/profile"
)

// TestAirtimeModelTimeMonotonic: a write (or a run) at a time earlier than
// the model has seen, as a call on another goroutine or one due earlier
// may read, counts at the model's time: the connection events do not move
// back, and nothing is carried out at a time the model has passed.
func TestAirtimeModelTimeMonotonic(t *testing.T) {
	ms := time.Millisecond
	q := &airQueue{cfg: profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 8}}
	q.start(0, 50*ms) // events at 0, 50, 100, ...
	q.run(100 * ms)
	q.write(30 * ms) // read before the run above: at 100 ms as the model counts
	if q.origin != 100*ms || q.next != 1 {
		t.Fatalf("after a write read at 30 ms, events from %v (next %d); want from 100ms (next 1), the model's time", q.origin, q.next)
	}
	q.push(airItem{packets: 1, places: 1})
	q.run(20 * ms) // earlier still: runs nothing
	q.run(120 * ms)
	if len(q.out) != 0 {
		t.Fatalf("an item carried out by %v, before the event after the write (150ms)", 120*ms)
	}
	if got := q.nextEvent(40 * ms); got != 150*ms {
		t.Errorf("the next event after 40 ms read late is at %v; want 150ms, the first after the model's time", got)
	}
	q.run(150 * ms)
	if len(q.out) != 1 {
		t.Errorf("%d items carried out at 150 ms; want the one that waited", len(q.out))
	}
	// A connection started anew (new parameters) at an earlier reading
	// starts at the model's time too.
	q.start(90*ms, 50*ms)
	if q.origin != 150*ms {
		t.Errorf("a start read at 90 ms anchors the events at %v; want 150ms", q.origin)
	}
}
