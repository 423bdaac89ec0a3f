// Package world owns the model of the person wearing a device: a seeded,
// scenario-driven timeline of activity (rest, walk, run, with a step rhythm),
// posture and orientation, heart rate that follows activity with natural
// variability and the beats it produces, respiration, skin temperature,
// electrode contact, taps, double taps, free falls and shakes.
//
// Every quantity is a deterministic function of the seed, the scenario, the
// events injected at run time and the time asked for: the slow quantities
// come from a control track computed at 20 ms steps and interpolated, the
// fast ones (step waveforms, taps, impacts) from closed forms, and
// randomness from counter-based noise. Two devices with the same seed and
// scenario see the same wearer, whatever they ask in whatever order.
//
// Times are readings of the device clock; the scenario starts at the origin
// given to New.
package world

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/noise"
)

// Tick is the step of the control track: its quantities change over a
// second or more (the fastest, the cadence, over a second; a posture turns
// at 1.5 rad/s), so that a wearer's motion and heart follow them the same
// between ticks 20 ms apart as 10 ms apart, for half the work and memory.
const Tick = 20 * time.Millisecond

// G is standard gravity, m/s^2.
const G = 9.80665

// trackLen is how many ticks of control track the model keeps, the latest
// computed and those before it, in a ring; keepBeats is how much of its
// beats it keeps. Streams read the track at the times of their samples, at
// most a batch (a quarter of a second, the heart rate's) behind the latest
// batch's end, and the ECG's beats make the track run up to BeatsAhead past
// it (a beat's interval comes from the track at the beat before): 0.6 s,
// which the ring's 0.78 s holds with a margin (4 KiB a wearer).
// An older time is computed again, from the latest checkpoint before it (a
// tick kept every cpEvery, the latest cpKeep of them) or from the start:
// the track is a function of the seed, the scenario and the injected
// events, so it comes out the same.
const (
	trackLen  = int64(780 * time.Millisecond / Tick)
	keepBeats = 5 * time.Second
	maxBeats  = 16 // how many beats gather before those older than keepBeats are dropped
	cpEvery   = int64(10 * time.Second / Tick)
	cpKeep    = 6
)

// BeatsAhead is how far past the samples of a batch the ECG asks for beats:
// the earliest wave of a beat, a P wave, ends within 0.32 s before its R
// peak.
const BeatsAhead = 350 * time.Millisecond

// checkpoint is a tick kept to compute the track again from, with the
// slow processes that carry on from it.
type checkpoint struct {
	i int64
	k tick
	d drift
}

// Earth's magnetic field in the world frame (east, north, up), microtesla: a
// mid-latitude field of 50 uT dipping 70 degrees.
var earthField = Vec3{0, 17.1, -47.0}

// noise streams
const (
	streamWander uint64 = iota + 1
	streamYaw
	streamRR
	streamShake
)

// tick is the wearer's slow state at one step of the control track: what
// the readers of the track interpolate between two ticks.
type tick struct {
	intensity float64
	cadence   float64 // steps per second
	phase     float64 // steps since the start
	hr        float64 // bpm
	resp      float64 // breaths since the start
	temp      float64 // skin temperature, K
	heading   float64 // radians from north, clockwise
	orient    Quat
	omega     Vec3 // slow angular velocity, device frame, rad/s
}

// drift is the state of the random processes of the track at its latest
// tick: each tick's comes from the previous one's, and no reader needs an
// older one.
type drift struct {
	wander  float64 // slow heart-rate wander, bpm
	yawRate float64 // rad/s
}

// Beat is one heartbeat.
type Beat struct {
	N      int64         // beat number since the scenario started
	At     time.Duration // device clock reading of the R peak
	RR     time.Duration // interval since the previous beat
	Kind   BeatKind
	Rhythm Rhythm

	sinusRR float64 // for an ectopic beat, the sinus interval it interrupted, s
}

// State is the wearer's slow state at a moment.
type State struct {
	Activity  Activity
	Posture   Posture
	Intensity float64 // 0 at rest, 1 walking, 2.5 running
	Cadence   float64 // steps per second
	StepPhase float64 // steps since the start
	HeartRate float64 // bpm
	RespPhase float64 // breaths since the start
	RespRate  float64 // breaths per second
	SkinTemp  float64 // K
	Ambient   float64 // K
	Contact   bool    // electrodes connected
	Moving    bool    // moving enough to be felt: walking, running, a tap, a fall, a shake
	Orient    Quat
}

// Wearer is the model of one wearer.
type Wearer struct {
	// What every read takes first, in one cache line: a fleet's wearers
	// meet their reads cold. mu guards the fields it marks.
	mu         sync.Mutex
	origin     time.Duration
	ticks      *[trackLen]tick // mu; a ring: tick i at ticks[i%trackLen]
	lo, hi     int64           // mu; the ticks kept, lo to hi; none when hi < lo
	kinds      uint32          // mu; bit k set: the scenario or an injection has an event of kind k
	sc         *Scenario
	injections atomic.Uint64 // how many events were injected

	seed          uint64
	wanderN, yawN noise.Stream  // of the track, per tick
	length        time.Duration // of the scenario's segments
	injected      []Event       // mu; sorted by At, relative to the origin
	drift         drift         // mu; of tick hi
	cps           []checkpoint  // mu; by index
	beats         []Beat        // mu
	turn          turn          // mu
}

// turn remembers the latest tick's turn toward the posture's orientation: a
// wearer who keeps still keeps the posture and the heading, and the
// orientation settles, so each tick repeats the previous one's inputs and
// takes its result instead of computing it again.
type turn struct {
	posture  Posture
	heading  float64
	goal     Quat // postureOrient(posture, heading); valid when goalOK
	goalOK   bool
	from, to Quat // the orientation before and after the step toward goal
	omega    Vec3 // the angular velocity of the step
	stepOK   bool
}

// sameQuat reports whether q and r have the same bits.
func sameQuat(q, r Quat) bool {
	return math.Float64bits(q.W) == math.Float64bits(r.W) && math.Float64bits(q.X) == math.Float64bits(r.X) &&
		math.Float64bits(q.Y) == math.Float64bits(r.Y) && math.Float64bits(q.Z) == math.Float64bits(r.Z)
}

// defaultScenario is the scenario of the wearers given none, one for all:
// a fleet's wearers read it at every tick of their tracks, from one copy
// the processor's caches hold.
var defaultScenario = DefaultScenario()

// New returns the wearer of a scenario (the default scenario when sc is nil)
// whose time 0 is the clock reading origin. The wearer reads the scenario
// and does not change it.
func New(seed uint64, sc *Scenario, origin time.Duration) *Wearer {
	if sc == nil {
		sc = defaultScenario
	}
	w := &Wearer{seed: seed, sc: sc, origin: origin, length: sc.Length(), hi: -1,
		wanderN: noise.NewStream(seed, streamWander), yawN: noise.NewStream(seed, streamYaw)}
	for _, e := range sc.Events {
		w.kinds |= 1 << e.Kind
	}
	return w
}

// Scenario returns the wearer's scenario, to be read only: the wearers
// given no scenario share one.
func (w *Wearer) Scenario() *Scenario { return w.sc }

// Inject adds an event at run time; e.At is a clock reading (not before the
// latest time asked for matters: the model recomputes from e.At).
func (w *Wearer) Inject(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e.At -= w.origin
	if e.At < 0 {
		e.At = 0
	}
	i, _ := slices.BinarySearchFunc(w.injected, e.At, func(x Event, t time.Duration) int {
		if x.At <= t {
			return -1
		}
		return 1
	})
	w.injected = slices.Insert(w.injected, i, e)
	w.injections.Add(1)
	w.kinds |= 1 << e.Kind
	// forget the ticks and checkpoints at or after the event; they are
	// computed again
	from := int64((e.At + Tick - 1) / Tick)
	for len(w.cps) > 0 && w.cps[len(w.cps)-1].i >= from {
		w.cps = w.cps[:len(w.cps)-1]
	}
	w.hi = w.lo - 1 // the drift of an earlier tick is not kept: from a checkpoint again
	for len(w.beats) > 1 && w.beats[len(w.beats)-1].At-w.origin > e.At {
		w.beats = w.beats[:len(w.beats)-1]
	}
	if len(w.beats) == 1 && w.beats[0].N > 0 && w.beats[0].At-w.origin > e.At {
		w.beats = w.beats[:0] // before the kept beats: from the first beat again
	}
}

// Injections returns how many events have been injected. The beats from
// an injected event's time on are generated again, so a reader that keeps
// beats keeps them only while Injections returns what it did when the
// beats were taken.
func (w *Wearer) Injections() uint64 { return w.injections.Load() }

// activityAt returns the activity, resting heart rate and cadence (steps per
// minute, 0 for the default) at relative time t.
func (w *Wearer) activityAt(t time.Duration) (Activity, float64, float64) {
	act, hr, cad := Rest, w.sc.Start.HeartRate, 0.0
	segStart := time.Duration(0)
	if n := len(w.sc.Segments); n > 0 {
		tt := t
		if w.sc.Loop {
			tt = t % w.length
			segStart = t - tt
		}
		var acc time.Duration
		for i, s := range w.sc.Segments {
			if s.HeartRate > 0 {
				hr = s.HeartRate
			}
			act, cad = s.Activity, s.Cadence
			if tt < acc+s.Duration || i == n-1 {
				segStart += acc
				break
			}
			acc += s.Duration
		}
	}
	// An injected activity lasts until the next segment starts.
	for i := len(w.injected) - 1; i >= 0; i-- {
		e := w.injected[i]
		if e.At > t || e.Kind != SetActivity {
			continue
		}
		if e.At >= segStart {
			act, cad = e.Activity, 0
			if e.HeartRate > 0 {
				hr = e.HeartRate
			}
		}
		break
	}
	return act, hr, cad
}

// eventsIn calls f for each event (scenario, repeated when looping, and
// injected) whose relative time lies in [t0, t1).
func (w *Wearer) eventsIn(t0, t1 time.Duration, f func(Event)) {
	if t1 <= t0 {
		return
	}
	evs := w.sc.Events
	if len(evs) > 0 {
		if !w.sc.Loop || w.length == 0 {
			for _, e := range evs {
				if e.At >= t0 && e.At < t1 {
					f(e)
				}
			}
		} else {
			for k := t0 / w.length; k*w.length < t1; k++ {
				off := k * w.length
				for _, e := range evs {
					if e.At >= w.length {
						continue
					}
					if at := e.At + off; at >= t0 && at < t1 {
						e.At = at
						f(e)
					}
				}
			}
		}
	}
	for _, e := range w.injected {
		if e.At >= t0 && e.At < t1 {
			f(e)
		}
	}
}

// latest returns the latest event of kind at or before relative time t.
func (w *Wearer) latest(kind EventKind, t time.Duration) (Event, bool) {
	if w.kinds&(1<<kind) == 0 {
		return Event{}, false // the common case, asked for every tick
	}
	var best Event
	found := false
	take := func(e Event) {
		if e.Kind == kind && e.At <= t && (!found || e.At >= best.At) {
			best, found = e, true
		}
	}
	if w.sc.Loop && w.length > 0 {
		k := t / w.length
		for _, e := range w.sc.Events {
			if e.At < w.length {
				e.At += k * w.length
				take(e)
				if k > 0 && e.At > t {
					e.At -= w.length
					take(e)
				}
			}
		}
	} else {
		for _, e := range w.sc.Events {
			take(e)
		}
	}
	for _, e := range w.injected {
		take(e)
	}
	return best, found
}

func (w *Wearer) postureAt(t time.Duration) Posture {
	if w.kinds&(1<<SetPosture) == 0 {
		return w.sc.Start.Posture // the common case, asked for every tick
	}
	if e, ok := w.latest(SetPosture, t); ok {
		return e.Posture
	}
	return w.sc.Start.Posture
}

func (w *Wearer) contactAt(t time.Duration) bool {
	if w.kinds&(1<<ContactLoss|1<<Gear) == 0 {
		return w.sc.Start.Gear // the common case, asked for every tick
	}
	if e, ok := w.latest(ContactLoss, t); ok && t < e.At+e.Duration {
		return false
	}
	if e, ok := w.latest(Gear, t); ok {
		return e.On
	}
	return w.sc.Start.Gear
}

func intensityOf(a Activity) float64 {
	switch a {
	case Walk:
		return 1
	case Run:
		return 2.5
	}
	return 0
}

func defaultCadence(a Activity) float64 {
	switch a {
	case Walk:
		return 110
	case Run:
		return 165
	}
	return 0
}

// hrRise is how much heart rate intensity adds, bpm.
func hrRise(i float64) float64 { return 30*min(i, 1) + 36*max(i-1, 0) }

// postureOrient returns the device-to-world rotation of a posture when the
// wearer faces heading (radians clockwise from north). Upright, the device's
// x axis points down, z forward out of the chest and y to the wearer's left.
func postureOrient(p Posture, heading float64) Quat {
	s, c := math.Sincos(heading)
	fwd := Vec3{s, c, 0}
	up := Vec3{0, 0, 1}
	var x, z Vec3
	switch p {
	case Sitting:
		r := 20 * math.Pi / 180
		sr, cr := math.Sincos(r)
		z = fwd.Scale(cr).Add(up.Scale(sr)) // the chest faces a little upward
		x = up.Scale(-cr).Add(fwd.Scale(sr))
	case LyingBack:
		z, x = up, fwd.Scale(-1) // feet point back along the heading
	case LyingFront:
		z, x = up.Scale(-1), fwd.Scale(-1)
	case Table:
		z, x = up, fwd
	default:
		z, x = fwd, up.Scale(-1)
	}
	return FromBasis(x, z.Cross(x), z)
}

const (
	tauIntensity = 3.0   // s
	tauCadence   = 1.0   // s
	tauHRUp      = 20.0  // s
	tauHRDown    = 40.0  // s
	tauWander    = 30.0  // s
	sdWander     = 2.5   // bpm
	tauTemp      = 120.0 // s
	skinTemp     = 306.6 // K at rest with the gear on
	turnRate     = 1.5   // rad/s, posture changes
)

// first computes the state at relative time 0.
func (w *Wearer) first() tick {
	a, hr, cad := w.activityAt(0)
	if cad == 0 {
		cad = defaultCadence(a)
	}
	k := tick{intensity: intensityOf(a), cadence: cad / 60}
	k.hr = hr + hrRise(k.intensity)
	k.temp = w.sc.Start.Ambient
	if w.contactAt(0) {
		k.temp = skinTemp + 0.25*k.intensity
	}
	k.orient = postureOrient(w.postureAt(0), 0)
	return k
}

// next computes tick i into k from tick i-1, p, and steps d from tick
// i-1's drift to tick i's.
func (w *Wearer) next(i int64, p, k *tick, d *drift) {
	const dt = float64(Tick) / float64(time.Second)
	t := time.Duration(i) * Tick
	a, restHR, cad := w.activityAt(t)
	if cad == 0 {
		cad = defaultCadence(a)
	}
	*k = *p
	k.intensity += (intensityOf(a) - p.intensity) * dt / tauIntensity
	target := 0.0
	if a != Rest {
		target = cad / 60
	}
	k.cadence += (target - p.cadence) * dt / tauCadence
	k.phase += k.cadence * dt
	d.wander += -d.wander*dt/tauWander + sdWander*math.Sqrt(2*dt/tauWander)*noise.Normal(w.wanderN.Key(uint64(i)))
	hrT := restHR + hrRise(k.intensity) + d.wander
	tau := tauHRDown
	if hrT > p.hr {
		tau = tauHRUp
	}
	k.hr += (hrT - p.hr) * dt / tau
	k.resp += (0.25 + 0.12*k.intensity) * dt
	tempT := w.sc.Start.Ambient
	if w.contactAt(t) {
		tempT = skinTemp + 0.25*k.intensity
	}
	k.temp += (tempT - p.temp) * dt / tauTemp
	if k.intensity > 0.3 {
		d.yawRate += -d.yawRate*dt/10 + 0.05*math.Sqrt(2*dt/10)*noise.Normal(w.yawN.Key(uint64(i)))
	} else {
		d.yawRate *= 1 - dt
	}
	k.heading = p.heading + d.yawRate*dt
	if !(k.heading >= 0 && k.heading < 2*math.Pi) { // math.Mod returns the others as they are
		k.heading = math.Mod(k.heading, 2*math.Pi)
	}
	tr := &w.turn
	if post := w.postureAt(t); !tr.goalOK || post != tr.posture || math.Float64bits(k.heading) != math.Float64bits(tr.heading) {
		tr.posture, tr.heading, tr.goal, tr.goalOK, tr.stepOK = post, k.heading, postureOrient(post, k.heading), true, false
	}
	if tr.stepOK && sameQuat(p.orient, tr.from) {
		k.orient, k.omega = tr.to, tr.omega
		return
	}
	if ang := Angle(p.orient, tr.goal); ang > 1e-9 {
		k.orient = Slerp(p.orient, tr.goal, math.Min(1, turnRate*dt/ang))
	}
	// angular velocity in the device frame from the change of orientation
	q := p.orient.Conj().Mul(k.orient)
	if q.W < 0 {
		q = Quat{-q.W, -q.X, -q.Y, -q.Z}
	}
	k.omega = Vec3{q.X, q.Y, q.Z}.Scale(2 / dt)
	tr.from, tr.to, tr.omega, tr.stepOK = p.orient, k.orient, k.omega, true
}

// restart starts the track again at the latest checkpoint at or before
// tick index i, or at the start.
func (w *Wearer) restart(i int64) {
	if w.ticks == nil {
		w.ticks = new([trackLen]tick)
	}
	for j := len(w.cps) - 1; j >= 0; j-- {
		if cp := &w.cps[j]; cp.i <= i {
			w.lo, w.hi, w.drift = cp.i, cp.i, cp.d
			w.ticks[cp.i%trackLen] = cp.k
			return
		}
	}
	w.lo, w.hi, w.drift = 0, 0, drift{}
	w.ticks[0] = w.first()
}

// ensure computes the track up to tick index i.
func (w *Wearer) ensure(i int64) {
	if w.hi < w.lo {
		w.restart(i)
	}
	for ; w.hi < i; w.hi++ {
		j := w.hi + 1
		k := &w.ticks[j%trackLen]
		w.next(j, &w.ticks[w.hi%trackLen], k, &w.drift)
		if j-w.lo == trackLen {
			w.lo++ // k took its place
		}
		if j%cpEvery == 0 {
			for len(w.cps) > 0 && w.cps[len(w.cps)-1].i >= j {
				w.cps = w.cps[:len(w.cps)-1]
			}
			if len(w.cps) == cpKeep {
				w.cps = append(w.cps[:0], w.cps[1:]...)
			}
			w.cps = append(w.cps, checkpoint{j, *k, w.drift})
		}
	}
}

// track returns the two ticks around relative time t and the fraction
// between them. The ticks are the track's own, not copies: they hold until
// the track is asked for again.
func (w *Wearer) track(t time.Duration) (*tick, *tick, float64) {
	if t < 0 {
		t = 0
	}
	i := int64(t / Tick)
	if i < w.lo || w.hi < w.lo { // before the ring, or none since an injection
		w.restart(i)
	}
	w.ensure(i + 1)
	f := float64(t%Tick) / float64(Tick)
	return &w.ticks[i%trackLen], &w.ticks[(i+1)%trackLen], f
}

func lerp(a, b, f float64) float64 { return a + (b-a)*f }

// At returns the wearer's slow state at clock reading t.
func (w *Wearer) At(t time.Duration) State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateAt(t - w.origin)
}

func (w *Wearer) stateAt(t time.Duration) State {
	a, b, f := w.track(t)
	act, _, _ := w.activityAt(t)
	in, step, resp := phases(a, b, f)
	s := State{
		Activity:  act,
		Posture:   w.postureAt(t),
		Intensity: in,
		Cadence:   lerp(a.cadence, b.cadence, f),
		StepPhase: step,
		HeartRate: lerp(a.hr, b.hr, f),
		RespPhase: resp,
		SkinTemp:  lerp(a.temp, b.temp, f),
		Ambient:   w.sc.Start.Ambient,
		Contact:   w.contactAt(t),
		Orient:    Nlerp(a.orient, b.orient, f),
	}
	s.RespRate = 0.25 + 0.12*s.Intensity
	s.Moving = s.Intensity > 0.2
	w.eventsIn(t-2*time.Second, t+time.Millisecond, func(e Event) {
		if e.Kind == Tap || e.Kind == DoubleTap || (e.Kind == FreeFall || e.Kind == Shake) && t < e.At+e.Duration+time.Second {
			if t-e.At < time.Second {
				s.Moving = true
			}
		}
	})
	return s
}

// Span is the wearer's slow state at both ends of a stretch of time, as a
// batch of samples interpolates it between them.
type Span struct {
	// Intensity of activity, step phase and breathing phase at the start
	// and at the end, as At gives them.
	Intensity, StepPhase, RespPhase [2]float64
	Contact                         bool // electrode contact at the start
	Steady                          bool // whether contact stays the same throughout
}

// Span returns the wearer's slow state from clock reading t0 to t1.
func (w *Wearer) Span(t0, t1 time.Duration) Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	var s Span
	s.Intensity[0], s.StepPhase[0], s.RespPhase[0] = phases(w.track(t0 - w.origin))
	s.Intensity[1], s.StepPhase[1], s.RespPhase[1] = phases(w.track(t1 - w.origin))
	s.Contact, s.Steady = w.contactSteady(t0, t1)
	return s
}

// phases returns the intensity, step phase and breathing phase a fraction
// f of the way from tick a to tick b: what At and Phases give.
func phases(a, b *tick, f float64) (intensity, stepPhase, respPhase float64) {
	return lerp(a.intensity, b.intensity, f), lerp(a.phase, b.phase, f), lerp(a.resp, b.resp, f)
}

// Contact reports whether the electrodes touch the skin at clock reading t.
func (w *Wearer) Contact(t time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.contactAt(t - w.origin)
}

// contactSteady reports whether electrode contact stays the same from
// clock reading t0 to t1, and what it is at t0.
func (w *Wearer) contactSteady(t0, t1 time.Duration) (on, steady bool) {
	on = w.contactAt(t0 - w.origin)
	steady = on == w.contactAt(t1-w.origin)
	if steady && w.kinds&(1<<Gear|1<<ContactLoss) != 0 {
		w.eventsIn(t0-w.origin, t1-w.origin+1, func(e Event) {
			if e.Kind == Gear || e.Kind == ContactLoss {
				steady = false
			}
		})
	}
	return on, steady
}

// Events returns the momentary events (taps, falls, gear, ...) whose time
// lies in [t0, t1), as clock readings: the ground truth for detectors.
func (w *Wearer) Events(t0, t1 time.Duration) []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Event
	w.eventsIn(t0-w.origin, t1-w.origin, func(e Event) {
		e.At += w.origin
		out = append(out, e)
	})
	slices.SortStableFunc(out, func(a, b Event) int { return int(a.At - b.At) })
	return out
}

// AppendBeats appends the beats whose R peak lies in [t0, t1) to dst.
func (w *Wearer) AppendBeats(dst []Beat, t0, t1 time.Duration) []Beat {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ensureBeats(t0, t1-w.origin)
	for i := w.firstBeat(t0); i < len(w.beats) && w.beats[i].At < t1; i++ {
		dst = append(dst, w.beats[i])
	}
	return dst
}

// NextBeat returns the first beat whose R peak lies at or after clock
// reading t.
func (w *Wearer) NextBeat(t time.Duration) Beat {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ensureBeats(t, t-w.origin)
	return w.beats[w.firstBeat(t)]
}

// firstBeat returns the index of the first kept beat whose R peak lies at
// or after clock reading t.
func (w *Wearer) firstBeat(t time.Duration) int {
	i, _ := slices.BinarySearchFunc(w.beats, t, func(b Beat, t time.Duration) int {
		if b.At < t {
			return -1
		}
		return 1
	})
	return i
}

// ensureBeats generates beats until one lies beyond relative time t,
// keeping those from clock reading from on.
func (w *Wearer) ensureBeats(from, t time.Duration) {
	if len(w.beats) > 0 && w.beats[0].N > 0 && w.beats[0].At > from {
		w.beats = w.beats[:0] // older than those kept: from the first beat again
	}
	if len(w.beats) == 0 {
		a, _, _ := w.track(0)
		first := time.Duration(60 / a.hr * 0.6 * float64(time.Second))
		w.beats = append(w.beats, Beat{N: 0, At: w.origin + first, RR: time.Duration(60 / a.hr * float64(time.Second))})
	}
	for w.beats[len(w.beats)-1].At-w.origin <= t {
		last := w.beats[len(w.beats)-1]
		rel := last.At - w.origin
		a, b, f := w.track(rel)
		hr := lerp(a.hr, b.hr, f)
		resp := lerp(a.resp, b.resp, f)
		// respiratory sinus arrhythmia shortens beats on inspiration; beat
		// to beat variability on top
		rr := 60 / hr * (1 - 0.035*math.Sin(2*math.Pi*resp) + 0.02*noise.Normal(noise.Key(w.seed, streamRR, uint64(last.N+1))))
		rr = math.Max(rr, 0.25)
		if !w.sc.Heart.Healthy() {
			w.beats = append(w.beats, w.nextBeat(last, rr, hr))
			continue
		}
		d := time.Duration(rr * float64(time.Second))
		w.beats = append(w.beats, Beat{N: last.N + 1, At: last.At + d, RR: d})
	}
	if len(w.beats) > maxBeats {
		cut := 0
		for cut < len(w.beats)-2 && w.beats[len(w.beats)-1].At-w.beats[cut].At > keepBeats && w.beats[cut+1].At < from {
			cut++
		}
		w.beats = append(w.beats[:0], w.beats[cut:]...)
	}
}

// Motion is what a body-worn IMU feels at one moment, before sensor noise:
// in the device frame, the specific force (m/s^2; +9.81 on the axis pointing
// up at rest), the angular velocity (rad/s) and the magnetic field (uT).
type Motion struct {
	Force, Rate, Field Vec3
}

// FillMotion computes the motion at clock readings t0, t0+dt, ... into dst.
func (w *Wearer) FillMotion(dst []Motion, t0, dt time.Duration) {
	if len(dst) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r0 := t0 - w.origin
	r1 := r0 + time.Duration(len(dst)-1)*dt
	// the momentary events that can touch this batch
	// (looked for only when there are any: the scenario's list is a
	// cache miss more for each batch of a fleet's devices)
	var evs [8]Event
	ne := 0
	if w.kinds&(1<<Tap|1<<DoubleTap|1<<FreeFall|1<<Shake) != 0 {
		w.eventsIn(r0-4*time.Second, r1+time.Millisecond, func(e Event) {
			switch e.Kind {
			case Tap, DoubleTap, FreeFall, Shake:
				if ne < len(evs) {
					evs[ne] = e
					ne++
				}
			}
		})
	}
	for i := range dst {
		t := r0 + time.Duration(i)*dt
		a, b, f := w.track(t)
		q := Nlerp(a.orient, b.orient, f)
		qc := q.Conj()
		in := lerp(a.intensity, b.intensity, f)
		cad := lerp(a.cadence, b.cadence, f)
		ph := lerp(a.phase, b.phase, f)
		head := a.heading
		m := &dst[i]
		m.Force = qc.Rotate(Vec3{0, 0, G})
		m.Rate = a.omega.Scale(1 - f).Add(b.omega.Scale(f))
		m.Field = qc.Rotate(earthField)
		if in > 0.02 && cad > 0 {
			up := Vec3{0, 0, 1}
			sh, ch := math.Sincos(head)
			fwd := Vec3{sh, ch, 0}
			left := up.Cross(fwd)
			av := 1.6*in + 0.96*in*in
			af := 1.0*in + 0.2*in*in
			al := 0.7*in + 0.1*in*in
			s1, c1 := math.Sincos(2 * math.Pi * ph)
			s2 := math.Sin(4*math.Pi*ph + 0.8)
			sl, cl := math.Sincos(math.Pi * ph)
			aUp := av * (s1 + 0.35*s2)
			if in > 1.2 { // heel strike of running
				fr := ph - math.Floor(ph) - 0.1
				aUp += 4 * (in - 1.2) * math.Exp(-fr*fr/(2*0.02*0.02))
			}
			aFwd := af * (s1*math.Cos(1.2) + c1*math.Sin(1.2))
			aLat := al * sl
			lin := up.Scale(aUp).Add(fwd.Scale(aFwd)).Add(left.Scale(aLat))
			m.Force = m.Force.Add(qc.Rotate(lin))
			// torso sway: yaw and roll at stride rhythm, pitch at step rhythm
			yaw := 0.06 * in * math.Pi * cad * cl
			pitch := 0.02 * in * 2 * math.Pi * cad * c1
			roll := 0.04 * in * math.Pi * cad * math.Cos(math.Pi*ph+0.5)
			wv := up.Scale(yaw).Add(left.Scale(pitch)).Add(fwd.Scale(roll))
			m.Rate = m.Rate.Add(qc.Rotate(wv))
		}
		for j := range ne {
			w.applyEvent(m, evs[j], t, qc)
		}
	}
}

// applyEvent adds a momentary event's effect at relative time t.
func (w *Wearer) applyEvent(m *Motion, e Event, t time.Duration, qc Quat) {
	const (
		tapLen    = 15 * time.Millisecond
		tapGap    = 250 * time.Millisecond
		impactLen = 25 * time.Millisecond
	)
	pulse := func(start, length time.Duration) float64 {
		if t < start || t >= start+length {
			return 0
		}
		return math.Sin(math.Pi * float64(t-start) / float64(length))
	}
	switch e.Kind {
	case Tap, DoubleTap:
		p := pulse(e.At, tapLen)
		if e.Kind == DoubleTap {
			p += pulse(e.At+tapGap, tapLen)
		}
		if p != 0 {
			m.Force = m.Force.Add(Vec3{0, 0, -3.5 * G * p}) // a knock on the face pushes the device back
			m.Rate = m.Rate.Add(Vec3{0.3 * p, -0.2 * p, 0})
		}
	case FreeFall:
		if t >= e.At && t < e.At+e.Duration {
			m.Force = Vec3{}
			m.Rate = m.Rate.Add(Vec3{1.5, -2.0, 0.8})
		} else if p := pulse(e.At+e.Duration, impactLen); p != 0 {
			m.Force = m.Force.Add(qc.Rotate(Vec3{0, 0, 7 * G * p}))
		}
	case Shake:
		if t >= e.At && t < e.At+e.Duration {
			s := float64(t) / float64(time.Second)
			k := noise.Key(w.seed, streamShake, uint64(e.At))
			ph := noise.Uniform(k) * 2 * math.Pi
			m.Force = m.Force.Add(Vec3{
				2 * G * math.Sin(2*math.Pi*6*s+ph),
				1.5 * G * math.Sin(2*math.Pi*7.3*s+1+ph),
				1.8 * G * math.Sin(2*math.Pi*5.1*s+2+ph),
			})
			m.Rate = m.Rate.Add(Vec3{3 * math.Cos(2*math.Pi*6*s+ph), 2 * math.Cos(2*math.Pi*7.3*s+ph), 2.5 * math.Cos(2*math.Pi*5.1*s)})
		}
	}
}
