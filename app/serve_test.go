package app_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard/api"
	"senseboard/app"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/provider/info"
	"senseboard/resource"
)

// heapCore is a device core on a virtual clock whose heap module
// (/System/Memory/Heap) is left to an app.
func heapCore(t *testing.T) *device.Core { return heapCoreOn(t, clock.NewVirtual()) }

// heapCoreOn is a heapCore on clk.
func heapCoreOn(t *testing.T, clk clock.Clock) *device.Core {
	t.Helper()
	set, err := api.LoadFiles("info.yaml", "system_memory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	p.Modules.Heap = true
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	inf, err := info.New(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.New(device.Config{Profile: p, Clock: clk, Definitions: set, Providers: []device.Provider{inf}, AppModules: []string{"Heap"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// An app serves a module of the device's own definitions: the module's
// resources answer once the app serves them, as the app's handlers say,
// and while the app is stopped they say that it is.
func TestServeModule(t *testing.T) {
	d := heapCore(t)
	if env, _ := d.Call(resource.Get, "/System/Memory/Heap"); env.Status != resource.StatusNotFound {
		t.Fatalf("before the app serves it: %d, want 404", env.Status)
	}
	rt, err := app.Run(d, funcApp{"heap", func(ctx *app.Context) error {
		return ctx.Serve("heap", app.Handlers{"GET /System/Memory/Heap": func(*resource.Request) resource.Response {
			return resource.OK(resource.Uint32(7))
		}}, nil)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if env, _ := d.Call(resource.Get, "/System/Memory/Heap"); env.Status != resource.StatusOK || env.Content != resource.Uint32(7) {
		t.Errorf("served: %d %v, want 200 7", env.Status, env.Content)
	}
	d.Reset() // the app starts again and binds its handlers anew
	if env, _ := d.Call(resource.Get, "/System/Memory/Heap"); env.Status != resource.StatusOK {
		t.Errorf("after a reset: %d, want 200", env.Status)
	}
	rt.Stop()
	if env, _ := d.Call(resource.Get, "/System/Memory/Heap"); env.Status != resource.StatusServiceUnavailable || !strings.Contains(env.Error, "not running") {
		t.Errorf("the app stopped: %d %q, want 503 saying it is not running", env.Status, env.Error)
	}
}

// Serve refuses a module the device does not leave to an app, handlers of
// operations the module has not, and a module without its handlers.
func TestServeErrors(t *testing.T) {
	for _, tt := range []struct {
		module   string
		handlers app.Handlers
		sources  map[string]resource.Source
		want     string
	}{
		{"NUS", nil, nil, "module NUS: the device defines no resources of it"},
		{"Heap", app.Handlers{"PUT /System/Memory/Heap": nil}, nil, `handler "PUT /System/Memory/Heap" has no operation`},
		{"Heap", nil, nil, "no handler for GET /System/Memory/Heap"},
		{"Heap", app.Handlers{"GET /System/Memory/Heap": nil}, map[string]resource.Source{"/System/Memory/Heap": nil}, "source of /System/Memory/Heap, which is no subscribable resource"},
	} {
		d := heapCore(t)
		_, err := app.Run(d, funcApp{"heap", func(ctx *app.Context) error { return ctx.Serve(tt.module, tt.handlers, tt.sources) }})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Serve(%s): %v, want %q", tt.module, err, tt.want)
		}
	}
}

// stopApp is an app that counts its starts and stops, and subscribes at
// once in Start.
type stopApp struct {
	mu            sync.Mutex
	starts, stops int
	notes         int
	notesAtStop   []int
	subscribed    resource.Envelope
	missing       resource.Envelope
	info          resource.Envelope
}

func (a *stopApp) Name() string { return "stopper" }

func (a *stopApp) Start(ctx *app.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starts++
	_, a.subscribed = ctx.SubscribeNow("/Meas/Acc/13", func(any) { a.mu.Lock(); a.notes++; a.mu.Unlock() })
	s, env := ctx.SubscribeNow("/No/Such", func(any) {})
	if s != nil {
		env.Error = "a subscription to no resource"
	}
	a.missing = env
	a.info = ctx.CallNow(resource.Get, "/Info")
	return nil
}

func (a *stopApp) Stop(*app.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stops++
	a.notesAtStop = append(a.notesAtStop, a.notes)
}

// A Stopper is told when it stops, at a reset and for good, after the
// notifications that waited for it; SubscribeNow and CallNow answer at
// once.
func TestStopperAndCallsNow(t *testing.T) {
	d, c := newDevice(t)
	a := &stopApp{}
	rt, err := app.Run(d.Core, a)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	if !a.subscribed.Status.OK() || a.missing.Status != resource.StatusNotFound || a.info.Status != resource.StatusOK {
		t.Errorf("SubscribeNow %d, of no resource %d %q, CallNow %d; want 200, 404, 200", a.subscribed.Status, a.missing.Status, a.missing.Error, a.info.Status)
	}
	a.mu.Unlock()
	c.Advance(2 * time.Second) // 26 samples, a notification each
	d.Reset()
	rt.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.starts != 2 || a.stops != 2 {
		t.Errorf("%d starts, %d stops; want 2 and 2 (a reset, then for good)", a.starts, a.stops)
	}
	if len(a.notesAtStop) == 0 || a.notesAtStop[0] == 0 || a.notesAtStop[0] != a.notes {
		t.Errorf("notifications when stopped: %v of %d; want all of them, before the first stop", a.notesAtStop, a.notes)
	}
}
