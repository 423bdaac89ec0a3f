// Package senseboardtest helps tests drive a complete device: one on a
// virtual clock in a temporary state directory, requests that fail the test
// when the device does not answer, subscriptions that collect their
// notifications, and restarts from the same state directory.
package senseboardtest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/replay"
	"senseboard/resource"
	"senseboard/world"
)

// Config adjusts the device of New.
type Config struct {
	Profile  *profile.Profile
	Scenario string // YAML; "" for the default wearer
	Seed     int64
	StateDir string // "" for a temporary directory
	Replay   []*replay.Recording
}

// Device is a device on a virtual clock.
type Device struct {
	*senseboard.Device
	Clock *clock.Virtual
	cfg   Config
	tb    testing.TB
}

// New starts a device that is closed when the test ends.
func New(tb testing.TB, cfg Config) *Device {
	tb.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = tb.TempDir()
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	d := &Device{Clock: clock.NewVirtual(), cfg: cfg, tb: tb}
	d.open()
	tb.Cleanup(func() {
		if d.Device != nil {
			d.Device.Close()
		}
	})
	return d
}

func (d *Device) open() {
	d.tb.Helper()
	var sc *world.Scenario
	if d.cfg.Scenario != "" {
		var err error
		if sc, err = world.ParseScenario([]byte(d.cfg.Scenario)); err != nil {
			d.tb.Fatal(err)
		}
	}
	var p *profile.Profile
	if d.cfg.Profile != nil {
		c := *d.cfg.Profile
		p = &c
	}
	dev, err := senseboard.New(senseboard.Config{Profile: p, Clock: d.Clock, Seed: d.cfg.Seed, StateDir: d.cfg.StateDir, Scenario: sc, Replay: d.cfg.Replay})
	if err != nil {
		d.tb.Fatal(err)
	}
	d.Device = dev
}

// Restart closes the device and starts it again from its state directory,
// as a new process would.
func (d *Device) Restart() {
	d.tb.Helper()
	if err := d.Device.Close(); err != nil {
		d.tb.Fatal(err)
	}
	d.Device = nil
	d.open()
}

// Do makes a request without a client and fails the test if the device
// does not answer.
func (d *Device) Do(op resource.Op, path string, params ...resource.Value) resource.Envelope {
	d.tb.Helper()
	env, err := d.Device.Call(op, path, params...)
	if err != nil {
		d.tb.Fatalf("%s %s: %v", op, path, err)
	}
	return env
}

// Expect makes a request and fails the test unless it answers status.
func (d *Device) Expect(status resource.Status, op resource.Op, path string, params ...resource.Value) resource.Envelope {
	d.tb.Helper()
	env := d.Do(op, path, params...)
	if env.Status != status {
		d.tb.Fatalf("%s %s: %d %s (%s), want %d", op, path, env.Status, env.Status, env.Error, status)
	}
	return env
}

// Off reports whether a request gets no answer because the device is off.
func (d *Device) Off(path string) bool {
	_, err := d.Device.Call(resource.Get, path)
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
func (d *Device) Subscribe(path string, params ...resource.Value) *Sub {
	d.tb.Helper()
	return d.subscribe(resource.NewQueue(1<<16), path, params)
}

// SubscribeAll subscribes a client that takes every notification at once,
// as a consumer that always keeps up: per-topic limits such as the ECG
// front end's buffer never drop anything for it.
func (d *Device) SubscribeAll(path string, params ...resource.Value) *Sub {
	d.tb.Helper()
	return d.subscribe(&collector{}, path, params)
}

// collector is a Sink that keeps everything.
type collector struct {
	mu     sync.Mutex
	events []resource.Event
}

func (c *collector) Notify(n resource.Notification) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, resource.Event{Sub: n.Sub, Content: n.Content})
	return true
}

func (c *collector) Ended(sub *resource.Subscription, reason resource.EndReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, resource.Event{Sub: sub, Ended: reason})
}

func (c *collector) Drain(dst []resource.Event) []resource.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	dst = append(dst, c.events...)
	c.events = c.events[:0]
	return dst
}

func (d *Device) subscribe(sink interface {
	resource.Sink
	Drainer
}, path string, params []resource.Value) *Sub {
	d.tb.Helper()
	s := &Sub{sink: sink}
	s.Client = resource.NewClient(d.tb.Name(), sink)
	d.tb.Cleanup(s.Client.Close)
	env, err := d.Device.Do(&resource.Request{Op: resource.Subscribe, Path: path, Params: params, Client: s.Client})
	if err != nil {
		d.tb.Fatalf("SUBSCRIBE %s: %v", path, err)
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
func (d *Device) Advance(dt time.Duration) { d.Clock.Advance(dt) }

// Record returns a record value from JSON, failing the test on bad JSON.
func Record(tb testing.TB, name, text string) resource.Value {
	tb.Helper()
	v, err := resource.RecordJSON(name, []byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	return v
}
