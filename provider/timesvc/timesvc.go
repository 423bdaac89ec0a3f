// Package timesvc provides /Time and /Time/Detailed: the device's UTC time,
// set by PUT and lost on reset, next to its relative time since reset.
package timesvc

import (
	"senseboard/content"
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/resource"
)

// The properties of the device clock that /Time/Detailed reports.
const (
	TickRate = 1024 // ticks per second
	Accuracy = 20   // nominal accuracy, ppm
)

// TimeSync is a notification of /Time/Detailed.
type TimeSync struct {
	UTCTime      int64  `json:"utcTime"`
	RelativeTime uint32 `json:"relativeTime"`
}

// Provider serves the time resources.
type Provider struct {
	d *device.Core

	mu      sync.Mutex
	set     bool
	base    int64         // UTC microseconds at setAt
	setAt   time.Duration // clock reading when the time was set
	tick    *resource.Topic
	ticker  clock.Timer
	k       int64 // ticks since the first subscriber
	t0      time.Duration
	details *resource.Topic
	whenSet []func() // run at the next PUT of the time
}

// New returns the time provider.
func New() *Provider { return &Provider{} }

// Register installs the time resources.
func (p *Provider) Register(d *device.Core) error {
	p.d = d
	d.HandleFunc("/Time", resource.Get, func(*resource.Request) resource.Response { return resource.OK(p.UTC()) })
	d.HandleFunc("/Time", resource.Put, p.put)
	d.HandleSource("/Time", tickSource{p})
	d.HandleFunc("/Time/Detailed", resource.Get, func(*resource.Request) resource.Response {
		utc, rel := p.now()
		return resource.OK(&content.DetailedTime{UTCTime: utc, RelativeTime: rel, TickRate: TickRate, Accuracy: Accuracy})
	})
	d.HandleSource("/Time/Detailed", detailSource{p})
	return nil
}

// UTC returns the device's UTC time in microseconds since 1970-01-01 00:00
// UTC. When it has never been set since the last reset, that is 1970-01-01
// plus the time since reset.
func (p *Provider) UTC() int64 {
	utc, _ := p.now()
	return utc
}

func (p *Provider) now() (utc int64, rel uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nowLocked()
}

func (p *Provider) nowLocked() (int64, uint32) {
	now := p.d.Clock().Now()
	since := p.d.Local(now - p.d.ResetTime())
	rel := device.RelativeTime(since)
	if !p.set {
		return since.Microseconds(), rel
	}
	return p.base + p.d.Local(now-p.setAt).Microseconds(), rel
}

// IsSet reports whether the UTC time was set since the last reset.
func (p *Provider) IsSet() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set
}

// SetUTC sets the UTC time in microseconds since the epoch and notifies the
// subscribers of /Time/Detailed.
func (p *Provider) SetUTC(us int64) {
	p.mu.Lock()
	p.set, p.base, p.setAt = true, us, p.d.Clock().Now()
	utc, rel := p.nowLocked()
	topic := p.details
	p.mu.Unlock()
	if topic != nil {
		topic.Publish(&TimeSync{UTCTime: utc, RelativeTime: rel})
	}
}

func (p *Provider) put(req *resource.Request) resource.Response {
	p.SetUTC(req.Arg(0).Int())
	p.mu.Lock()
	fs := p.whenSet
	p.whenSet = nil
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return resource.OK(nil)
}

// WhenSet runs f once, after the next PUT of the time (a client's).
func (p *Provider) WhenSet(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.whenSet = append(p.whenSet, f)
}

// ClockReset restarts the device's relative time from 0 as a wake-up
// does (device.Core.RestartClock), and loses the UTC time (it falls back
// to its never-set value) or, with offset, makes it jump by offset.
func (p *Provider) ClockReset(offset *time.Duration) {
	p.mu.Lock()
	utc, _ := p.nowLocked()
	p.d.RestartClock()
	if offset == nil {
		p.set = false
	} else {
		p.set, p.base, p.setAt = true, utc+offset.Microseconds(), p.d.Clock().Now()
	}
	p.mu.Unlock()
}

// Reset forgets the UTC time: the hardware keeps it in volatile memory.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set = false
	p.stopTicker()
}

// PowerOff stops the ticker.
func (p *Provider) PowerOff() { p.Reset() }

func (p *Provider) stopTicker() {
	if p.ticker != nil {
		p.ticker.Stop()
		p.ticker = nil
	}
	p.tick = nil
}

// tickSource notifies the time every second from the first subscription.
type tickSource struct{ p *Provider }

func (s tickSource) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tick != t {
		p.stopTicker()
		p.tick, p.k, p.t0 = t, 0, p.d.Clock().Now()
		p.schedule()
	}
	return resource.OK(nil)
}

func (p *Provider) schedule() {
	p.k++
	topic := p.tick
	p.ticker = clock.At(p.d.Clock(), p.t0+time.Duration(p.k)*time.Second, func() {
		p.mu.Lock()
		if p.tick != topic {
			p.mu.Unlock()
			return
		}
		utc, _ := p.nowLocked()
		p.schedule()
		p.mu.Unlock()
		topic.Publish(utc)
	})
}

func (s tickSource) Unsubscribed(t *resource.Topic) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.Subscribers() == 0 && p.tick == t {
		p.stopTicker()
	}
}

// detailSource notifies at subscription and on every PUT of the time.
type detailSource struct{ p *Provider }

func (s detailSource) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.details = t
	return resource.OK(nil)
}

func (s detailSource) Announce(sub *resource.Subscription) {
	utc, rel := s.p.now()
	sub.Notify(&TimeSync{UTCTime: utc, RelativeTime: rel})
}

func (s detailSource) Unsubscribed(t *resource.Topic) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if t.Subscribers() == 0 && s.p.details == t {
		s.p.details = nil
	}
}
