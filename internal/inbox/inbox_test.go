package inbox

import (
	"errors"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// Every test leaves no goroutine of an inbox behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waiting returns how many notifications wait and the ring's length once
// the inbox has settled at want waiting (the handing goroutine removes a
// notification just after the reader has it).
func waiting[T any](b *Inbox[T], want int) (n, ring int) {
	for {
		b.mu.Lock()
		n, ring = b.n, len(b.buf)
		b.mu.Unlock()
		if n == want {
			return n, ring
		}
		runtime.Gosched()
	}
}

// read takes k notifications and fails unless they are next, next+1, ...
func read(t *testing.T, b *Inbox[int], next, k int) int {
	t.Helper()
	for range k {
		if v, ok := <-b.C(); !ok || v != next {
			t.Fatalf("read %d (open %v), want %d", v, ok, next)
		}
		next++
	}
	return next
}

func TestDropsWhenFullAndFinishKeepsWhatWaits(t *testing.T) {
	b := New[int](2)
	for i := range 5 {
		b.Deliver(i)
	}
	if b.Dropped() != 3 {
		t.Errorf("dropped %d, want 3", b.Dropped())
	}
	gone := errors.New("gone")
	b.Finish(gone)
	b.Finish(nil)
	b.Deliver(9)
	var got []int
	for v := range b.C() {
		got = append(got, v)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 || !errors.Is(b.Err(), gone) {
		t.Errorf("got %v, err %v", got, b.Err())
	}
}

// Beyond the channel's 16 slots, the ring doubles from 16 up to what the
// size leaves (100-16) as notifications pile up, and halves as the reader
// catches up whenever a quarter of it is in use, down to 16, and goes when
// it empties; the order holds throughout.
func TestRingGrowsAndShrinks(t *testing.T) {
	b := New[int](100)
	delivered := 0
	for _, step := range []struct{ upTo, ring int }{{16, 0}, {17, 16}, {32, 16}, {33, 32}, {48, 32}, {49, 64}, {81, 84}, {100, 84}} {
		for ; delivered < step.upTo; delivered++ {
			b.Deliver(delivered)
		}
		if _, ring := waiting(b, max(step.upTo-chanBuffer, 0)); ring != step.ring {
			t.Errorf("%d delivered: ring of %d, want %d", step.upTo, ring, step.ring)
		}
	}
	b.Deliver(100)
	if b.Dropped() != 1 {
		t.Errorf("a full inbox dropped %d, want 1", b.Dropped())
	}
	next := 0
	for _, step := range []struct{ left, ring int }{{22, 84}, {21, 42}, {11, 42}, {10, 21}, {6, 21}, {5, 16}, {1, 16}, {0, 0}} {
		next = read(t, b, next, 100-chanBuffer-step.left-next)
		if _, ring := waiting(b, step.left); ring != step.ring {
			t.Errorf("%d in the ring: a ring of %d, want %d", step.left, ring, step.ring)
		}
	}
	next = read(t, b, next, chanBuffer)
	b.Finish(nil)
	if _, ok := <-b.C(); ok || next != 100 {
		t.Errorf("C open after Finish with nothing waiting, or %d read of 100", next)
	}
}

// Growing a ring whose notifications wrap past its end, and shrinking one,
// keeps them in order; a reader that keeps up needs no ring.
func TestRingKeepsOrderAcrossTheEnd(t *testing.T) {
	b := New[int](1000)
	next, sent := 0, 0
	deliver := func(k int) {
		for range k {
			b.Deliver(sent)
			sent++
		}
	}
	for range 100 { // a reader that keeps up
		deliver(1)
		next = read(t, b, next, 1)
	}
	if _, ring := waiting(b, 0); ring != 0 {
		t.Fatalf("a reader that keeps up: a ring of %d", ring)
	}
	deliver(chanBuffer + 16)
	next = read(t, b, next, 10) // the ring's first 10 move to the channel
	waiting(b, 6)
	deliver(10) // 16 in the ring, from its 11th slot round to its 10th
	if _, ring := waiting(b, 16); ring != 16 {
		t.Fatalf("ring of %d, want 16 before it grows", ring)
	}
	deliver(60) // grows three times, the first time wrapped
	if _, ring := waiting(b, 76); ring != 128 {
		t.Fatalf("ring of %d, want 128", ring)
	}
	next = read(t, b, next, 60)
	deliver(100) // wraps again
	next = read(t, b, next, 100)
	if _, ring := waiting(b, 16); ring != 32 {
		t.Fatalf("ring of %d with 16 in it, want 32", ring)
	}
	next = read(t, b, next, 16+chanBuffer)
	if next != sent || b.Dropped() != 0 {
		t.Errorf("read up to %d of %d, %d dropped", next, sent, b.Dropped())
	}
	b.Close(nil)
}

// Close lets go what waits at once, with nobody reading, and stops the
// goroutine that hands notifications on (goleak checks it is gone).
func TestCloseLetsGoWhatWaits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(b *Inbox[int])
	}{
		{"open", func(b *Inbox[int]) {}},
		{"finished", func(b *Inbox[int]) { b.Finish(errors.New("earlier")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New[int](64)
			for i := range 40 {
				b.Deliver(i)
			}
			tc.before(b)
			lost := errors.New("connection lost")
			b.Close(lost)
			b.Close(nil)
			b.Deliver(99)
			for v := range b.C() {
				t.Errorf("after Close, C gave %d", v)
			}
			if n, ring := waiting(b, 0); n != 0 || ring != 0 {
				t.Errorf("after Close: %d waiting in a ring of %d", n, ring)
			}
			if tc.name == "open" && !errors.Is(b.Err(), lost) {
				t.Errorf("Err = %v, want %v", b.Err(), lost)
			}
		})
	}
}

// Close after Finish, once the reader has taken everything (C closed),
// does nothing more.
func TestCloseAfterDrained(t *testing.T) {
	b := New[int](4)
	b.Deliver(1)
	b.Finish(nil)
	read(t, b, 1, 1)
	if _, ok := <-b.C(); ok {
		t.Fatal("C open after Finish and the last notification")
	}
	b.Close(errors.New("late"))
	if b.Err() != nil {
		t.Errorf("Err = %v after Finish(nil)", b.Err())
	}
}

// BenchmarkIdleInbox reports the memory an idle subscription's inbox holds
// (of the size clients use, 4096, for 48-byte notifications) after it has
// taken a burst of 1000 notifications that its reader read.
func BenchmarkIdleInbox(b *testing.B) {
	type notification struct {
		at      [3]int64
		payload []byte
	}
	const idle = 100
	var before, after runtime.MemStats
	var kept []*Inbox[notification]
	for range b.N {
		runtime.GC()
		runtime.ReadMemStats(&before)
		kept = make([]*Inbox[notification], idle)
		for i := range kept {
			in := New[notification](4096)
			for range 1000 {
				in.Deliver(notification{})
			}
			for range 1000 {
				<-in.C()
			}
			waiting(in, 0)
			kept[i] = in
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/idle, "B/idle-inbox")
	for _, in := range kept {
		in.Close(nil)
	}
}

// BenchmarkTrickle reports what a notification costs when the reader keeps
// up.
func BenchmarkTrickle(b *testing.B) {
	in := New[[6]int64](4096)
	for range b.N {
		in.Deliver([6]int64{})
		<-in.C()
	}
	in.Close(nil)
}
