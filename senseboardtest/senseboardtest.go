// Package senseboardtest helps tests drive a complete device (a Rig): one
// on a virtual clock in a temporary state directory, requests that fail the
// test when the device does not answer, subscriptions that collect their
// notifications, field faults injected and their ground truth, logs grown
// to a size, and restarts from the same state directory.
package senseboardtest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/fault"
	"senseboard/logbook"
	"senseboard/resource"
	"senseboard/world"
)

// Rig is a device on a test's virtual clock, with a temporary state
// directory, closed when the test ends.
type Rig struct {
	// Device is the device, which Restart replaces.
	Device *senseboard.Device
	// Clock is the device's time, which only the test advances.
	Clock *clock.Virtual
	cfg   senseboard.Config
	tb    testing.TB
}

// New starts a device of cfg on a virtual clock (cfg.Clock, or a new one
// when it is nil), in a temporary state directory unless cfg.StateDir
// names one, and with seed 1 unless cfg.Seed is set; the device is closed
// when the test ends.
func New(tb testing.TB, cfg senseboard.Config) *Rig {
	tb.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = tb.TempDir()
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	r := &Rig{cfg: cfg, tb: tb}
	switch c := cfg.Clock.(type) {
	case nil:
		r.Clock = clock.NewVirtual()
	case *clock.Virtual:
		r.Clock = c
	default:
		tb.Fatalf("senseboardtest: a device on a %T; a rig's clock is a *clock.Virtual", c)
	}
	r.cfg.Clock = r.Clock
	r.open()
	tb.Cleanup(func() {
		if r.Device != nil {
			r.Device.Close()
		}
	})
	return r
}

// Scenario parses a scenario's YAML, failing the test on bad YAML; ""
// gives nil, the default wearer.
func Scenario(tb testing.TB, yaml string) *world.Scenario {
	tb.Helper()
	if yaml == "" {
		return nil
	}
	sc, err := world.ParseScenario([]byte(yaml))
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

func (r *Rig) open() {
	r.tb.Helper()
	cfg := r.cfg
	if cfg.Profile != nil {
		p := *cfg.Profile
		cfg.Profile = &p
	}
	d, err := senseboard.New(cfg)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.Device = d
}

// Restart closes the device and starts it again from its state directory,
// as a new process would.
func (r *Rig) Restart() {
	r.tb.Helper()
	if err := r.Device.Close(); err != nil {
		r.tb.Fatal(err)
	}
	r.Device = nil
	r.open()
}

// Do makes a request without a client and fails the test if the device
// does not answer.
func (r *Rig) Do(op resource.Op, path string, params ...resource.Value) resource.Envelope {
	r.tb.Helper()
	env, err := r.Device.Call(op, path, params...)
	if err != nil {
		r.tb.Fatalf("%s %s: %v", op, path, err)
	}
	return env
}

// Expect makes a request and fails the test unless it answers status.
func (r *Rig) Expect(status resource.Status, op resource.Op, path string, params ...resource.Value) resource.Envelope {
	r.tb.Helper()
	env := r.Do(op, path, params...)
	if env.Status != status {
		r.tb.Fatalf("%s %s: %d %s (%s), want %d", op, path, env.Status, env.Status, env.Error, status)
	}
	return env
}

// Off reports whether a request gets no answer because the device is off.
func (r *Rig) Off(path string) bool {
	_, err := r.Device.Call(resource.Get, path)
	return errors.Is(err, device.ErrOff)
}

// Sub is a test's subscription.
type Sub struct {
	Env    resource.Envelope
	Client *resource.Client
	sink   interface {
		resource.Sink
		Drainer
	}
}

// Subscribe subscribes a new client whose notifications wait in a
// resource.Queue, as a transport's would; the subscription ends with the test.
func (r *Rig) Subscribe(path string, params ...resource.Value) *Sub {
	r.tb.Helper()
	return r.subscribe(resource.NewQueue(1<<16), path, params)
}

// SubscribeAll subscribes a client that takes every notification at once,
// as a consumer that always keeps up: per-topic limits such as the ECG
// front end's buffer never drop anything for it.
func (r *Rig) SubscribeAll(path string, params ...resource.Value) *Sub {
	r.tb.Helper()
	return r.subscribe(&Collector{}, path, params)
}

// Collector is a Sink that keeps everything, as a reader that always keeps
// up: Drain takes what it holds.
type Collector struct {
	mu     sync.Mutex
	events []resource.Event
}

func (c *Collector) Notify(n resource.Notification) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, resource.Event{Sub: n.Sub, Content: n.Content})
	return true
}

func (c *Collector) Ended(sub *resource.Subscription, reason resource.EndReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, resource.Event{Sub: sub, Ended: reason})
}

func (c *Collector) Drain(dst []resource.Event) []resource.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	dst = append(dst, c.events...)
	c.events = c.events[:0]
	return dst
}

func (r *Rig) subscribe(sink interface {
	resource.Sink
	Drainer
}, path string, params []resource.Value) *Sub {
	r.tb.Helper()
	s := &Sub{sink: sink}
	s.Client = resource.NewClient(r.tb.Name(), sink)
	r.tb.Cleanup(s.Client.Close)
	env, err := r.Device.Do(&resource.Request{Op: resource.Subscribe, Path: path, Params: params, Client: s.Client})
	if err != nil {
		r.tb.Fatalf("SUBSCRIBE %s: %v", path, err)
	}
	s.Env = env
	return s
}

// Contents drains the notifications' contents.
func (s *Sub) Contents() []any { return Contents(s.sink) }

// Drainer holds a client's notifications until they are taken, as a
// resource.Queue does.
type Drainer interface {
	Drain([]resource.Event) []resource.Event
}

// Contents drains the notifications that wait in q and returns their
// contents; the ends of subscriptions are left out.
func Contents(q Drainer) []any {
	var out []any
	for _, e := range q.Drain(nil) {
		if e.Ended == 0 {
			out = append(out, e.Content)
		}
	}
	return out
}

// Events drains every event, ends included.
func (s *Sub) Events() []resource.Event { return s.sink.Drain(nil) }

// Advance moves device time forward.
func (r *Rig) Advance(dt time.Duration) { r.Clock.Advance(dt) }

// LogUntil lets the device's data logger, which the test started, log
// until the newest log holds at least size bytes, moving device time 10 s
// at a time, and fails the test when the log stops growing; it then stops
// the logger and returns the newest log's entry.
func (r *Rig) LogUntil(size int) logbook.Entry {
	r.tb.Helper()
	var last logbook.Entry
	for int(last.Size) < size {
		r.Advance(10 * time.Second)
		es := r.Expect(200, resource.Get, "/Mem/Logbook/Entries").Content.(*logbook.Entries).Elements
		if es[len(es)-1].Size == last.Size {
			r.tb.Fatalf("the log stopped growing at %d bytes", last.Size)
		}
		last = es[len(es)-1]
	}
	r.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	es := r.Expect(200, resource.Get, "/Mem/Logbook/Entries").Content.(*logbook.Entries).Elements
	return es[len(es)-1]
}

// Record returns a record value from JSON, failing the test on bad JSON.
func Record(tb testing.TB, name, text string) resource.Value {
	tb.Helper()
	v, err := resource.RecordJSON(name, []byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// Fault injects a field fault given as JSON ({"fault": "stall", "path":
// "/Meas/ECG"}, docs/faults.md) into the device now, failing the test when
// the device refuses it, and returns its record.
func (r *Rig) Fault(json string) fault.Record {
	r.tb.Helper()
	rec, err := r.Device.Faults.InjectJSON([]byte(json))
	if err != nil {
		r.tb.Fatalf("fault %s: %v", json, err)
	}
	return rec
}

// EndFault ends an active fault now, failing the test when there is none
// of that id, and returns its record.
func (r *Rig) EndFault(id int) fault.Record {
	r.tb.Helper()
	rec, err := r.Device.Faults.End(id)
	if err != nil {
		r.tb.Fatalf("end fault %d: %v", id, err)
	}
	return rec
}

// Faults returns the device's ground truth: every fault, active and past.
func (r *Rig) Faults() []fault.Record { return r.Device.Faults.List() }
