package signal

import "math"

// MotionEvent is a change the motion detector reports.
type MotionEvent uint8

// The motion events.
const (
	MovementStart MotionEvent = iota + 1
	MovementStop
	Tap
	DoubleTap
	FreeFallStart
	FreeFallEnd
)

func (e MotionEvent) String() string {
	return [...]string{"", "movement start", "movement stop", "tap", "double tap", "free fall start", "free fall end"}[e]
}

// Detector thresholds. They work on the accelerometer's output in m/s^2,
// clipped to its range, so a narrower range changes what they see.
const (
	// A tap is a jolt: the acceleration changes by more than TapJolt within
	// one sample at DetectorRate, with no second jolt for TapQuiet.
	TapJolt  = 5.0 // m/s^2 per sample
	TapShock = 0.04
	TapQuiet = 0.10
	// A double tap is two taps between DoubleTapMin and DoubleTapMax apart.
	DoubleTapMin = 0.10
	DoubleTapMax = 0.50
	// Free fall: the magnitude stays below FallBelow for FallFor; it ends
	// when it rises above FallAbove.
	FallBelow = 0.35 * 9.80665
	FallAbove = 0.80 * 9.80665
	FallFor   = 0.03
	// Movement: the magnitude's deviation from its slow mean, averaged over
	// about half a second, is above MoveAbove; it stops when it stays below
	// MoveBelow for StillFor.
	MoveAbove = 0.5
	MoveBelow = 0.25
	StillFor  = 2.0
)

// DetectorRate is the rate the motion detectors run at, like the IMU's
// embedded functions, whatever rate the client subscribes at.
const DetectorRate = 416

// MotionDetector turns accelerometer samples into movement, tap, double-tap
// and free-fall events. Feed it samples at a fixed rate.
type MotionDetector struct {
	dt         float64
	n          int64
	prev       [3]float64
	havePrev   bool
	slowMean   float64
	dev        float64
	moving     bool
	stillSince int64
	shockUntil int64
	quietEnd   int64 // a tap is confirmed when this passes without another jolt
	pendingTap bool
	tapAt      int64
	lastTap    int64
	belowSince int64
	falling    bool
	fellAt     int64 // taps right after a fall's impact are not taps
	out        []MotionEvent
}

// NewMotionDetector returns a detector for samples at rate Hz.
func NewMotionDetector(rate float64) *MotionDetector {
	return &MotionDetector{dt: 1 / rate, lastTap: -1 << 40, belowSince: -1, fellAt: -1 << 40}
}

func (d *MotionDetector) samples(seconds float64) int64 { return int64(math.Round(seconds / d.dt)) }

func (d *MotionDetector) emit(e MotionEvent) { d.out = append(d.out, e) }

// Moving reports the movement state.
func (d *MotionDetector) Moving() bool { return d.moving }

// Falling reports the free-fall state.
func (d *MotionDetector) Falling() bool { return d.falling }

// Feed processes one sample. Events found are returned by Pop, in order.
func (d *MotionDetector) Feed(x, y, z float64) {
	n := d.n
	d.n++
	mag := math.Sqrt(x*x + y*y + z*z)

	// free fall
	if mag < FallBelow {
		if d.belowSince < 0 {
			d.belowSince = n
		}
		if !d.falling && n-d.belowSince+1 >= d.samples(FallFor) {
			d.falling = true
			d.pendingTap = false // the drop into the fall is not a tap
			d.emit(FreeFallStart)
		}
	} else {
		d.belowSince = -1
		if d.falling && mag > FallAbove {
			d.falling = false
			d.fellAt = n
			d.emit(FreeFallEnd)
		}
	}

	// taps
	if d.havePrev {
		jolt := math.Sqrt((x-d.prev[0])*(x-d.prev[0]) + (y-d.prev[1])*(y-d.prev[1]) + (z-d.prev[2])*(z-d.prev[2]))
		if jolt > TapJolt && !d.falling && n-d.fellAt > d.samples(0.5) {
			switch {
			case n < d.shockUntil:
				// the same shock
			case d.pendingTap:
				// a second jolt before the quiet time: not a clean tap
				d.pendingTap = false
				d.shockUntil = n + d.samples(TapShock)
			default:
				d.pendingTap, d.tapAt = true, n
				d.shockUntil = n + d.samples(TapShock)
				d.quietEnd = d.shockUntil + d.samples(TapQuiet)
			}
		}
	}
	if d.pendingTap && n >= d.quietEnd {
		d.pendingTap = false
		d.emit(Tap)
		if gap := float64(d.tapAt-d.lastTap) * d.dt; gap >= DoubleTapMin && gap <= DoubleTapMax {
			d.emit(DoubleTap)
			d.lastTap = -1 << 40
		} else {
			d.lastTap = d.tapAt
		}
	}
	d.prev, d.havePrev = [3]float64{x, y, z}, true

	// movement
	a := d.dt / 2.0 // slow mean over about 2 s
	if n == 0 {
		d.slowMean = mag
	}
	d.slowMean += a * (mag - d.slowMean)
	b := d.dt / 0.5
	d.dev += b * (math.Abs(mag-d.slowMean) - d.dev)
	switch {
	case d.dev > MoveAbove || d.falling:
		d.stillSince = n
		if !d.moving {
			d.moving = true
			d.emit(MovementStart)
		}
	case d.dev > MoveBelow:
		d.stillSince = n
	case d.moving && float64(n-d.stillSince)*d.dt >= StillFor:
		d.moving = false
		d.emit(MovementStop)
	}
}

// Pop returns the next event found.
func (d *MotionDetector) Pop() (MotionEvent, bool) {
	if len(d.out) == 0 {
		return 0, false
	}
	e := d.out[0]
	copy(d.out, d.out[1:])
	d.out = d.out[:len(d.out)-1]
	return e, true
}
