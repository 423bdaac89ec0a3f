package clock

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard/internal/await"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestVirtualRunsInTimeOrder(t *testing.T) {
	v := NewVirtual()
	var got []string
	rec := func(s string) func() {
		return func() { got = append(got, fmt.Sprintf("%s@%v", s, v.Now())) }
	}
	v.AfterFunc(3*time.Second, rec("c"))
	v.AfterFunc(1*time.Second, rec("a"))
	v.AfterFunc(1*time.Second, rec("a2")) // same time: order of scheduling
	stop := v.AfterFunc(2*time.Second, rec("cancelled"))
	v.AfterFunc(2*time.Second, func() {
		got = append(got, "b@"+v.Now().String())
		v.AfterFunc(500*time.Millisecond, rec("nested")) // due at 2.5 s, before c
	})
	if !stop.Stop() || stop.Stop() {
		t.Fatal("Stop should succeed once")
	}
	v.Advance(2500 * time.Millisecond)
	if v.Now() != 2500*time.Millisecond {
		t.Errorf("Now = %v after Advance(2.5s)", v.Now())
	}
	v.Advance(10 * time.Second)
	want := "[a@1s a2@1s b@2s nested@2.5s c@3s]"
	if fmt.Sprint(got) != want {
		t.Errorf("ran %v, want %v", got, want)
	}
	if v.Now() != 12500*time.Millisecond || v.Pending() != 0 {
		t.Errorf("Now %v, pending %d", v.Now(), v.Pending())
	}
}

func TestAtDoesNotDrift(t *testing.T) {
	v := NewVirtual()
	const rate = 104 // samples per second; 1e9/104 is not a whole number of ns
	var times []time.Duration
	var k int64
	var tick func()
	tick = func() {
		times = append(times, v.Now())
		k++
		At(v, time.Duration(k*int64(time.Second)/rate), tick)
	}
	At(v, 0, tick)
	v.Advance(time.Hour)
	if want := int(rate*3600) + 1; len(times) != want {
		t.Fatalf("%d calls in an hour, want %d", len(times), want)
	}
	if last := times[len(times)-1]; last != time.Hour {
		t.Errorf("last call at %v, want exactly 1h", last)
	}
}

func TestStopAfterRun(t *testing.T) {
	v := NewVirtual()
	ran := false
	tm := v.AfterFunc(time.Millisecond, func() { ran = true })
	v.Advance(time.Millisecond)
	if !ran || tm.Stop() {
		t.Errorf("ran %v; Stop after running must report false", ran)
	}
}

func TestRunAsFastAsPossible(t *testing.T) {
	v := NewVirtual()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var mu sync.Mutex
	n := 0
	var tick func()
	tick = func() {
		mu.Lock()
		n++
		last := n == 1000
		mu.Unlock()
		if last {
			close(done)
			return
		}
		v.AfterFunc(time.Second, tick)
	}
	v.AfterFunc(time.Second, tick)
	finished := make(chan struct{})
	go func() { v.Run(ctx, 0); close(finished) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("1000 virtual seconds did not pass")
	}
	cancel()
	await.Within(t, finished, "Run has not ended with its context")
	if got := v.Now(); got != 1000*time.Second {
		t.Errorf("Now = %v, want 1000s", got)
	}
}

func TestRunScaled(t *testing.T) {
	v := NewVirtual()
	ctx, cancel := context.WithCancel(context.Background())
	fired := make(chan time.Duration, 1)
	v.AfterFunc(2*time.Second, func() { fired <- v.Now() })
	finished := make(chan struct{})
	start := time.Now()
	go func() { v.Run(ctx, 100); close(finished) }() // 2 s of device time in about 20 ms
	select {
	case at := <-fired:
		if at != 2*time.Second {
			t.Errorf("fired at %v", at)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("scaled clock did not reach 2s")
	}
	if time.Since(start) < 10*time.Millisecond {
		t.Error("scaled clock ran faster than 100x")
	}
	cancel()
	await.Within(t, finished, "Run has not ended with its context")
}

func TestReal(t *testing.T) {
	r := NewReal()
	defer r.Close()
	if r.Now() < 0 || r.Now() > time.Second {
		t.Errorf("real clock reads %v", r.Now())
	}
	done := make(chan struct{})
	r.AfterFunc(time.Millisecond, func() { close(done) })
	await.Within(t, done, "a call after 1ms has not run")
	if r.Now() < time.Millisecond {
		t.Errorf("a call after 1ms ran when the clock read %v", r.Now())
	}
	ch := make(chan struct{})
	At(r, r.Now()-time.Second, func() { close(ch) }) // in the past: at once
	await.Within(t, ch, "a call in the past has not run")
}

// Work held at a call's time keeps the clock there: AdvanceTo runs no
// further call and does not move the time until the work is released.
func TestHoldKeepsAdvanceWaiting(t *testing.T) {
	v := NewVirtual()
	var ran []time.Duration
	held := make(chan time.Duration)
	v.AfterFunc(time.Second, func() {
		v.Hold(2)
		ran = append(ran, v.Now())
		go func() { held <- v.Now() }() // the work, elsewhere
	})
	v.AfterFunc(2*time.Second, func() { ran = append(ran, v.Now()) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.Advance(3 * time.Second)
	}()
	// The advancing goroutine waits for the holds: it cannot run the call
	// at 2 s nor move the time before they are released.
	if at := await.Within(t, held, "the call at 1s has not run"); at != time.Second {
		t.Errorf("the held work ran at %v, want 1s", at)
	}
	v.Release(1)
	if now := v.Now(); now != time.Second {
		t.Errorf("with one hold left the clock reads %v, want 1s", now)
	}
	v.Release(1)
	await.Within(t, done, "Advance still waits after the last hold was released")
	if fmt.Sprint(ran) != "[1s 2s]" || v.Now() != 3*time.Second {
		t.Errorf("calls ran at %v, clock reads %v; want [1s 2s] and 3s", ran, v.Now())
	}
}

// The release of the last hold wakes AdvanceTo, which waits for it.
func TestReleaseWakesAdvance(t *testing.T) {
	v := NewVirtual()
	v.AfterFunc(time.Second, func() {
		v.Hold(1)
		go func() {
			time.Sleep(10 * time.Millisecond) // AdvanceTo waits meanwhile
			v.Release(1)
		}()
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.Advance(2 * time.Second)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("AdvanceTo still waits after the last hold was released")
	}
}

// Run ends with its context even while work holds the clock: a program
// that stops does not wait for work that waits for it.
func TestRunEndsWhileHeld(t *testing.T) {
	v := NewVirtual()
	held := make(chan struct{})
	v.AfterFunc(time.Second, func() { v.Hold(1); close(held) })
	v.AfterFunc(2*time.Second, func() { t.Error("a call ran while the clock was held") })
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() { v.Run(ctx, 0); close(finished) }()
	await.Within(t, held, "the call at 1s has not run")
	cancel()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal("Run did not end with its context while work was held")
	}
	v.Release(1)
	if now := v.Now(); now != time.Second {
		t.Errorf("the clock reads %v, want 1s", now)
	}
}
