package senseboard

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/fault"
)

// Faults carries out a device's field faults (package fault names them;
// docs/faults.md says what each does) and keeps their ground truth: one
// record per fault, with its parameters, how it came about, and its start
// and end in the device's relative time and UTC. Each fault is carried out
// by the layer where it happens on the hardware: the subscription hub
// (stall), the radio (drop, stuck, interference, dfu's identity), the
// device core (busy, dfu, the clock), the providers (firsthr, battery,
// time) and the phone (phoneoff, through the phone given to SetPhone).
// All its timers run on the device's clock.
type Faults struct {
	d     *Device
	clk   clock.Clock
	start time.Duration // the clock's reading when the device started

	mu       sync.Mutex
	recs     []*fault.Record
	running  map[int]*running
	watchers map[*watcher]struct{}
	phone    func(d time.Duration, on func()) error // turns the phone's Bluetooth off (SetPhone)
	sched    *fault.Schedule
	pending  clock.Timer // the plan's next fault
	entering bool        // the controller itself puts the device in update mode
	closed   bool
	cancel   func() // of the lifecycle watch
}

// running is a fault under way.
type running struct {
	rec   *fault.Record
	stop  func()      // undoes the fault when it ends other than by itself; nil when nothing is to undo
	timer clock.Timer // of its For
	ended bool        // ended while it was being applied
}

type watcher struct{ f func(fault.Record) }

// newFaults starts the controller of d's faults, with plan on the device's
// timeline (drawn from seed).
func newFaults(d *Device, c clock.Clock, plan fault.Plan, seed uint64) *Faults {
	f := &Faults{d: d, clk: c, start: c.Now(), running: map[int]*running{}, watchers: map[*watcher]struct{}{}}
	f.cancel = d.Core.OnLifecycle(f.lifecycle)
	if len(plan) > 0 {
		f.sched = plan.Schedule(seed)
		f.mu.Lock()
		f.armPlan()
		f.mu.Unlock()
	}
	return f
}

// armPlan sets the timer of the plan's next fault; f.mu is held.
func (f *Faults) armPlan() {
	o, ok := f.sched.Next()
	if !ok || f.closed {
		return
	}
	f.pending = clock.At(f.clk, f.start+o.At, func() {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return
		}
		f.armPlan()
		f.mu.Unlock()
		if _, err := f.inject(o.Fault, fault.FromScenario); err != nil {
			f.d.Core.Logf(device.LevelWarning, "fault plan: %v", err)
		}
	})
}

// SetPhone gives the phone that phoneoff faults turn off (the bridge's of
// the device's program, phone.Phone.BluetoothOff): off turns its Bluetooth
// off, back on after d, and then calls on. Without one (nil) a phoneoff has
// no effect.
func (f *Faults) SetPhone(p func(d time.Duration, on func()) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phone = p
}

// Inject starts a fault now; the fault is checked (fault.Fault.Check). It
// returns the fault's record, as List will show it.
func (f *Faults) Inject(flt fault.Fault) (fault.Record, error) {
	return f.inject(flt, fault.FromAPI)
}

// InjectJSON starts a fault given as JSON ({"fault": "stall", ...}).
func (f *Faults) InjectJSON(data []byte) (fault.Record, error) {
	flt, err := fault.Parse(data)
	if err != nil {
		return fault.Record{}, err
	}
	return f.Inject(flt)
}

func (f *Faults) inject(flt fault.Fault, origin string) (fault.Record, error) {
	if err := flt.Check(); err != nil {
		return fault.Record{}, err
	}
	if flt.Kind == fault.Interference && !f.d.Profile().BLE.Airtime.Enabled {
		return fault.Record{}, fmt.Errorf("%w: interference: the device's throughput model (profile ble.airtime) is off; there are no connection events to lose", fault.ErrInvalid)
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return fault.Record{}, fmt.Errorf("device %s is closed", f.d.Serial())
	}
	rec := &fault.Record{ID: len(f.recs) + 1, Device: f.d.Serial(), Fault: flt, Start: f.stamp(), Origin: origin}
	f.recs = append(f.recs, rec)
	r := &running{rec: rec}
	f.running[rec.ID] = r
	started := *rec
	f.mu.Unlock()
	f.tell(started)

	stop := f.apply(rec.ID, flt, origin == fault.FromDevice)

	f.mu.Lock()
	if r.ended {
		f.mu.Unlock()
		return f.record(rec.ID), nil
	}
	r.stop = stop
	if flt.For > 0 && flt.Kind != fault.PhoneOff { // the phone times its own
		id := rec.ID
		r.timer = f.clk.AfterFunc(flt.For, func() { f.end(id, fault.EndedFor) })
	}
	out := *rec
	f.mu.Unlock()
	return out, nil
}

// apply carries out a fault in its layer and returns what undoes it; the
// layer may end it at once (f.end) before apply returns. already says the
// device is in the fault's state by itself (update mode, busy).
func (f *Faults) apply(id int, flt fault.Fault, already bool) func() {
	d := f.d
	end := func(by string) func() { return func() { f.end(id, by) } }
	switch flt.Kind {
	case fault.Stall:
		prefix := d.URIPrefix()
		st := d.Hub().Stall(func(uri string) bool {
			return fault.Matches(flt.Path, strings.TrimPrefix(uri, prefix))
		}, end(fault.EndedResubscribed))
		return func() { st.End() }
	case fault.Drop:
		if !d.Radio.Drop(flt.Delay, func(bool) { f.end(id, fault.EndedAdvertising) }) {
			f.end(id, fault.EndedNoEffect)
		}
		return nil
	case fault.Stuck:
		d.Radio.Stick(flt.Mode == fault.Refuse, end(fault.EndedPhoneOff))
		return func() { d.Radio.Unstick() }
	case fault.Busy:
		d.SetBusy(true)
		return func() { d.Reset() } // its end stands for a power cycle
	case fault.DFU:
		if !already {
			f.mu.Lock()
			f.entering = true
			f.mu.Unlock()
			d.EnterUpdateMode()
			f.mu.Lock()
			f.entering = false
			f.mu.Unlock()
		}
		return func() { d.Reset() } // the update timeout, or a power cycle
	case fault.ClockReset:
		utc, was := d.Time.UTC(), d.Time.IsSet()
		at := f.clk.Now()
		d.Time.ClockReset(flt.Offset)
		d.Time.WhenSet(end(fault.EndedTimeSet))
		return func() {
			if was { // the time set again, as the phone's app sets it
				d.Time.SetUTC(utc + d.Local(f.clk.Now()-at).Microseconds())
			}
		}
	case fault.FirstHR:
		d.HR.SetFirst(float32(flt.Value))
		return func() { d.HR.SetFirst(0) }
	case fault.Interference:
		if err := d.Radio.SetInterference(flt.Share, flt.HideGap); err != nil {
			f.end(id, fault.EndedNoEffect)
			return nil
		}
		return func() { d.Radio.EndInterference() }
	case fault.Battery:
		d.System.Drain(flt.Rate, nil)
		return func() { d.System.Charge() }
	case fault.PhoneOff:
		f.mu.Lock()
		ph := f.phone
		f.mu.Unlock()
		if ph == nil || ph(flt.For, end(fault.EndedFor)) != nil {
			f.end(id, fault.EndedNoEffect)
		}
		return nil
	}
	return nil
}

// End ends an active fault now, as a client asks it to: where the fault
// stands for a state the device stays in (busy, dfu), its end stands for
// a power cycle (docs/faults.md). It returns the fault's record.
func (f *Faults) End(id int) (fault.Record, error) {
	f.mu.Lock()
	if id < 1 || id > len(f.recs) {
		f.mu.Unlock()
		return fault.Record{}, fmt.Errorf("fault %d of device %s: %w", id, f.d.Serial(), fault.ErrNoFault)
	}
	rec := f.recs[id-1]
	if rec.End != nil {
		out := *rec
		f.mu.Unlock()
		return out, fmt.Errorf("fault %d (%s) of device %s: %w by %s", id, rec.Fault.Kind, f.d.Serial(), fault.ErrEnded, rec.EndedBy)
	}
	f.mu.Unlock()
	f.end(id, fault.EndedDeleted)
	return f.record(id), nil
}

// end ends a fault, once: it records the end, stops its timer and undoes
// it, unless it ended by itself (the layer told: a reset, a new
// subscription, the time set, advertising again, the phone back on).
func (f *Faults) end(id int, by string) {
	f.mu.Lock()
	r := f.running[id]
	if r == nil {
		f.mu.Unlock()
		return
	}
	delete(f.running, id)
	r.ended = true
	end := f.stamp()
	r.rec.End, r.rec.EndedBy = &end, by
	if r.timer != nil {
		r.timer.Stop()
	}
	stop := r.stop
	rec := *r.rec
	f.mu.Unlock()
	if stop != nil && (by == fault.EndedFor || by == fault.EndedDeleted || by == fault.EndedClosed) {
		stop()
	}
	f.tell(rec)
}

// lifecycle hears the device's lifecycle: a reset ends the faults that a
// reset ends (busy), and the device brings faults on itself: update mode
// by PUT /System/Mode 12, an exhausted request pool by requests that timed
// out. The device takes a mode under its lock and tells of it after, so a
// reset and an update mode that cross may be told in the other order: the
// mode the device is in says which came last. A reset told after an
// update mode that overtook it leaves that update mode's fault running,
// and an update mode told after a reset that overtook it brings none.
func (f *Faults) lifecycle(e device.Event) {
	updating := f.d.Core.Mode() == device.ModeFwUpdate
	switch e {
	case device.EventReset:
		kinds := []fault.Kind{fault.Busy, fault.DFU}
		if updating {
			kinds = kinds[:1]
		}
		for _, id := range f.active(kinds...) {
			f.end(id, fault.EndedReset)
		}
	case device.EventUpdateMode:
		if !updating {
			return
		}
		f.mu.Lock()
		ours := f.entering
		f.mu.Unlock()
		if !ours {
			f.inject(fault.Fault{Kind: fault.DFU, For: fault.UpdateTimeout}, fault.FromDevice)
		}
	case device.EventBusy:
		if len(f.active(fault.Busy)) == 0 {
			f.inject(fault.Fault{Kind: fault.Busy}, fault.FromDevice)
		}
	}
}

// active lists the ids of the active faults of the kinds.
func (f *Faults) active(kinds ...fault.Kind) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int
	for id, r := range f.running {
		if slices.Contains(kinds, r.rec.Fault.Kind) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// stamp is now as the device tells it; f.mu may be held (it takes the time
// service's lock only).
func (f *Faults) stamp() fault.Stamp {
	return fault.Stamp{MS: f.d.RelativeTime(), UTC: time.UnixMicro(f.d.Time.UTC()).UTC()}
}

func (f *Faults) record(id int) fault.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.recs[id-1]
}

// List returns the ground truth: every fault of the device, active and
// past, in the order they started.
func (f *Faults) List() []fault.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]fault.Record, len(f.recs))
	for i, r := range f.recs {
		out[i] = *r
	}
	return out
}

// Watch calls w with a fault's record when it starts and when it ends,
// until the returned function is called. w must not block.
func (f *Faults) Watch(w func(fault.Record)) (stop func()) {
	k := &watcher{w}
	f.mu.Lock()
	f.watchers[k] = struct{}{}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.watchers, k)
		f.mu.Unlock()
	}
}

func (f *Faults) tell(rec fault.Record) {
	f.mu.Lock()
	ws := make([]*watcher, 0, len(f.watchers))
	for w := range f.watchers {
		ws = append(ws, w)
	}
	f.mu.Unlock()
	for _, w := range ws {
		w.f(rec)
	}
}

// close stops the plan and the faults' timers; the faults that last are
// left as they are in the ground truth (end null).
func (f *Faults) close() {
	f.mu.Lock()
	f.closed = true
	if f.pending != nil {
		f.pending.Stop()
	}
	for _, r := range f.running {
		if r.timer != nil {
			r.timer.Stop()
		}
	}
	f.mu.Unlock()
	if f.cancel != nil {
		f.cancel()
	}
}

// LogTo appends the ground truth to the file at path as JSON Lines from
// now: a fault's record when it starts and again when it ends (the last
// line of an id is its record; fault.ReadJSONL reads it so). The file is
// made at the first fault. The returned function stops the log and closes
// the file.
func (f *Faults) LogTo(path string) (stop func() error) {
	var mu sync.Mutex
	var file *os.File
	var err error
	unwatch := f.Watch(func(rec fault.Record) {
		mu.Lock()
		defer mu.Unlock()
		if file == nil && err == nil {
			file, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				f.d.Core.Logf(device.LevelError, "fault log: %v", err)
			}
		}
		if file != nil {
			file.Write(append(rec.AppendJSON(nil), '\n'))
		}
	})
	return func() error {
		unwatch()
		mu.Lock()
		defer mu.Unlock()
		if file == nil {
			return err
		}
		return file.Close()
	}
}

// FaultLog is the name of the file, in a fleet device's state directory,
// of its faults' ground truth (Faults.LogTo).
const FaultLog = "faults.jsonl"

// closerFunc is a function that closes something.
type closerFunc func() error

func (c closerFunc) Close() error { return c() }
