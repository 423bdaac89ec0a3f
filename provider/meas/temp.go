package meas

import (
	"senseboard/content"
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/resource"
	"senseboard/sensor"
)

// Temperature limits, kelvin.
const (
	TempMin      = 233
	TempMax      = 398
	TempAccuracy = 1
	// TempInterval is how often a subscription looks for a change.
	TempInterval = time.Second
)

// Temp serves /Meas/Temp.
type Temp struct {
	d *device.Core

	mu     sync.Mutex
	src    sensor.TempSource
	topic  *resource.Topic
	ticker clock.Timer
	last   float32
	have   bool
}

// NewTemp returns the temperature provider reading src.
func NewTemp(src sensor.TempSource) *Temp { return &Temp{src: src} }

// SetSource changes the source, as a replay does.
func (p *Temp) SetSource(src sensor.TempSource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src = src
}

// Register installs the temperature resources.
func (p *Temp) Register(d *device.Core) error {
	p.d = d
	d.HandleFunc("/Meas/Temp/Info", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(&content.TempInfo{Min: TempMin, Max: TempMax, Accuracy: TempAccuracy})
	})
	d.HandleFunc("/Meas/Temp", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		m, ok := p.read()
		if !ok {
			return resource.Response{Status: resource.StatusNoContent}
		}
		return resource.OK(m)
	})
	d.HandleSource("/Meas/Temp", tempSource{p})
	return nil
}

// read takes a reading now; p.mu is held.
func (p *Temp) read() (*content.TempData, bool) {
	now := p.d.Clock().Now()
	v, ok := p.src.Temperature(now)
	if !ok {
		return nil, false
	}
	return &content.TempData{Timestamp: p.d.RelativeTime(), Measurement: float32(v)}, true
}

type tempSource struct{ p *Temp }

func (s tempSource) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.topic != t {
		p.topic, p.have = t, false
		p.tick()
	}
	return resource.OK(nil)
}

// tick schedules the next look; p.mu is held.
func (p *Temp) tick() {
	topic := p.topic
	p.ticker = p.d.Clock().AfterFunc(TempInterval, func() {
		p.mu.Lock()
		if p.topic != topic {
			p.mu.Unlock()
			return
		}
		m, ok := p.read()
		publish := ok && (!p.have || m.Measurement != p.last)
		if publish {
			p.last, p.have = m.Measurement, true
		}
		p.tick()
		p.mu.Unlock()
		if publish {
			topic.Publish(m)
		}
	})
}

func (s tempSource) Unsubscribed(t *resource.Topic) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.Subscribers() == 0 && p.topic == t {
		p.topic = nil
		if p.ticker != nil {
			p.ticker.Stop()
			p.ticker = nil
		}
	}
}
