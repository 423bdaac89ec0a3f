// Package system provides /System/Mode, /System/Memory/Heap and
// /System/States/{StateID}, with the device's battery and its wake-up from
// FullPowerOff.
package system

import (
	"math"
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/resource"
	"senseboard/world"
)

// The state ids of /System/States.
const (
	StateMovement = iota
	StateBattery
	StateConnectors
	StateDoubleTap
	StateTap
	StateFreeFall
	numStates
)

var stateNames = [numStates]string{"Movement", "BatteryStatus", "Connectors", "DoubleTap", "Tap", "FreeFall"}

// PollInterval is how often battery and connectors are looked at while
// someone subscribes to them, and how often a device that is off looks for
// its wake-up source.
const PollInterval = 100 * time.Millisecond

// BatteryLow is the level below which the battery state reads 1.
const BatteryLow = 0.10

// Battery model: a CR2025 coin cell and the device's current draw.
const (
	capacityMAh = 170.0
	baseMA      = 0.4  // awake, idle
	perSubMA    = 0.05 // each subscription's sensor and radio traffic
	offMA       = 0.002
)

// Heap model: what a running firmware holds.
const (
	heapBase   = 7168 // bytes with no subscription
	heapPerSub = 416  // bytes per subscription
)

// Heap sufficiency results.
const (
	NotTested = 0
	Passed    = 1
	Failed    = 2
)

var sufficiencyNames = [...]string{"NotTested", "Passed", "Failed"}

// Mode is the content of GET /System/Mode.
type Mode struct {
	Current uint8  `json:"current"`
	Next    *uint8 `json:"next,omitempty"`
}

// Heap is the content of GET /System/Memory/Heap.
type Heap struct {
	Size                  uint32        `json:"Size"`
	Free                  uint32        `json:"Free"`
	Used                  uint32        `json:"Used"`
	LowestFree            uint32        `json:"LowestFree"`
	SufficiencyTestResult resource.Pair `json:"SufficiencyTestResult"`
}

// StateChange is a notification of /System/States/{StateID}.
type StateChange struct {
	Timestamp uint32        `json:"Timestamp"`
	StateID   resource.Pair `json:"StateId"`
	NewState  int32         `json:"NewState"`
}

// Config connects the provider to the parts of the device it reads.
type Config struct {
	// Wearer is whom the device is worn by: the electrodes' contact, the
	// movement that wakes it, the scenario's battery levels.
	Wearer *world.Wearer
	// FrontEnd gives the wake-up source set on the ECG front end; nil
	// means electrode contact.
	FrontEnd FrontEnd
	// Detectors are the accelerometer's detectors of states 0, 3, 4 and 5;
	// nil reads those states as not running.
	Detectors Detectors
	// Radio and LED draw current beyond the model's own while a central
	// is connected (0.3 mA) and while the LED is on (2 mA); nil draws none.
	Radio Radio
	LED   LED
}

// FrontEnd is the ECG front end (provider/afe).
type FrontEnd interface {
	// WakeUp returns the wake-up source: 0 movement, 1 electrode contact.
	WakeUp() uint8
}

// Detectors are the accelerometer's state detectors (meas.IMU), which
// report what they find to Detected.
type Detectors interface {
	// AccRunning reports whether the accelerometer runs: the detectors
	// need it.
	AccRunning() bool
	// CatchUp brings the detectors up to now: they run ahead only while
	// one of their states has a subscriber, and catch up before one is
	// read. It is called without the provider's lock (the detectors
	// report to Detected).
	CatchUp()
	// Watch tells the detectors that one of their states gained its first
	// subscriber (+1) or lost its last (-1).
	Watch(delta int)
}

// Radio is the device's radio (provider/ble).
type Radio interface {
	// Connected reports whether a central is connected.
	Connected() bool
}

// LED is the device's LED (provider/ui).
type LED interface {
	// LedOn reports whether the LED is lit.
	LedOn() bool
}

// Current drawn beyond the model's own, mA.
const (
	radioMA = 0.3 // a central connected
	ledMA   = 2   // the LED on
)

// Provider serves the system resources.
type Provider struct {
	d   *device.Core
	cfg Config

	mu        sync.Mutex
	values    [numStates]int32
	topics    [numStates]*resource.Topic
	watched   [numStates]bool // a detected state's topic is counted in Watch
	poll      clock.Timer
	battery   float64 // 0..1
	batteryAt time.Duration
	eventsTo  time.Duration // scenario events before this time are applied
	heapArmed bool
	heapMin   uint32
	heapLow   uint32 // lowest free since the test was armed
	wake      clock.Timer
	wasOn     bool        // contact when the device turned off
	fault     float64     // a battery fault's drain, percent per minute (Drain)
	empty     clock.Timer // when the fault's drain empties the battery
	onEmpty   func()
}

// New returns the provider.
func New(cfg Config) *Provider {
	return &Provider{cfg: cfg, battery: cfg.Wearer.Scenario().Start.Battery}
}

// Register installs the resources.
func (p *Provider) Register(d *device.Core) error {
	p.d = d
	p.batteryAt = d.Clock().Now()
	p.eventsTo = p.batteryAt
	d.HandleFunc("/System/Mode", resource.Get, func(*resource.Request) resource.Response {
		m := &Mode{Current: uint8(d.Mode())}
		if n, ok := d.NextMode(); ok {
			v := uint8(n)
			m.Next = &v
		}
		return resource.OK(m)
	})
	d.HandleFunc("/System/Mode", resource.Put, p.putMode)
	if d.Profile().Modules.Heap {
		d.HandleFunc("/System/Memory/Heap", resource.Get, func(*resource.Request) resource.Response { return resource.OK(p.Heap()) })
		d.SetHeapTest(p.armHeapTest)
	}
	d.HandleFunc("/System/Energy/Level", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(resource.Uint8(p.EnergyLevel()))
	})
	d.HandleFunc("/System/States/{StateID}", resource.Get, p.getState)
	d.HandleSource("/System/States/{StateID}", stateSource{p})
	return nil
}

func (p *Provider) putMode(req *resource.Request) resource.Response {
	m := req.Arg(0).Uint()
	switch m {
	case 1, 5, 12:
		p.d.SwitchMode(device.Mode(m))
		return resource.OK(nil)
	case 3:
		return resource.Errorf(resource.StatusNotImplemented, "mode 3 (PowerOff) is not possible on this hardware; use 1 (FullPowerOff)")
	case 0, 2, 4, 10, 11:
		return resource.Errorf(resource.StatusNotImplemented, "mode %d is part of the shared interface but not implemented on this device; allowed: 1 (FullPowerOff), 5 (Application), 12 (FwUpdateMode)", m)
	}
	return resource.Errorf(resource.StatusBadRequest, "mode %d does not exist; allowed: 1 (FullPowerOff), 5 (Application), 12 (FwUpdateMode)", m)
}

// Heap returns the modelled heap statistics.
func (p *Provider) Heap() *Heap {
	size := uint32(p.d.Profile().Heap.Size)
	free := func(subs int) uint32 {
		used := uint32(heapBase + heapPerSub*subs)
		if used > size {
			return 0
		}
		return size - used
	}
	now, low := free(p.d.Hub().Count()), free(p.d.Hub().Peak())
	h := &Heap{Size: size, Free: now, Used: size - now, LowestFree: low}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := NotTested
	if p.heapArmed {
		p.heapLow = min(p.heapLow, low)
		r = Passed
		if p.heapLow < p.heapMin {
			r = Failed
		}
	}
	h.SufficiencyTestResult = resource.Pair{Value: r, Name: sufficiencyNames[r]}
	return h
}

func (p *Provider) armHeapTest(minFree uint32) {
	p.d.Hub().ResetPeak()
	h := p.Heap()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heapArmed, p.heapMin, p.heapLow = true, minFree, h.Free
}

// Battery returns the battery level, 0..1.
func (p *Provider) Battery() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drain()
	return p.battery
}

// EnergyLevel returns the battery level in percent, rounded, as
// /System/Energy/Level reports it.
func (p *Provider) EnergyLevel() uint8 {
	return uint8(math.Round(min(max(p.Battery(), 0), 1) * 100))
}

// SetBattery sets the battery level, as a charge or a scenario does.
func (p *Provider) SetBattery(level float64) {
	p.mu.Lock()
	p.drain()
	p.battery = min(max(level, 0), 1)
	p.mu.Unlock()
	p.pollStates()
}

// drain runs the battery down for the time since it was last looked at,
// and applies the battery levels the scenario sets on the way; p.mu is held.
func (p *Provider) drain() {
	now := p.d.Clock().Now()
	for _, e := range p.cfg.Wearer.Events(p.eventsTo, now+1) {
		if e.Kind == world.Battery {
			p.drainTo(e.At)
			p.battery = e.Value
		}
	}
	p.eventsTo = max(p.eventsTo, now+1)
	p.drainTo(now)
}

func (p *Provider) drainTo(now time.Duration) {
	if now < p.batteryAt {
		return
	}
	hours := (now - p.batteryAt).Hours()
	p.batteryAt = now
	ma := offMA
	if p.d.Mode() != device.ModeFullPowerOff {
		extra := 0.0
		if p.cfg.Radio != nil && p.cfg.Radio.Connected() {
			extra += radioMA
		}
		if p.cfg.LED != nil && p.cfg.LED.LedOn() {
			extra += ledMA
		}
		ma = baseMA + perSubMA*float64(p.d.Hub().Count()) + extra
	}
	p.battery = max(p.battery-ma*hours/capacityMAh-p.fault/100*hours*60, 0)
}

// Drain makes the battery run down at rate percent per minute beyond what
// the device draws, as a failing battery does: the battery state goes to 1
// below BatteryLow, and at empty the device turns off (and wakes no more
// until Charge); empty runs then. A rate of 0 ends the drain.
func (p *Provider) Drain(rate float64, empty func()) {
	p.mu.Lock()
	p.drain()
	p.fault, p.onEmpty = rate, empty
	p.armEmpty()
	p.mu.Unlock()
	p.pollStates()
}

// Charge ends a drain, charges the battery full and wakes the device if
// it was off.
func (p *Provider) Charge() {
	p.Drain(0, nil)
	p.SetBattery(1)
	p.d.Wake()
}

// armEmpty sets the timer of the moment the drain empties the battery;
// p.mu is held.
func (p *Provider) armEmpty() {
	if p.empty != nil {
		p.empty.Stop()
		p.empty = nil
	}
	if p.fault <= 0 {
		return
	}
	left := time.Duration(p.battery*100/p.fault*float64(time.Minute)) + time.Millisecond
	p.empty = p.d.Clock().AfterFunc(left, func() {
		p.mu.Lock()
		p.empty = nil
		p.drain()
		flat := p.fault > 0 && p.battery <= 0
		if !flat {
			p.armEmpty()
		}
		done := p.onEmpty
		p.mu.Unlock()
		p.pollStates()
		if flat {
			p.d.Logf(device.LevelWarning, "the battery is empty; the device turns off")
			p.d.PowerOff()
			if done != nil {
				done()
			}
		}
	})
}

// value computes a state's value; it reports false when the source is not running.
func (p *Provider) value(id int) (int32, bool) {
	now := p.d.Clock().Now()
	switch id {
	case StateBattery:
		p.drain()
		if p.battery < BatteryLow {
			return 1, true
		}
		return 0, true
	case StateConnectors:
		if p.cfg.Wearer.Contact(now) {
			return 1, true
		}
		return 0, true
	}
	if p.cfg.Detectors == nil || !p.cfg.Detectors.AccRunning() {
		return 0, false
	}
	return p.values[id], true
}

func stateID(req *resource.Request) (int, *resource.Response) {
	id := req.Arg(0).Int()
	if id < 0 || id >= numStates {
		r := resource.Errorf(resource.StatusNotFound, "no state %d; states are 0 Movement, 1 Battery status, 2 Connectors, 3 Double-tap, 4 Tap, 5 Free-fall", id)
		return 0, &r
	}
	return int(id), nil
}

func notRunning(id int) resource.Response {
	return resource.Errorf(resource.StatusServiceUnavailable, "state %d (%s) is detected from the accelerometer, which is not running; subscribe to /Meas/Acc/{SampleRate} or an IMU stream first", id, stateNames[id])
}

func (p *Provider) getState(req *resource.Request) resource.Response {
	id, errResp := stateID(req)
	if errResp != nil {
		return *errResp
	}
	p.catchUp(id)
	p.mu.Lock()
	v, ok := p.value(id)
	p.mu.Unlock()
	if !ok {
		return notRunning(id)
	}
	return resource.OK(v)
}

// detected reports whether state id comes from the accelerometer's detectors.
func detected(id int) bool { return id != StateBattery && id != StateConnectors }

// catchUp brings the detectors up to now before state id is read; p.mu is
// not held.
func (p *Provider) catchUp(id int) {
	if detected(id) && p.cfg.Detectors != nil {
		p.cfg.Detectors.CatchUp()
	}
}

// watch counts whether state id's topic has subscribers, for the detectors;
// p.mu is held. It returns the change to pass to Watch once p.mu is released.
func (p *Provider) watch(id int) int {
	on := p.topics[id] != nil
	if !detected(id) || on == p.watched[id] {
		return 0
	}
	p.watched[id] = on
	if on {
		return 1
	}
	return -1
}

// tellWatch passes a change from watch to the detectors; p.mu is not held.
func (p *Provider) tellWatch(delta int) {
	if delta != 0 && p.cfg.Detectors != nil {
		p.cfg.Detectors.Watch(delta)
	}
}

// Detected records a state the accelerometer's detectors found (movement,
// taps, free fall) and notifies its subscribers. Taps and double taps notify
// every time; the others only on change.
func (p *Provider) Detected(id int, value int32, ts uint32) {
	p.mu.Lock()
	changed := p.values[id] != value || id == StateTap
	p.values[id] = value
	t := p.topics[id]
	p.mu.Unlock()
	if changed && t != nil {
		t.Publish(&StateChange{Timestamp: ts, StateID: resource.Pair{Value: id, Name: stateNames[id]}, NewState: value})
	}
}

// pollStates notifies changes of battery and connectors.
func (p *Provider) pollStates() {
	for _, id := range []int{StateBattery, StateConnectors} {
		p.mu.Lock()
		old := p.values[id]
		v, _ := p.value(id)
		p.values[id] = v
		t := p.topics[id]
		p.mu.Unlock()
		if v != old && t != nil {
			t.Publish(&StateChange{Timestamp: p.d.RelativeTime(), StateID: resource.Pair{Value: id, Name: stateNames[id]}, NewState: v})
		}
	}
}

// schedulePoll keeps polling while battery or connectors have subscribers; p.mu is held.
func (p *Provider) schedulePoll() {
	if p.poll != nil || p.topics[StateBattery] == nil && p.topics[StateConnectors] == nil {
		return
	}
	p.poll = p.d.Clock().AfterFunc(PollInterval, func() {
		p.pollStates()
		p.mu.Lock()
		p.poll = nil
		p.schedulePoll()
		p.mu.Unlock()
	})
}

type stateSource struct{ p *Provider }

func (s stateSource) Subscribe(t *resource.Topic, req *resource.Request) resource.Response {
	id, errResp := stateID(req)
	if errResp != nil {
		return *errResp
	}
	p := s.p
	p.catchUp(id)
	p.mu.Lock()
	v, ok := p.value(id)
	if !ok {
		p.mu.Unlock()
		return notRunning(id)
	}
	if id == StateBattery || id == StateConnectors {
		p.values[id] = v
	}
	p.topics[id] = t
	p.schedulePoll()
	delta := p.watch(id)
	p.mu.Unlock()
	p.tellWatch(delta)
	return resource.OK(nil)
}

func (s stateSource) Unsubscribed(t *resource.Topic) {
	p := s.p
	p.mu.Lock()
	id := int(t.Args()[0].Int())
	if t.Subscribers() == 0 && p.topics[id] == t {
		p.topics[id] = nil
	}
	if p.topics[StateBattery] == nil && p.topics[StateConnectors] == nil && p.poll != nil {
		p.poll.Stop()
		p.poll = nil
	}
	delta := p.watch(id)
	p.mu.Unlock()
	p.tellWatch(delta)
}

// Reset forgets detected states and the heap test; the battery keeps its charge.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drain()
	p.values = [numStates]int32{}
	if p.poll != nil {
		p.poll.Stop()
		p.poll = nil
	}
	if p.wake != nil {
		p.wake.Stop()
		p.wake = nil
	}
	p.heapArmed = false
	p.d.Hub().ResetPeak()
}

// PowerOff starts watching for the wake-up source.
func (p *Provider) PowerOff() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drain()
	if p.poll != nil {
		p.poll.Stop()
		p.poll = nil
	}
	p.wasOn = p.cfg.Wearer.Contact(p.d.Clock().Now())
	p.watchWake()
}

// watchWake looks for the wake-up source every PollInterval; p.mu is held.
func (p *Provider) watchWake() {
	p.wake = p.d.Clock().AfterFunc(PollInterval, func() {
		now := p.d.Clock().Now()
		wake := false
		src := uint8(1)
		if p.cfg.FrontEnd != nil {
			src = p.cfg.FrontEnd.WakeUp()
		}
		p.mu.Lock()
		p.drain()
		if p.battery <= 0 && p.fault > 0 { // an empty battery wakes nothing
			p.watchWake()
			p.mu.Unlock()
			return
		}
		if src == 1 {
			on := p.cfg.Wearer.Contact(now)
			wake = on && !p.wasOn // the electrodes touch the skin again
			p.wasOn = on
		} else {
			wake = p.cfg.Wearer.At(now).Moving
		}
		if !wake {
			p.watchWake()
		}
		p.mu.Unlock()
		if wake {
			p.d.Wake()
		}
	})
}
