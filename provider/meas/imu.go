package meas

import (
	"senseboard/content"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/device"
	"senseboard/resource"
	"senseboard/sensor"
	"senseboard/signal"
)

// Motion sample rates and ranges.
var (
	SampleRates = []uint16{13, 26, 52, 104, 208, 416, 833, 1666}
	AccRanges   = []uint16{2, 4, 8, 16} // not []uint8: that would encode as base64
	GyroRanges  = []uint16{245, 500, 1000, 2000}
)

// Range defaults and the magnetometer's fixed scale.
const (
	DefaultAccRange  = 8
	DefaultGyroRange = 2000
	MagnScale        = 5000
)

// BatchSize returns the samples per notification at a motion rate: the
// samples of 1/13 s up to 104 Hz (1 at 13 Hz, 4 at 52 Hz, 8 at 104 Hz, as
// the IMU's FIFO is read at 13 Hz), and 8 above, so that an IMU9
// notification stays within one BLE notification.
func BatchSize(rate int) int { return min(max(rate/13, 1), content.MaxBatch) }

type motionKind uint8

const (
	kindAcc motionKind = iota
	kindGyro
	kindMagn
	kindIMU6
	kindIMU6m
	kindIMU9
)

func (k motionKind) acc() bool  { return k == kindAcc || k >= kindIMU6 }
func (k motionKind) gyro() bool { return k == kindGyro || k == kindIMU6 || k == kindIMU9 }
func (k motionKind) magn() bool { return k == kindMagn || k == kindIMU6m || k == kindIMU9 }

// sensors returns how many sensors the kind reads: the arrays of its
// notifications.
func (k motionKind) sensors() int {
	n := 0
	for _, on := range [...]bool{k.acc(), k.gyro(), k.magn()} {
		if on {
			n++
		}
	}
	return n
}

// StateSink receives what the detectors find (the system provider).
type StateSink interface {
	Detected(id int, value int32, ts uint32)
}

// The state ids the detectors set.
const (
	stateMovement  = 0
	stateDoubleTap = 3
	stateTap       = 4
	stateFreeFall  = 5
)

// DoubleTapHold is how long the double-tap state reads 1 after a double tap.
const DoubleTapHold = time.Second

// IMU serves the accelerometer, gyroscope, magnetometer and IMU resources.
type IMU struct {
	d      *device.Core
	states StateSink

	mu        sync.Mutex
	src       sensor.IMUSource
	accRange  int
	gyroRange int
	det       *detector
	watchers  int          // detected states with subscribers (Watch)
	accUsers  atomic.Int32 // running streams that include the accelerometer
}

// NewIMU returns the IMU provider reading src. Its detectors report the
// states they find to the StateSink of ReportTo.
func NewIMU(src sensor.IMUSource) *IMU {
	return &IMU{src: src, states: noStates{}, accRange: DefaultAccRange, gyroRange: DefaultGyroRange}
}

// noStates is the StateSink of an IMU that reports to nobody.
type noStates struct{}

func (noStates) Detected(int, int32, uint32) {}

// ReportTo makes the detectors report the states they find to states (the
// system provider, which asks the detectors in turn); call it before the
// device is made.
func (p *IMU) ReportTo(states StateSink) { p.states = states }

// SetSource changes the source, as a replay does.
func (p *IMU) SetSource(src sensor.IMUSource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src = src
}

// AccRunning reports whether the accelerometer runs for some subscription.
func (p *IMU) AccRunning() bool { return p.accUsers.Load() > 0 }

// GyroInfo is the content of GET /Meas/Gyro/Info.
type GyroInfo struct {
	SampleRates []uint16 `json:"SampleRates"`
	Ranges      []uint16 `json:"Ranges"`
}

// MagnInfo is the content of GET /Meas/Magn/Info.
type MagnInfo struct {
	SampleRates []uint16 `json:"SampleRates"`
	Scale       []uint16 `json:"Scale"`
}

// AccConfig is AccConfig.
type AccConfig struct {
	GRange uint8 `json:"GRange"`
}

// GyroConfig is GyroConfig.
type GyroConfig struct {
	DPSRange uint16 `json:"DPSRange"`
}

// MagnConfig is the magnetometer's configuration.
type MagnConfig struct {
	Scale uint16 `json:"Scale"`
}

// IMUConfig is the content of GET /Meas/IMU/Config.
type IMUConfig struct {
	AccRange  uint8  `json:"AccRange"`
	GyroRange uint16 `json:"GyroRange"`
	MagnRange uint16 `json:"MagnRange"`
}

// Register installs the motion resources.
func (p *IMU) Register(d *device.Core) error {
	p.d = d
	get := func(path string, f func() any) {
		d.HandleFunc(path, resource.Get, func(*resource.Request) resource.Response { return resource.OK(f()) })
	}
	get("/Meas/Acc/Info", func() any { return &content.AccInfo{SampleRates: SampleRates, Ranges: AccRanges} })
	get("/Meas/Gyro/Info", func() any { return &GyroInfo{SampleRates: SampleRates, Ranges: GyroRanges} })
	get("/Meas/Magn/Info", func() any { return &MagnInfo{SampleRates: SampleRates, Scale: []uint16{MagnScale}} })
	get("/Meas/IMU/Info", func() any {
		return &content.IMUInfo{SampleRates: SampleRates, AccRanges: AccRanges, GyroRanges: GyroRanges, MagnRanges: []uint16{MagnScale}}
	})
	get("/Meas/Acc/Config", func() any { p.mu.Lock(); defer p.mu.Unlock(); return &AccConfig{GRange: uint8(p.accRange)} })
	get("/Meas/Gyro/Config", func() any { p.mu.Lock(); defer p.mu.Unlock(); return &GyroConfig{DPSRange: uint16(p.gyroRange)} })
	get("/Meas/Magn/Config", func() any { return &MagnConfig{Scale: MagnScale} })
	get("/Meas/IMU/Config", func() any {
		p.mu.Lock()
		defer p.mu.Unlock()
		return &IMUConfig{AccRange: uint8(p.accRange), GyroRange: uint16(p.gyroRange), MagnRange: MagnScale}
	})
	d.HandleFunc("/Meas/Acc/Config", resource.Put, func(req *resource.Request) resource.Response {
		var c AccConfig
		if err := req.Arg(0).Decode(&c); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "AccConfig: %v", err)
		}
		p.mu.Lock()
		p.accRange = int(c.GRange) // in force from the next batch, also mid-subscription
		p.mu.Unlock()
		return resource.OK(nil)
	})
	d.HandleFunc("/Meas/Gyro/Config", resource.Put, func(req *resource.Request) resource.Response {
		var c GyroConfig
		if err := req.Arg(0).Decode(&c); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "GyroConfig: %v", err)
		}
		p.mu.Lock()
		p.gyroRange = int(c.DPSRange)
		p.mu.Unlock()
		return resource.OK(nil)
	})
	d.HandleFunc("/Meas/Magn/Config", resource.Put, func(*resource.Request) resource.Response {
		return resource.OK(nil) // the definition allows only the fixed scale
	})
	for path, kind := range map[string]motionKind{
		"/Meas/Acc/{SampleRate}": kindAcc, "/Meas/Gyro/{SampleRate}": kindGyro, "/Meas/Magn/{SampleRate}": kindMagn,
		"/Meas/IMU6/{SampleRate}": kindIMU6, "/Meas/IMU6m/{SampleRate}": kindIMU6m, "/Meas/IMU9/{SampleRate}": kindIMU9,
	} {
		d.HandleSource(path, motionSource{p, kind})
	}
	return nil
}

// motionStream feeds one motion topic.
type motionStream struct {
	stream
	p     *IMU
	kind  motionKind
	topic *resource.Topic
}

type motionSource struct {
	p    *IMU
	kind motionKind
}

func (s motionSource) Subscribe(t *resource.Topic, req *resource.Request) resource.Response {
	rate := req.Arg(0).Uint()
	if !contains(SampleRates, rate) {
		return resource.Errorf(resource.StatusNotImplemented, "SampleRate %d is not supported; allowed: %s", rate, listRates(SampleRates))
	}
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.Data == nil {
		ms := &motionStream{p: p, kind: s.kind, topic: t}
		ms.stream = stream{clk: p.d.Clock(), rate: int(rate), batch: BatchSize(int(rate)), mu: &p.mu, batcher: ms}
		t.Data = ms
		ms.start()
		if s.kind.acc() {
			if p.accUsers.Add(1) == 1 {
				p.startDetector()
			}
		}
	}
	return resource.OK(nil)
}

func (s motionSource) Unsubscribed(t *resource.Topic) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	ms, ok := t.Data.(*motionStream)
	if !ok || t.Subscribers() > 0 || !ms.run {
		return
	}
	ms.stop()
	if ms.kind.acc() && p.accUsers.Add(-1) == 0 {
		p.stopDetector()
	}
}

func (ms *motionStream) fireBatch(at time.Duration, n int) { ms.p.fireMotion(ms, at, n) }

// fireMotion publishes a batch; p.mu is held.
func (p *IMU) fireMotion(ms *motionStream, at time.Duration, n int) {
	m := content.NewMotionData(relTime(p.d, at), n, ms.kind.acc(), ms.kind.gyro(), ms.kind.magn())
	p.src.FillIMU(m.ArrayAcc, m.ArrayGyro, m.ArrayMagn, at, ms.period(), sensor.Ranges{Acc: p.accRange, Gyro: p.gyroRange})
	ms.topic.Publish(m)
	m.Release()
}

// detector runs the motion detectors on the accelerometer while it runs.
// It runs ahead only while one of its states has a subscriber (Watch);
// otherwise it waits, and catches up when a state is read (CatchUp): from
// where it stopped, as if it had run all along, or, after more than
// catchUpWindow, from the start of that window with a fresh detector, which
// by then is in the state the running one would be in (its slowest
// measure, the movement's mean, settles in a few seconds). What is lost
// that way is a tap older than the window that nobody asked about.
type detector struct {
	stream
	p        *IMU
	md       *signal.MotionDetector
	buf      []sensor.XYZ
	clearTap time.Duration // when the double-tap state returns to 0
}

// detectorBatch is how many samples the detector takes at a time.
const detectorBatch = 16

// catchUpWindow is the most device time a waiting detector goes back over
// to catch up.
const catchUpWindow = 20 * time.Second

func (p *IMU) startDetector() {
	det := &detector{p: p, md: signal.NewMotionDetector(signal.DetectorRate), buf: make([]sensor.XYZ, detectorBatch)}
	det.stream = stream{clk: p.d.Clock(), rate: signal.DetectorRate, batch: detectorBatch, mu: &p.mu, batcher: det}
	p.det = det
	det.begin()
	if p.watchers > 0 {
		det.resume()
	}
}

// Watch counts the detected states (movement, taps, free fall) that have
// subscribers: while one has, the detectors run ahead with the
// accelerometer; while none has, they wait and catch up when read.
func (p *IMU) Watch(delta int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watchers += delta
	det := p.det
	switch {
	case det == nil:
	case p.watchers > 0 && !det.run:
		p.catchUp()
		det.resume()
	case p.watchers <= 0 && det.run:
		det.stop()
	}
}

// CatchUp runs the waiting detectors up to now, so that the states they
// set are current.
func (p *IMU) CatchUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.catchUp()
}

// catchUp runs a waiting detector's batches due by now; p.mu is held.
func (p *IMU) catchUp() {
	det := p.det
	if det == nil || det.run {
		return
	}
	now := det.clk.Now()
	fresh := false
	if from := now - catchUpWindow; det.sampleTime(det.k) < from {
		// start afresh at the first batch of the window
		k := int64(from-det.t0) * int64(det.rate) / int64(time.Second)
		det.k = (k/detectorBatch + 1) * detectorBatch
		det.md = signal.NewMotionDetector(signal.DetectorRate)
		fresh = true
	}
	for det.sampleTime(det.k+detectorBatch) <= now {
		k := det.k
		det.k += detectorBatch
		p.fireDetector(det, det.sampleTime(k), detectorBatch)
	}
	if fresh {
		// a fresh detector reports changes from its own start: the states
		// it holds now replace what was detected before the gap
		ts := relTime(p.d, det.sampleTime(det.k-1))
		p.states.Detected(stateMovement, boolState(det.md.Moving()), ts)
		p.states.Detected(stateFreeFall, boolState(det.md.Falling()), ts)
	}
}

func boolState(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func (p *IMU) stopDetector() {
	if p.det != nil {
		p.det.stop()
		p.det = nil
	}
}

func (det *detector) fireBatch(at time.Duration, n int) { det.p.fireDetector(det, at, n) }

// fireDetector feeds a batch to the detectors; p.mu is held.
func (p *IMU) fireDetector(det *detector, at time.Duration, n int) {
	dt := det.period()
	p.src.FillIMU(det.buf[:n], nil, nil, at, dt, sensor.Ranges{Acc: p.accRange, Gyro: p.gyroRange})
	for i, v := range det.buf[:n] {
		t := at + time.Duration(i)*dt
		if det.clearTap > 0 && t >= det.clearTap {
			det.clearTap = 0
			p.states.Detected(stateDoubleTap, 0, relTime(p.d, t))
		}
		det.md.Feed(float64(v.X), float64(v.Y), float64(v.Z))
		for {
			e, ok := det.md.Pop()
			if !ok {
				break
			}
			ts := relTime(p.d, t)
			switch e {
			case signal.MovementStart:
				p.states.Detected(stateMovement, 1, ts)
			case signal.MovementStop:
				p.states.Detected(stateMovement, 0, ts)
			case signal.Tap:
				p.states.Detected(stateTap, 1, ts)
			case signal.DoubleTap:
				p.states.Detected(stateDoubleTap, 1, ts)
				det.clearTap = t + DoubleTapHold
			case signal.FreeFallStart:
				p.states.Detected(stateFreeFall, 1, ts)
			case signal.FreeFallEnd:
				p.states.Detected(stateFreeFall, 0, ts)
			}
		}
	}
}

// Reset restores the default ranges; streams ended with the subscriptions.
func (p *IMU) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.accRange, p.gyroRange = DefaultAccRange, DefaultGyroRange
}
