package clock

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"senseboard/internal/await"
)

// A Call runs in the same order as At would: calls due at the same time in
// the order they were scheduled, whether by a Call or At, and a Call
// scheduled again from its own run goes behind the calls already pending.
func TestCallOrderAsAt(t *testing.T) {
	v := NewVirtual()
	var got []string
	var a, b *Call
	na, nb := 0, 0
	a = NewCall(v, func() {
		got = append(got, "a")
		if na++; na < 3 {
			a.At(v.Now() + 10)
		}
	})
	b = NewCall(v, func() {
		got = append(got, "b")
		if nb++; nb < 3 {
			b.At(v.Now() + 10)
		}
	})
	a.At(10)
	At(v, 10, func() { got = append(got, "x10") })
	b.At(10)
	At(v, 20, func() { got = append(got, "x20") })
	v.Advance(time.Second)
	want := []string{"a", "x10", "b", "x20", "a", "b", "a", "b"}
	if !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
}

// At in place of a pending run moves it; Stop cancels it and says whether
// it was pending.
func TestCallRescheduleStop(t *testing.T) {
	v := NewVirtual()
	var ran []time.Duration
	c := NewCall(v, func() { ran = append(ran, v.Now()) })
	if c.Stop() {
		t.Fatal("Stop of a call never scheduled reported a pending run")
	}
	c.At(5)
	c.At(7) // in place of the run at 5
	if n := v.Pending(); n != 1 {
		t.Fatalf("%d calls pending after scheduling one twice, want 1", n)
	}
	v.Advance(10)
	c.At(15)
	if !c.Stop() {
		t.Fatal("Stop of a pending call reported none")
	}
	if c.Stop() {
		t.Fatal("second Stop reported a pending run")
	}
	v.Advance(10)
	if want := []time.Duration{7}; !slices.Equal(ran, want) {
		t.Fatalf("ran at %v, want %v", ran, want)
	}
}

// Scheduling a Call again allocates nothing, on a virtual and on a real
// clock.
func TestCallAllocs(t *testing.T) {
	r := NewReal()
	defer r.Close()
	for _, clk := range []Clock{NewVirtual(), r} {
		c := NewCall(clk, func() {})
		if n := testing.AllocsPerRun(100, func() { c.At(time.Hour) }); n != 0 {
			t.Errorf("%T: At allocates %v times, want 0", clk, n)
		}
		c.Stop()
	}
}

// On the real clock a Call runs once its time has come, and runs again when
// scheduled again from its run.
func TestCallReal(t *testing.T) {
	r := NewReal()
	defer r.Close()
	done := make(chan time.Duration, 2)
	n := 0
	var c *Call
	c = NewCall(r, func() {
		done <- r.Now()
		if n++; n < 2 {
			c.At(r.Now() + time.Millisecond)
		}
	})
	c.At(2 * time.Millisecond)
	for i := range 2 {
		select {
		case at := <-done:
			if at < 2*time.Millisecond {
				t.Fatalf("run %d at %v, before its time 2ms", i, at)
			}
		case <-time.After(time.Minute):
			t.Fatalf("run %d never came", i)
		}
	}
}

// A clock of another kind gets the call through At.
func TestCallOtherClock(t *testing.T) {
	v := NewVirtual()
	w := wrapped{v}
	ran := 0
	c := NewCall(w, func() { ran++ })
	c.At(5)
	c.At(6) // in place of the run at 5
	v.Advance(10)
	c.At(15) // at the clock's reading, 5 from now
	v.Advance(5)
	c.At(20)
	if !c.Stop() {
		t.Fatal("Stop of a pending call reported none")
	}
	v.Advance(20)
	if ran != 2 {
		t.Fatalf("ran %d times, want 2", ran)
	}
}

// wrapped is a Clock that At and Call do not know.
type wrapped struct{ v *Virtual }

func (w wrapped) Now() time.Duration                        { return w.v.Now() }
func (w wrapped) AfterFunc(d time.Duration, f func()) Timer { return w.v.AfterFunc(d, f) }

// Init of a pending Call cancels the run: the clock counts it no more and
// runs the call made in its place when scheduled. Init for another clock
// panics, where the entry the first clock still holds of the stopped call
// would look pending to it once the other clock's order numbers reach the
// entry's: the first clock would run the call and lose the count of its
// own.
func TestCallInit(t *testing.T) {
	v := NewVirtual()
	var ran []string
	var c Call
	c.Init(v, func() { ran = append(ran, "old") })
	At(v, 5, func() { ran = append(ran, "at 5") })
	c.At(10)
	c.Init(v, func() { ran = append(ran, "new") })
	if n := v.Pending(); n != 1 {
		t.Errorf("%d calls pending after Init of a pending call beside one other, want 1", n)
	}
	v.Advance(20)
	c.At(30)
	v.Advance(20)
	if want := []string{"at 5", "new"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}

	var d Call
	d.Init(v, func() {})
	At(v, 50, func() {})
	d.At(60)
	d.Stop()
	defer func() {
		if recover() == nil {
			t.Error("Init for another clock of a call scheduled on one did not panic")
		}
	}()
	d.Init(NewVirtual(), func() {})
}

// Init of a call that a stale entry in its clock's heap still points to,
// beside a runner that reads the entry, does not race with it (run with
// -race): the runner reads the call's order number under the clock's lock,
// which Init lets go of before it writes the call. The entry is the one
// the call left when it was scheduled again while pending; the run that
// Init cancels is the one in its place.
func TestCallInitBesideTheRunner(t *testing.T) {
	s := newScheduler(time.Now().Add(-time.Hour), defaultQuantum) // the calls below fell due long ago
	s.owner = 1                                                   // as if a runner were in charge: push arms no timer, the test runs the pass
	r := &Real{s: s}
	var ran []string
	s.push(&timedCall{f: func() { ran = append(ran, "first") }}, time.Second) // keeps the call's entries from the top
	var c Call
	c.Init(r, func() { ran = append(ran, "old") })
	c.At(3 * time.Second)
	c.At(2 * time.Second) // its entry at 3s is stale
	passed := make(chan struct{})
	go func() {
		defer close(passed)
		// The runner looks at the heap once Init has cancelled the
		// pending run, with nothing but the clock's lock between them.
		for {
			s.mu.Lock()
			n := s.calls.len()
			s.mu.Unlock()
			if n == 1 {
				break
			}
			runtime.Gosched()
		}
		s.drain(s.since(), 0, s.owner) // runs the first call, then reads the stale entry come to the top
	}()
	c.Init(r, func() { ran = append(ran, "new") })
	await.Within(t, passed, "the runner's pass has not ended")
	c.At(4 * time.Second)
	s.drain(s.since(), 0, s.owner)
	if want := []string{"first", "new"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}
