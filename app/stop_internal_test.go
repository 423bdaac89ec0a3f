package app

import (
	"errors"
	"testing"
	"time"

	"senseboard/api"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/provider/info"
)

type startCounter struct{ started int }

func (a *startCounter) Name() string { return "counter" }
func (a *startCounter) Start(*Context) error {
	a.started++
	return nil
}

// TestStartOnAClosedContext: a reset's start that Stop overtakes, closing
// the context before the app's Start was posted, returns errStopped
// without running Start, where it waited for ever, and so did the device's
// clock, whose goroutine runs the reset.
func TestStartOnAClosedContext(t *testing.T) {
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
