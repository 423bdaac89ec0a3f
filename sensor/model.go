package sensor

import (
	"math"
	"sync"
	"time"

	"senseboard/noise"
	"senseboard/world"
)

// Sensor noise and resolution of the model, after the parts of this device
// family (an LSM6DS3-class IMU, a magnetometer with 0.15 uT resolution).
const (
	accNoise  = 0.012 // m/s^2 RMS
	gyroNoise = 0.07  // deg/s RMS
	magnNoise = 0.3   // uT RMS
	magnLSB   = 0.15  // uT
	magnLimit = 4900  // uT
	tempNoise = 0.02  // K RMS
	tempLSB   = 0.0625
	ecgEMG    = 0.005 // mV RMS at rest
)

// AccLSB returns the accelerometer's resolution at a range, m/s^2: 0.061 mg
// at 2 g, doubling with the range.
func AccLSB(rangeG int) float64 { return float64(rangeG) * 0.0305e-3 * world.G }

// GyroLSB returns the gyroscope's resolution at a range, deg/s: 8.75 mdps at
// 245 deg/s, doubling with the range up to 70 mdps at 2000 deg/s.
func GyroLSB(rangeDPS int) float64 {
	switch rangeDPS {
	case 245:
		return 0.00875
	case 500:
		return 0.0175
	case 1000:
		return 0.035
	}
	return 0.070
}

// noise streams of the model
const (
	streamAcc uint64 = iota + 100
	streamGyro
	streamMagn
	streamBias
	streamECG
	streamTemp
	streamWander
)

// Model is the sensors of a device worn by a modelled wearer.
type Model struct {
	// what the batches of every stream read first, in one or two cache
	// lines: a fleet's models meet their batches cold
	w                 *world.Wearer
	seed              uint64
	accN, gyroN, ecgN noise.Stream // the per-sample noise of each sensor
	heart             bool         // the scenario's heart is not a healthy sinus rhythm
	noisy             bool         // noise is added to the ECG
	accBias, gyroBias world.Vec3   // m/s^2, deg/s

	beats beatCache

	magnN    noise.Stream
	hardIron world.Vec3 // uT
	tempOff  float64    // K
	noise    ecgNoise   // added ECG noise; off unless the scenario asks
}

// A batch's working buffers are on the stack of the goroutine that asks
// for it, not in the model: a fleet's devices share the goroutines of
// their clock, whose stacks stay in the processor's caches where a
// device's own buffers would not, and the model needs no lock. Batches
// larger than these take buffers from the heap.
const (
	motionBuf = 8 // samples of a motion batch: a notification's at most
	beatBuf   = 8 // beats of an ECG batch: a notification's reach 1.35 s at most besides its own span
)

// drawnBeat is a beat as a batch of the ECG draws it: its R peak and its
// waves, with their T wave scaled to the interval its repolarisation
// spans, less those of no amplitude.
type drawnBeat struct {
	at    time.Duration
	n     int
	waves [5]drawnWave
}

// drawnWave is one wave of a drawnBeat, with the offsets from the R peak
// (seconds) outside which it adds nothing: five widths from its centre, and
// a margin that rounding cannot cross, so that the test of each sample
// against the five widths decides alone, as it did before the span was
// kept.
type drawnWave struct {
	at, width, amp float64
	lo, hi         float64
	r              bool // the R wave, which breathing scales
}

// shapedBeat is a beat as the ECG draws it, before its waves are laid out:
// its R peak, kind and rhythm, and the scale of its T wave.
type shapedBeat struct {
	at     time.Duration
	sq     float64 // the T wave's scale
	kind   world.BeatKind
	rhythm world.Rhythm
}

// shape returns beat b as the ECG draws it, next being the beat after it:
// the T wave moves in and narrows with the square root of the interval
// its repolarisation spans, next's.
func shape(b, next world.Beat) shapedBeat {
	sq := math.Sqrt(math.Min(math.Max(next.RR.Seconds(), 0.25), 2))
	return shapedBeat{at: b.At, sq: sq, kind: b.Kind, rhythm: b.Rhythm}
}

// draw lays out beat b for drawing into db, a zero drawnBeat.
func (b shapedBeat) draw(db *drawnBeat) {
	db.at = b.at
	var buf [5]wave
	for j, wv := range beatWaves(b.kind, b.rhythm, &buf) {
		if wv.amp == 0 {
			continue // adds exactly nothing
		}
		at, width := wv.at, wv.width
		if j == 4 {
			at, width = at*b.sq, width*b.sq
		}
		reach := 5 * width * (1 + 1e-6)
		db.waves[db.n] = drawnWave{at: at, width: width, amp: wv.amp, lo: at - reach, hi: at + reach, r: j == 2}
		db.n++
	}
}

// beatWaves returns the components of a beat of a kind in a rhythm: a
// sinus beat's, without the P wave in atrial fibrillation, with an ectopic
// P wave for a premature atrial beat, or a ventricular beat's.
func beatWaves(kind world.BeatKind, rhythm world.Rhythm, buf *[5]wave) *[5]wave {
	switch {
	case kind == world.Ventricular:
		return &ventricularWaves
	case kind == world.AtrialPremature:
		*buf = waves
		buf[0] = atrialPrematureP
		return buf
	case rhythm == world.AtrialFibrillation:
		*buf = waves
		buf[0].amp = 0
		return buf
	}
	return &waves
}

// NewModel returns the sensors of device seed on wearer w.
func NewModel(w *world.Wearer, seed uint64) *Model {
	b := func(i uint64, sd float64) float64 { return sd * noise.Gauss(noise.Key(seed, streamBias, i)) }
	en := newECGNoise(w.Scenario().ECGNoise, seed)
	return &Model{
		noise:    en,
		noisy:    en.on(),
		heart:    !w.Scenario().Heart.Healthy(),
		accN:     noise.NewStream(seed, streamAcc),
		gyroN:    noise.NewStream(seed, streamGyro),
		magnN:    noise.NewStream(seed, streamMagn),
		ecgN:     noise.NewStream(seed, streamECG),
		w:        w,
		seed:     seed,
		accBias:  world.Vec3{X: b(0, 0.04), Y: b(1, 0.04), Z: b(2, 0.04)},
		gyroBias: world.Vec3{X: b(3, 0.4), Y: b(4, 0.4), Z: b(5, 0.4)},
		hardIron: world.Vec3{X: b(6, 12), Y: b(7, 12), Z: b(8, 12)},
		tempOff:  b(9, 0.15),
	}
}

// Wearer returns the model's wearer.
func (m *Model) Wearer() *world.Wearer { return m.w }

// axisNoise returns the noise of three axes of a sample: one keyed hash
// per sample, then one mixing per axis.
func axisNoise(s noise.Stream, t time.Duration) (x, y, z float64) {
	k := s.Key(uint64(t))
	return noise.Normal(k), noise.Normal(k + 0x632BE59BD9B4E019), noise.Normal(k + 0x8CB92BA72F3D8DD7)
}

// FillIMU implements IMUSource.
func (m *Model) FillIMU(acc, gyro, magn []XYZ, t0, dt time.Duration, r Ranges) {
	n := max(len(acc), len(gyro), len(magn))
	var buf [motionBuf]world.Motion
	mo := buf[:0]
	if n > len(buf) {
		mo = make([]world.Motion, 0, n)
	}
	mo = mo[:n]
	m.w.FillMotion(mo, t0, dt)
	accQ := newQuantizer(AccLSB(r.Acc), float64(r.Acc)*world.G)
	gyroQ := newQuantizer(GyroLSB(r.Gyro), float64(r.Gyro))
	magnQ := newQuantizer(magnLSB, magnLimit)
	for i := range mo {
		t := t0 + time.Duration(i)*dt
		if acc != nil {
			f := mo[i].Force.Add(m.accBias)
			nx, ny, nz := axisNoise(m.accN, t)
			acc[i] = accQ.xyz(f.X+accNoise*nx, f.Y+accNoise*ny, f.Z+accNoise*nz)
		}
		if gyro != nil {
			g := mo[i].Rate.Scale(180 / math.Pi).Add(m.gyroBias)
			nx, ny, nz := axisNoise(m.gyroN, t)
			gyro[i] = gyroQ.xyz(g.X+gyroNoise*nx, g.Y+gyroNoise*ny, g.Z+gyroNoise*nz)
		}
		if magn != nil {
			b := mo[i].Field.Add(m.hardIron)
			nx, ny, nz := axisNoise(m.magnN, t)
			magn[i] = magnQ.xyz(b.X+magnNoise*nx, b.Y+magnNoise*ny, b.Z+magnNoise*nz)
		}
	}
}

// wave is one Gaussian component of a beat: offset from the R peak and
// width (seconds, at 60 bpm), amplitude (mV).
type wave struct{ at, width, amp float64 }

// The PQRST components, the Gaussian-sum morphology of the dynamical model
// of McSharry, Clifford, Tarassenko and Smith, "A dynamical model for
// generating synthetic electrocardiogram signals" (IEEE Trans. Biomed. Eng.
// 50(3), 2003), expressed in time: their angles and widths at 60 bpm, scaled
// to a chest lead with a 1.1 mV R wave. The P wave and the QRS keep their
// timing as the rate rises; the T wave moves in and narrows with the square
// root of the RR interval (Bazett).
var waves = [5]wave{
	{-0.165, 0.030, 0.14},  // P
	{-0.030, 0.010, -0.12}, // Q
	{0, 0.011, 1.10},       // R
	{0.030, 0.011, -0.26},  // S
	{0.270, 0.050, 0.32},   // T
}

// The components of a premature ventricular beat: no P wave, a wide and
// tall QRS (about 160 ms), and a T wave of the opposite polarity
// (discordant), as the ventricles depolarise and repolarise cell to cell
// instead of through the conduction system.
var ventricularWaves = [5]wave{
	{-0.165, 0.030, 0},     // no P
	{-0.045, 0.020, -0.10}, // Q
	{0, 0.030, 1.50},       // R
	{0.065, 0.030, -0.45},  // S
	{0.330, 0.070, -0.45},  // T
}

// The P wave of a premature atrial beat: from an ectopic focus, so
// inverted and shorter, with a shorter PR interval; the QRS is normal.
var atrialPrematureP = wave{-0.135, 0.022, -0.09}

// afWave returns the fibrillatory waves of atrial fibrillation at ts
// seconds: about 0.05 mV at 4.8 to 6.2 Hz, wandering in frequency and
// amplitude, in place of P waves.
func afWave(ts float64) float64 {
	ph := 5.5*ts + 0.75/(2*math.Pi*0.15)*math.Sin(2*math.Pi*0.15*ts)
	amp := 0.05 + 0.02*math.Sin(2*math.Pi*0.23*ts+1)
	return amp * math.Sin(2*math.Pi*ph)
}

// reachBefore and reachAfter are how far the waves of a beat reach from
// its R peak: the earliest wave, a P wave, ends within world.BeatsAhead
// before it, and the ECG draws a beat up to 0.8 s after it.
const (
	reachBefore = world.BeatsAhead
	reachAfter  = 800 * time.Millisecond
)

// drawBeats appends to drawn the beats that reach the samples from t0 to
// t1: those whose R peak lies from reachAfter before t0 to reachBefore
// past t1. It takes them from the beats the model holds for the device's
// ECG batches, or from the wearer when they lie beyond those. Asking for
// no more keeps the wearer's track from running ahead of the streams.
func (m *Model) drawBeats(t0, t1 time.Duration, drawn []drawnBeat) []drawnBeat {
	from, to := t0-reachAfter, t1+reachBefore
	if drawn, ok := m.beats.draw(m.w, from, to, drawn); ok {
		return drawn
	}
	return drawWearerBeats(m.w, from, to, drawn)
}

// drawWearerBeats appends to drawn the beats of wearer w whose R peak lies
// from clock reading from to before to.
func drawWearerBeats(w *world.Wearer, from, to time.Duration, drawn []drawnBeat) []drawnBeat {
	var buf [beatBuf]world.Beat
	beats := w.AppendBeats(buf[:0], from, to)
	next := w.NextBeat(to)
	for k, b := range beats {
		after := next
		if k+1 < len(beats) {
			after = beats[k+1]
		}
		drawn = append(drawn, drawnBeat{})
		shape(b, after).draw(&drawn[len(drawn)-1])
	}
	return drawn
}

// heldBeats is how many beats a model holds: those that the batches of its
// streams reach together, at up to 250 beats a minute, from reachAfter
// before the first sample of the heart rate's batch, which lags up to its
// quarter of a second and an ECG batch behind, to reachBefore past the
// ECG's last, 1.8 s. A batch that reaches more takes its beats from the
// wearer.
const heldBeats = 8

// beatCache is the beats the device's ECG batches draw, the ECG stream's
// and the heart rate's, taken from the wearer once for all of them.
type beatCache struct {
	mu      sync.Mutex
	gen     uint64        // the wearer's injections when the beats were taken
	from    time.Duration // every beat whose R peak lies at or after from is held, up to next
	n       int
	started bool                  // whether next is a beat
	next    world.Beat            // the beat after those held, shaped once its successor is taken
	held    [heldBeats]shapedBeat // consecutive, by R peak
}

// draw appends to drawn the beats whose R peak lies from clock reading
// from to before to, from those c holds, taking what it lacks from wearer
// w, and reports whether it holds them all.
func (c *beatCache) draw(w *world.Wearer, from, to time.Duration, drawn []drawnBeat) ([]drawnBeat, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.take(w, from, to) {
		return drawn, false
	}
	// the beats asked for are the latest held, all but those from to on:
	// read from the last back, as few of them as there are
	k := c.n
	for k > 0 && c.held[k-1].at >= from {
		k--
	}
	for _, b := range c.held[k:c.n] {
		if b.at < to {
			drawn = append(drawn, drawnBeat{})
			b.draw(&drawn[len(drawn)-1])
		}
	}
	return drawn, true
}

// take makes c hold the beats whose R peak lies from clock reading from to
// before to, taking what it lacks from wearer w, and reports whether it
// holds them all: not when they are more than it holds.
func (c *beatCache) take(w *world.Wearer, from, to time.Duration) bool {
	if gen := w.Injections(); !c.started || gen != c.gen || from < c.from {
		c.gen, c.started, c.from, c.n = gen, true, from, 0
		c.next = w.NextBeat(from)
	}
	for c.next.At < to {
		var buf [beatBuf]world.Beat
		for _, b := range append(w.AppendBeats(buf[:0], c.next.At+1, to), w.NextBeat(to)) {
			if c.n == len(c.held) {
				c.from = c.held[0].at + 1
				c.n = copy(c.held[:], c.held[1:])
			}
			c.held[c.n] = shape(c.next, b)
			c.n++
			c.next = b
		}
	}
	return from >= c.from
}

// FillECG implements ECGSource: beats from the wearer, baseline wander from
// breathing, motion artefacts and muscle noise that grow with activity, mains
// hum, and a flat, noisy signal while the electrodes are off.
func (m *Model) FillECG(dst []float64, t0, dt time.Duration) {
	if len(dst) == 0 {
		return
	}
	t1 := t0 + time.Duration(len(dst)-1)*dt
	var drawn [beatBuf]drawnBeat
	var b ecgBatch
	b.drawn = m.drawBeats(t0, t1, drawn[:0])
	// the wearer's slow state, at both ends of the batch; contact is looked
	// at per sample only when it changes within the batch
	b.t0, b.dt = t0, dt
	sp := m.w.Span(t0, t1)
	b.in0, b.step0, b.resp0 = sp.Intensity[0], sp.StepPhase[0], sp.RespPhase[0]
	b.in1, b.step1, b.resp1 = sp.Intensity[1], sp.StepPhase[1], sp.RespPhase[1]
	b.c0, b.steady = sp.Contact, sp.Steady
	b.span = float64(t1 - t0)
	b.heart = m.heart
	// the sines run through the batch, one rotation a sample from its first
	df := 0.0
	if b.span > 0 {
		df = float64(dt) / b.span
	}
	b.resp = newOsc(2*math.Pi*b.resp0, 2*math.Pi*(b.resp1-b.resp0)*df)
	b.wander = newOsc(2*math.Pi*cycle(t0, wanderPeriod)+float64(m.seed%7), 2*math.Pi*float64(dt)/float64(wanderPeriod))
	b.hum = newOsc(2*math.Pi*cycle(t0, humPeriod), 2*math.Pi*float64(dt%humPeriod)/float64(humPeriod))
	if b.in0 != 0 || b.in1 != 0 {
		ph, dph := 2*math.Pi*b.step0, 2*math.Pi*(b.step1-b.step0)*df
		b.step, b.step2 = newOsc(ph, dph), newOsc(2*ph+1, 2*dph)
	}
	for lo := 0; lo < len(dst); lo += ecgChunk {
		m.fillECG(dst[lo:min(lo+ecgChunk, len(dst))], lo, &b)
	}
}

// ecgBatch is what the samples of a batch of the ECG share.
type ecgBatch struct {
	t0, dt            time.Duration
	in0, step0, resp0 float64 // intensity, step and breathing phases at the first sample
	in1, step1, resp1 float64 // and at the last
	span              float64 // from the first sample to the last, ns
	c0, steady, heart bool    // contact at the first sample, and whether it holds; an unhealthy heart
	drawn             []drawnBeat
	// the sines, each at the next sample to compute
	resp, wander, hum, step, step2 osc
}

// ecgChunk is how many samples fillECG computes at a time: each of its
// steps runs over them all in a short loop of its own (the sines, the
// beats' waves), so that the processor works on several samples at once.
const ecgChunk = 16

// osc gives sin(a + i·b) for i = 0, 1, 2, ...: a rotation per sample
// instead of a sine. Its error grows by about a unit in the last place
// of the sines a sample: over a batch of thousands of samples it stays
// far below the ECG's unit (TestFillECGSameSignal).
type osc struct{ s, c, sb, cb float64 }

func newOsc(a, b float64) osc {
	s, c := math.Sincos(a)
	sb, cb := math.Sincos(b)
	return osc{s: s, c: c, sb: sb, cb: cb}
}

// next returns the sine of the phase and steps to the next.
func (o *osc) next() float64 {
	v := o.s
	o.s, o.c = o.s*o.cb+o.c*o.sb, o.c*o.cb-o.s*o.sb
	return v
}

// cycle returns the fraction of a cycle of period p that clock reading t
// lies into, from whole nanoseconds: exact however long the device runs.
func cycle(t, p time.Duration) float64 { return float64(t%p) / float64(p) }

// Periods of the ECG's steady sines: the baseline wander at 0.05 Hz and
// the mains hum at 50 Hz.
const (
	wanderPeriod = 20 * time.Second
	humPeriod    = 20 * time.Millisecond
)

// fillECG computes samples lo, lo+1, ... of batch b into dst (at most
// ecgChunk of them), with the beats of b.drawn and its sines, which it
// steps on. Each sine, over the batch, and each wave of a beat, within a
// chunk, is a phase or an offset that grows by the same step from sample
// to sample: a sine is a rotation per sample (osc), and
// a Gaussian wave exp(-x²/2) is a product per sample, its ratio from one
// sample to the next itself falling by a constant factor.
func (m *Model) fillECG(dst []float64, lo int, b *ecgBatch) {
	var (
		respSin, wander, hum [ecgChunk]float64 // the steady sines
		v                    [ecgChunk]float64 // the beats' waves
	)
	n := len(dst)
	t0 := b.t0 + time.Duration(lo)*b.dt
	dts := b.dt.Seconds()
	// the sines in one loop, where each one's rotation waits on its last
	resp, wand, hm := &b.resp, &b.wander, &b.hum
	for i := range n {
		respSin[i], wander[i], hum[i] = resp.next(), wand.next(), hm.next()
	}
	// the beats' waves: a beat reaches the samples from reachBefore before
	// its R peak to reachAfter after it, a wave those within five widths of
	// its centre
	t1 := t0 + time.Duration(n-1)*b.dt
	for k := range b.drawn {
		db := &b.drawn[k]
		if db.at > t1+reachBefore || db.at < t0-reachAfter {
			continue
		}
		// the samples within the beat's reach, i0 to i1
		i0, i1 := 0, n-1
		for i0 <= i1 && t0+time.Duration(i0)*b.dt-db.at < -reachBefore {
			i0++
		}
		for i1 >= i0 && t0+time.Duration(i1)*b.dt-db.at > reachAfter {
			i1--
		}
		if i0 > i1 {
			continue
		}
		d0 := (t0 - db.at).Seconds() // offset of sample 0 from the R peak
		da, dz := d0+float64(i0)*dts, d0+float64(i1)*dts
		for j := range db.n {
			wv := &db.waves[j]
			if dz < wv.lo || da > wv.hi {
				continue // no sample within five widths
			}
			h := dts / wv.width           // x's step from sample to sample
			x0 := (d0 - wv.at) / wv.width // x at sample 0
			// the samples with -5 < x < 5, from estimates checked exactly
			a, z := max(i0, firstAbove(x0, h)), min(i1, lastBelow(x0, h))
			for a <= z && x0+float64(a)*h <= -5 {
				a++
			}
			for z >= a && x0+float64(z)*h >= 5 {
				z--
			}
			for z < i1 && x0+float64(z+1)*h < 5 {
				z++
			}
			if a > z {
				continue
			}
			x := x0 + float64(a)*h
			g := math.Exp(-0.5 * x * x)   // the wave at sample a
			r := math.Exp(-x*h - 0.5*h*h) // its ratio to the next sample
			q := math.Exp(-h * h)         // the ratio's own ratio
			for i := a; i <= z; i++ {
				amp := wv.amp
				if wv.r {
					amp *= 1 + 0.05*respSin[i]
				}
				v[i] += amp * g
				g *= r
				r *= q
			}
		}
	}
	// the slow state moves linearly across the batch: f = (t-t0)/span
	f0, df := 0.0, 0.0
	if b.span > 0 {
		f0, df = float64(t0-b.t0)/b.span, float64(b.dt)/b.span
	}
	step, step2 := &b.step, &b.step2
	for i := range n {
		var st, st2 float64
		if b.in0 != 0 || b.in1 != 0 {
			st, st2 = step.next(), step2.next()
		}
		t := t0 + time.Duration(i)*b.dt
		nz := noise.Normal(m.ecgN.Key(uint64(t)))
		on := b.c0
		if !b.steady {
			on = m.w.Contact(t)
		}
		if !on {
			dst[i] = 0.003 * nz
			continue
		}
		s := v[i]
		in := b.in0 + (b.in1-b.in0)*(f0+float64(i)*df)
		motion := 0.12 * in * (st + 0.4*st2)
		emg := (ecgEMG + 0.012*in) * nz
		if b.heart && m.w.RhythmAt(t) == world.AtrialFibrillation {
			s += afWave(t.Seconds())
		}
		if m.noisy {
			s += m.noise.at(m.seed, t, t.Seconds())
		}
		dst[i] = s + 0.08*respSin[i] + 0.04*wander[i] + motion + emg + 0.008*hum[i]
	}
}

// firstAbove returns the first sample i ≥ 0 whose x0 + i·h may exceed -5,
// h > 0 (exactly, its neighbours checked by the caller).
func firstAbove(x0, h float64) int {
	if x0 > -5 {
		return 0
	}
	return int((-5 - x0) / h)
}

// lastBelow returns an estimate of the last sample i whose x0 + i·h lies
// below 5, h > 0, at or after it (exactly, by the caller), or a number
// past any batch.
func lastBelow(x0, h float64) int {
	if z := (5 - x0) / h; z < ecgChunk {
		return max(int(z)+1, -1)
	}
	return ecgChunk
}

// Contact implements ECGSource.
func (m *Model) Contact(t time.Duration) bool { return m.w.Contact(t) }

// Temperature implements TempSource: the skin temperature, or the ambient
// air with the gear off, with the thermometer's offset, noise and resolution.
func (m *Model) Temperature(t time.Duration) (float64, bool) {
	st := m.w.At(t)
	v := st.SkinTemp + m.tempOff + tempNoise*noise.Normal(noise.Key(m.seed, streamTemp, uint64(t/time.Second)))
	return math.Round(v/tempLSB) * tempLSB, true
}

// Beats returns the wearer's beats in [t0, t1): the truth QRS detection is
// measured against.
func (m *Model) Beats(t0, t1 time.Duration) []world.Beat { return m.w.AppendBeats(nil, t0, t1) }
