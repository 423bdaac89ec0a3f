package device

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"senseboard/resource"
)

// Event is a lifecycle event of the device.
type Event uint8

// The lifecycle events.
const (
	EventReset      Event = iota + 1 // reset into Application (also after a wake-up)
	EventPowerOff                    // turned off
	EventUpdateMode                  // reset into firmware update mode
	EventClose                       // the device closed
	EventBusy                        // requests that timed out exhausted the request pool
)

func (e Event) String() string {
	switch e {
	case EventReset:
		return "reset"
	case EventPowerOff:
		return "power off"
	case EventUpdateMode:
		return "update mode"
	case EventClose:
		return "close"
	case EventBusy:
		return "busy"
	}
	return fmt.Sprintf("Event(%d)", uint8(e))
}

// OnLifecycle calls f after each lifecycle event, until the returned function
// is called. Transports use it to drop their links when the device turns off.
func (d *Core) OnLifecycle(f func(Event)) (cancel func()) {
	d.lifeMu.Lock()
	defer d.lifeMu.Unlock()
	d.lifecycle = append(d.lifecycle, f)
	i := len(d.lifecycle) - 1
	return func() {
		d.lifeMu.Lock()
		defer d.lifeMu.Unlock()
		d.lifecycle[i] = nil
	}
}

func (d *Core) emit(e Event) {
	d.lifeMu.Lock()
	fs := slices.Clone(d.lifecycle)
	d.lifeMu.Unlock()
	for _, f := range fs {
		if f != nil {
			f(e)
		}
	}
}

// Mode returns the current mode.
func (d *Core) Mode() Mode { return Mode(d.mode.Load()) }

// NextMode returns the mode a pending switch leads to.
func (d *Core) NextMode() (Mode, bool) {
	n := Mode(d.next.Load())
	return n, n != 0
}

// SwitchDelay is how long after a PUT /System/Mode the switch happens, so
// that the request is answered first.
const SwitchDelay = 20 * time.Millisecond

// SwitchMode schedules a switch to m after SwitchDelay of device time:
// FullPowerOff turns the device off, Application resets it (also when it is
// already there), FwUpdateMode resets it into update mode.
func (d *Core) SwitchMode(m Mode) {
	d.switchMu.Lock()
	defer d.switchMu.Unlock()
	if d.pending != nil {
		d.pending.Stop()
	}
	d.next.Store(uint32(m))
	d.pending = d.clock.AfterFunc(SwitchDelay, func() {
		d.switchMu.Lock()
		if Mode(d.next.Load()) != m {
			d.switchMu.Unlock()
			return
		}
		d.next.Store(0)
		d.pending = nil
		d.switchMu.Unlock()
		switch m {
		case ModeFullPowerOff:
			d.PowerOff()
		case ModeFwUpdate:
			d.reset(ModeFwUpdate, EventUpdateMode)
		default:
			d.Reset()
		}
	})
}

// EnterUpdateMode resets the device into firmware update mode at once, as
// SwitchMode(ModeFwUpdate) does after its delay.
func (d *Core) EnterUpdateMode() { d.reset(ModeFwUpdate, EventUpdateMode) }

// Reset resets the device into Application mode at once: every subscription
// ends, volatile state returns to its power-on values and relative time
// restarts; non-volatile memory is kept.
func (d *Core) Reset() { d.reset(ModeApplication, EventReset) }

func (d *Core) reset(to Mode, e Event) {
	d.mu.Lock()
	d.mode.Store(uint32(to))
	d.busy.Store(false)
	d.timedOut.Store(0)
	d.hub.EndAll(resource.EndReset)
	d.resetAt.Store(int64(d.clock.Now()))
	for _, p := range d.providers {
		if r, ok := p.(Resetter); ok {
			r.Reset()
		}
	}
	d.mu.Unlock()
	d.Logf(LevelInfo, "reset into %s", to)
	d.emit(e)
}

// RestartClock restarts relative time from 0 now, as the clock does at a
// wake-up, without a reset: subscriptions go on, and their timestamps
// count from now. The time service's UTC is its own (timesvc).
func (d *Core) RestartClock() {
	d.resetAt.Store(int64(d.clock.Now()))
	d.Logf(LevelWarning, "the clock restarted")
}

// PowerOff turns the device off at once (FullPowerOff): every subscription
// ends and nothing answers until Wake.
func (d *Core) PowerOff() {
	d.mu.Lock()
	if d.Mode() == ModeFullPowerOff {
		d.mu.Unlock()
		return
	}
	d.mode.Store(uint32(ModeFullPowerOff))
	d.hub.EndAll(resource.EndPowerOff)
	for _, p := range d.providers {
		if o, ok := p.(PowerOffer); ok {
			o.PowerOff()
		}
	}
	d.mu.Unlock()
	d.emit(EventPowerOff)
}

// Wake wakes the device from FullPowerOff, as its wake-up source does: it
// boots into Application mode like a reset. It reports whether the device was off.
func (d *Core) Wake() bool {
	if d.Mode() != ModeFullPowerOff {
		return false
	}
	d.reset(ModeApplication, EventReset)
	return true
}

// Close ends every subscription and releases the providers' resources,
// then closes the device's own clock, if Config gave it none (it waits for
// the clock's call under way: not to be called from one).
func (d *Core) Close() error {
	d.switchMu.Lock()
	if d.pending != nil {
		d.pending.Stop()
		d.pending = nil
	}
	d.switchMu.Unlock()
	d.hub.EndAll(resource.EndPowerOff)
	var errs []error
	for _, p := range d.providers {
		if c, ok := p.(Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	d.emit(EventClose)
	if d.ownClock != nil {
		d.ownClock.Close()
	}
	if len(errs) > 0 {
		return fmt.Errorf("close device %s: %v", d.Serial(), errs)
	}
	return nil
}

// SetHeapTest sets the function that arms the heap sufficiency test (the
// heap service).
func (d *Core) SetHeapTest(arm func(minFree uint32)) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	d.heapTest = arm
}

// ArmHeapTest arms the heap sufficiency test, as an app does: from now on the
// test fails if free heap drops below minFree bytes, and passes otherwise.
// It reports false when the device has no heap service.
func (d *Core) ArmHeapTest(minFree uint32) bool {
	d.logMu.RLock()
	arm := d.heapTest
	d.logMu.RUnlock()
	if arm == nil {
		return false
	}
	arm(minFree)
	return true
}

// Level is the priority of a debug message.
type Level uint8

// The debug levels in decreasing priority.
const (
	LevelFatal Level = iota
	LevelError
	LevelWarning
	LevelInfo
	LevelVerbose
)

var levelNames = [...]string{"Fatal", "Error", "Warning", "Info", "Verbose"}

// String returns the level's name, for example Warning.
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// ParseLevel parses a level name in any case.
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if strings.EqualFold(s, n) {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("unknown debug level %q; allowed: fatal, error, warning, info, verbose", s)
}

// Group is a group of debug messages.
type Group uint8

// The message groups.
const (
	GroupSystem Group = iota + 1 // the device's providers and drivers
	GroupUser                    // apps
)

// SetLogger sets where debug messages go (the debug service).
func (d *Core) SetLogger(f func(group Group, level Level, msg string)) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	d.log = f
}

// Log produces a debug message of group at level.
func (d *Core) Log(group Group, level Level, msg string) {
	d.logMu.RLock()
	f := d.log
	d.logMu.RUnlock()
	if f != nil {
		f(group, level, msg)
	}
}

// Logf produces a system message.
func (d *Core) Logf(level Level, format string, args ...any) {
	d.Log(GroupSystem, level, fmt.Sprintf(format, args...))
}
