package meas

import (
	"encoding/json"
	"math"
	"senseboard/content"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/device"
	"senseboard/resource"
	"senseboard/sensor"
	"senseboard/signal"
)

// ECG rates, batch and filter choices.
var (
	ECGRates        = []uint16{125, 128, 200, 250, 256, 500, 512}
	LowPassOptions  = []float32{40, 100, 150}
	HighPassOptions = []float32{0.5}
)

// FrontEndFIFO is the front end's buffer, in samples: a subscriber that lets
// more than this wait loses samples.
const FrontEndFIFO = 32

// ADC limits of the front end (18-bit samples).
const (
	ecgMin = -131072
	ecgMax = 131071
)

// lossReport is how often a lost-samples warning may be produced.
const lossReport = time.Second

// DefaultLowPass returns the low-pass filter in force when no
// configuration was written: 40 Hz below 250 Hz or when not measuring,
// 100 Hz from 250 Hz to below 500 Hz, 150 Hz from 500 Hz.
func DefaultLowPass(rate int) float32 {
	switch {
	case rate >= 500:
		return 150
	case rate >= 250:
		return 100
	}
	return 40
}

// ECG serves the ECG resources.
type ECG struct {
	d *device.Core

	mu       sync.Mutex
	src      sensor.ECGSource
	written  bool // a configuration was written since the reset
	lowPass  *float32
	highPass *float32
	st       *ecgStream
	rate     atomic.Int32
	lost     int
	reported time.Duration
}

// NewECG returns the ECG provider reading src.
func NewECG(src sensor.ECGSource) *ECG { return &ECG{src: src} }

// SetSource changes the source, as a replay does.
func (p *ECG) SetSource(src sensor.ECGSource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src = src
}

type ecgStream struct {
	stream
	p          *ECG
	hp, lp     signal.Cascade
	ints, mv   *resource.Topic
	buf        []float64
	lastSample float64
}

// config returns the filters in force at a rate (0: not measuring); p.mu is held.
func (p *ECG) config(rate int) content.ECGConfig {
	if p.written {
		return content.ECGConfig{LowPass: p.lowPass, HighPass: p.highPass}
	}
	lp, hp := DefaultLowPass(rate), HighPassOptions[0]
	return content.ECGConfig{LowPass: &lp, HighPass: &hp}
}

// Register installs the ECG resources.
func (p *ECG) Register(d *device.Core) error {
	p.d = d
	d.HandleFunc("/Meas/ECG/Info", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(&content.ECGInfo{CurrentSampleRate: uint16(p.rate.Load()), AvailableSampleRates: ECGRates,
			ArraySize: content.ECGArraySize, LowPass: LowPassOptions, HighPass: HighPassOptions})
	})
	d.HandleFunc("/Meas/ECG/Config", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		c := p.config(int(p.rate.Load()))
		return resource.OK(&c)
	})
	d.HandleFunc("/Meas/ECG/Config", resource.Put, p.putConfig)
	d.HandleSource("/Meas/ECG/{RequiredSampleRate}", ecgSource{p, false})
	d.HandleSource("/Meas/ECG/{RequiredSampleRate}/mV", ecgSource{p, true})
	return nil
}

// putConfig sets the filters: a key given as null bypasses its filter, a key
// left out keeps its setting.
func (p *ECG) putConfig(req *resource.Request) resource.Response {
	var raw map[string]json.RawMessage
	if err := req.Arg(0).Decode(&raw); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "ECGConfig: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.config(int(p.rate.Load()))
	for key, dst := range map[string]**float32{"LowPass": &c.LowPass, "HighPass": &c.HighPass} {
		v, ok := raw[key]
		if !ok {
			continue
		}
		var f *float32
		if err := json.Unmarshal(v, &f); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "ECGConfig %s: %v", key, err)
		}
		*dst = f
	}
	p.written, p.lowPass, p.highPass = true, c.LowPass, c.HighPass
	if p.st != nil {
		p.design(p.st)
	}
	return resource.OK(nil)
}

// design makes a stream's filters from the configuration; p.mu is held.
func (p *ECG) design(st *ecgStream) {
	c := p.config(st.rate)
	fs := float64(st.rate)
	st.hp, st.lp = nil, nil
	if c.HighPass != nil {
		st.hp, _ = signal.Butterworth(signal.HighPass, 2, float64(*c.HighPass), fs)
	}
	if c.LowPass != nil {
		// a cut-off at or above the Nyquist limit acts at 0.45 of the rate
		st.lp, _ = signal.Butterworth(signal.LowPass, 2, math.Min(float64(*c.LowPass), 0.45*fs), fs)
	}
	st.hp.Settle(st.lastSample)
	st.lp.Settle(0)
}

// ECGRegister returns the front end's CNFG_ECG register for the measurement
// in use: the rate (bits 23..22), the high-pass (bit 14) and the low-pass
// (bits 13..12).
func (p *ECG) ECGRegister() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	rate := int(p.rate.Load())
	var v uint32
	switch {
	case rate >= 500 || rate == 0:
		v = 0 << 22
	case rate >= 250:
		v = 1 << 22
	default:
		v = 2 << 22
	}
	c := p.config(rate)
	if c.HighPass != nil {
		v |= 1 << 14
	}
	if c.LowPass != nil {
		switch *c.LowPass {
		case 40:
			v |= 1 << 12
		case 100:
			v |= 2 << 12
		case 150:
			v |= 3 << 12
		}
	}
	return v
}

type ecgSource struct {
	p  *ECG
	mv bool
}

func (s ecgSource) Subscribe(t *resource.Topic, req *resource.Request) resource.Response {
	rate := req.Arg(0).Uint()
	if !contains(ECGRates, rate) {
		return resource.Errorf(resource.StatusNotImplemented, "RequiredSampleRate %d is not supported; allowed: %s", rate, listRates(ECGRates))
	}
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st != nil && p.st.rate != int(rate) {
		return resource.Errorf(resource.StatusConflict, "the ECG runs at %d Hz for another subscription; only one rate at a time (subscribe at %d Hz, or end that subscription first)", p.st.rate, p.st.rate)
	}
	if p.st == nil {
		st := &ecgStream{p: p, buf: make([]float64, content.ECGArraySize)}
		st.stream = stream{clk: p.d.Clock(), rate: int(rate), batch: content.ECGArraySize, mu: &p.mu, batcher: st}
		p.design(st)
		p.st = st
		p.rate.Store(int32(rate))
		st.start()
		p.d.Logf(device.LevelInfo, "ECG: measuring at %d Hz", rate)
	}
	t.Limit = FrontEndFIFO / content.ECGArraySize
	if s.mv {
		p.st.mv = t
	} else {
		p.st.ints = t
	}
	t.Data = p.st
	return resource.OK(nil)
}

func (s ecgSource) Unsubscribed(t *resource.Topic) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	if st == nil || t.Subscribers() > 0 {
		return
	}
	if st.mv == t {
		st.mv = nil
	}
	if st.ints == t {
		st.ints = nil
	}
	if st.mv == nil && st.ints == nil {
		st.stop()
		p.st = nil
		p.rate.Store(0)
	}
}

func (st *ecgStream) fireBatch(at time.Duration, n int) { st.p.fire(st, at, n) }

// fire publishes a batch; p.mu is held.
func (p *ECG) fire(st *ecgStream, at time.Duration, n int) {
	p.src.FillECG(st.buf[:n], at, st.period())
	ts := relTime(p.d, at)
	var ints *content.ECGData
	var mv *content.ECGDataMV
	if st.ints != nil {
		ints = content.NewECGData(ts, n)
	}
	if st.mv != nil {
		mv = content.NewECGDataMV(ts, n)
	}
	for i, x := range st.buf[:n] {
		st.lastSample = x
		y := st.lp.Step(st.hp.Step(x))
		u := int32(max(ecgMin, min(ecgMax, math.Round(y/sensor.ECGUnit))))
		if ints != nil {
			ints.Samples[i] = u
		}
		if mv != nil {
			mv.Samples[i] = float32(float64(u) * sensor.ECGUnit)
		}
	}
	lost := 0
	if ints != nil {
		lost += (st.ints.Subscribers() - st.ints.Publish(ints)) * n
		ints.Release()
	}
	if mv != nil {
		lost += (st.mv.Subscribers() - st.mv.Publish(mv)) * n
	}
	if lost > 0 {
		p.lost += lost
		if now := p.d.Clock().Now(); now-p.reported >= lossReport {
			p.d.Logf(device.LevelWarning, "ECG: the front end's %d-sample buffer overflowed; %d samples lost (a subscriber cannot keep up with %d Hz)",
				FrontEndFIFO, p.lost, st.rate)
			p.lost, p.reported = 0, now
		}
	}
}

// Reset forgets the written configuration.
func (p *ECG) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written, p.lowPass, p.highPass = false, nil, nil
}
