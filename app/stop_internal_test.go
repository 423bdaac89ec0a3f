package app

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"senseboard/api"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/internal/await"
	"senseboard/profile"
	"senseboard/provider/info"
)

type startCounter struct{ started int }

func (a *startCounter) Name() string { return "counter" }
func (a *startCounter) Start(*Context) error {
	a.started++
	return nil
}

// newCore returns a device core with the info provider alone, closed
// with the test.
func newCore(t *testing.T) *device.Core {
	t.Helper()
	set, err := api.LoadFiles("info.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	inf, err := info.New(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.New(device.Config{Profile: p, Clock: clock.NewVirtual(), Definitions: set, Providers: []device.Provider{inf}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestStartOnAClosedContext: a reset's start that Stop overtakes, closing
// the context before the app's Start was posted, returns errStopped
// without running Start, where it waited for ever, and so did the device's
// clock, whose goroutine runs the reset.
func TestStartOnAClosedContext(t *testing.T) {
	d := newCore(t)
	a := &startCounter{}
	r := &Runtime{d: d, app: a, provided: map[string]bool{}}
	ctx := newContext(r)
	ctx.close() // Stop came between the context's making and the post
	errc := make(chan error, 1)
	go func() { errc <- r.startOn(ctx) }()
	select {
	case err := <-errc:
		if !errors.Is(err, errStopped) {
			t.Errorf("start on a closed context: %v, want errStopped", err)
		}
	case <-time.After(time.Minute): // hang guard
		t.Fatal("start on a closed context waits for a Start that never runs")
	}
	if a.started != 0 {
		t.Errorf("Start ran %d times on a closed context", a.started)
	}
}

// TestResetAfterStopLogsNothing: a reset whose start finds that Stop
// overtook it (the runtime stopped for good) is no error of the app's: the
// device logs nothing of it, and Start does not run.
func TestResetAfterStopLogsNothing(t *testing.T) {
	d := newCore(t)
	var mu sync.Mutex
	var logged []string
	d.SetLogger(func(_ device.Group, _ device.Level, msg string) {
		mu.Lock()
		logged = append(logged, msg)
		mu.Unlock()
	})
	a := &startCounter{}
	r := &Runtime{d: d, app: a, provided: map[string]bool{}, stopped: true}
	r.lifecycle(device.EventReset)
	mu.Lock()
	defer mu.Unlock()
	if len(logged) > 0 || a.started != 0 {
		t.Errorf("a reset after Stop logged %q and started the app %d times; want neither", logged, a.started)
	}
}

// heldStopper is an app whose Stop signals that it began, and ends when
// released.
type heldStopper struct {
	began, release chan struct{}
	ended          atomic.Bool
}

func (a *heldStopper) Name() string         { return "held" }
func (a *heldStopper) Start(*Context) error { return nil }
func (a *heldStopper) Stop(*Context) {
	close(a.began)
	<-a.release
	a.ended.Store(true)
}

// TestStopWaitsForAStopUnderWay: Stop that crosses a reset's stop of the
// app (the reset took the running context first) returns once the app's
// Stop has ended, not while it still runs, so that the device's Close,
// which stops its apps and then their stores, closes nothing under an
// app still stopping.
func TestStopWaitsForAStopUnderWay(t *testing.T) {
	d := newCore(t)
	a := &heldStopper{began: make(chan struct{}), release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(a.release) })
	t.Cleanup(release) // a failed test leaves no app's Stop blocked
	r, err := Run(d, a)
	if err != nil {
		t.Fatal(err)
	}
	resetStopped := make(chan struct{})
	go func() { r.stop(); close(resetStopped) }() // the reset's stop
	await.Within(t, a.began, "the app's Stop did not begin")
	stopped := make(chan bool, 1)
	go func() { r.Stop(); stopped <- a.ended.Load() }()
	select {
	case ended := <-stopped:
		if !ended {
			t.Fatal("Stop returned while the app's Stop, begun by a reset, still ran")
		}
	case <-time.After(100 * time.Millisecond): // Stop waits, as it should (a Stop that returns early but later than this is caught below unless it returns after the app's Stop ended)
	}
	release()
	if !await.Within(t, stopped, "Stop did not return after the app's Stop ended") {
		t.Error("Stop returned before the app's Stop ended")
	}
	await.Within(t, resetStopped, "the reset's stop did not end")
}

// liveStopper is an app that keeps the contexts it runs on: Start adds its
// context, Stop removes it. Its first Stop signals that it began and ends
// when released.
type liveStopper struct {
	began, release chan struct{}

	mu    sync.Mutex
	live  map[*Context]bool
	most  int // the most contexts live at once
	stops int
}

func (a *liveStopper) Name() string { return "live" }
func (a *liveStopper) Start(ctx *Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live[ctx] = true
	a.most = max(a.most, len(a.live))
	return nil
}

func (a *liveStopper) Stop(ctx *Context) {
	a.mu.Lock()
	delete(a.live, ctx)
	a.stops++
	first := a.stops == 1
	a.mu.Unlock()
	if first {
		close(a.began)
		<-a.release
	}
}

// TestResetsThatCrossKeepOneContext: two resets on different goroutines
// (a fault's on a request's, a mode switch's on the clock's), the second
// coming while the first stops the app, take turns: the app runs on one
// context at a time, and Stop leaves none running, where both resets
// opened a context and one was never stopped.
func TestResetsThatCrossKeepOneContext(t *testing.T) {
	d := newCore(t)
	a := &liveStopper{began: make(chan struct{}), release: make(chan struct{}), live: map[*Context]bool{}}
	release := sync.OnceFunc(func() { close(a.release) })
	t.Cleanup(release) // a failed test leaves no app's Stop blocked
	r, err := Run(d, a)
	if err != nil {
		t.Fatal(err)
	}
	resets := make(chan struct{}, 2)
	reset := func() { d.Reset(); resets <- struct{}{} }
	go reset()
	await.Within(t, a.began, "the first reset's stop of the app did not begin")
	go reset()
	time.Sleep(50 * time.Millisecond) // the second reset comes to the app while the first stops it
	release()
	await.Within(t, resets, "a reset did not end")
	await.Within(t, resets, "a reset did not end")
	r.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.most != 1 || len(a.live) != 0 {
		t.Errorf("the app ran on %d contexts at once, and %d were left running after Stop; want 1 and 0", a.most, len(a.live))
	}
}

// heldStarter is an app whose Start signals that it began, and returns
// err once released.
type heldStarter struct {
	began, release chan struct{}
	err            error
}

var errHeldStart = errors.New("the held Start failed")

func (a *heldStarter) Name() string { return "held start" }
func (a *heldStarter) Start(*Context) error {
	close(a.began)
	<-a.release
	return a.err
}

// TestStartErrorThatCrossesStop: a start whose app's Start fails while
// Stop closes its context returns the app's own error, where it told only
// of the stop.
func TestStartErrorThatCrossesStop(t *testing.T) {
	d := newCore(t)
	a := &heldStarter{began: make(chan struct{}), release: make(chan struct{}), err: errHeldStart}
	release := sync.OnceFunc(func() { close(a.release) })
	t.Cleanup(release) // a failed test leaves no app's Start blocked
	r := &Runtime{d: d, app: a, provided: map[string]bool{}}
	errc := make(chan error, 1)
	go func() { errc <- r.start() }()
	await.Within(t, a.began, "the app's Start did not begin")
	r.Stop() // the app has no Stop: its context closes at once
	release()
	if err := await.Within(t, errc, "the start did not end"); !errors.Is(err, errHeldStart) {
		t.Errorf("a start whose Start failed while Stop crossed it: %v, want the app's error", err)
	}
}

// TestLateEventsFollowTheMode: the device takes a mode under its lock and
// tells its lifecycle after, so that an update mode (or a power-off) and a
// reset that cross may come to the app in the other order. The app
// follows the mode the device ends in: an update mode told after the
// reset that overtook it leaves the app running, where it stopped it in
// Application mode until the next reset, and a reset told after the
// update mode that overtook it leaves the app stopped, where it started
// it in update mode.
func TestLateEventsFollowTheMode(t *testing.T) {
	for _, tt := range []struct {
		name        string
		mode        func(d *device.Core) // the device's mode as the later event left it
		late        device.Event         // the event told last
		wantRunning bool
	}{
		{"update mode after a reset", (*device.Core).Reset, device.EventUpdateMode, true},
		{"power off after a wake", func(d *device.Core) { d.PowerOff(); d.Wake() }, device.EventPowerOff, true},
		{"reset after an update mode", (*device.Core).EnterUpdateMode, device.EventReset, false},
		{"reset after a power off", (*device.Core).PowerOff, device.EventReset, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newCore(t)
			a := &startCounter{}
			r, err := Run(d, a)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(r.Stop)
			tt.mode(d)
			before := r.Context()
			r.lifecycle(tt.late)
			ctx := r.Context()
			if running := ctx != nil; running != tt.wantRunning {
				t.Fatalf("in mode %v after a late %v the app runs: %v, want %v", d.Mode(), tt.late, running, tt.wantRunning)
			}
			if tt.wantRunning && ctx != before {
				t.Errorf("a late %v in mode %v restarted the app, which runs since the later event", tt.late, d.Mode())
			}
		})
	}
}

// TestHungStartLetsAStoppedStartGo: a start whose app's Start hangs while
// Stop closes its context returns errStopped once it has waited
// HandlerTimeout for Start, as a stop waits for the app's Stop, where it
// waited for ever: a reset on the clock's goroutine held the clock, and a
// fleet's Run, which stops the apps and then waits for the clock, never
// ended.
func TestHungStartLetsAStoppedStartGo(t *testing.T) {
	d := newCore(t)
	a := &heldStarter{began: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(a.release) }) // the app's Start ends with the test
	r := &Runtime{d: d, app: a, provided: map[string]bool{}}
	errc := make(chan error, 1)
	go func() { errc <- r.start() }()
	await.Within(t, a.began, "the app's Start did not begin")
	r.Stop() // the app has no Stop: its context closes at once
	if err := await.Within(t, errc, "the start did not end while its app's Start hung"); !errors.Is(err, errStopped) {
		t.Errorf("a start whose Start hung when Stop crossed it: %v, want errStopped", err)
	}
}

// failingRestart is an app whose Start fails from its second start on.
type failingRestart struct{ starts atomic.Int32 }

func (a *failingRestart) Name() string { return "failing restart" }
func (a *failingRestart) Start(*Context) error {
	if a.starts.Add(1) > 1 {
		return errors.New("no second start")
	}
	return nil
}

// TestResetWhoseStartFailsStopsTheApp: a reset whose app's Start fails
// logs it and stops the context it opened, so that no context of an app
// that did not start stays running.
func TestResetWhoseStartFailsStopsTheApp(t *testing.T) {
	d := newCore(t)
	var mu sync.Mutex
	var logged []string
	d.SetLogger(func(_ device.Group, level device.Level, msg string) {
		if level == device.LevelError {
			mu.Lock()
			logged = append(logged, msg)
			mu.Unlock()
		}
	})
	a := &failingRestart{}
	r, err := Run(d, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	d.Reset()
	if ctx := r.Context(); ctx != nil {
		t.Error("the app runs on after a reset whose Start failed")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || a.starts.Load() != 2 {
		t.Errorf("after the failed restart: %d starts, errors logged %q; want 2 starts and one error", a.starts.Load(), logged)
	}
}
