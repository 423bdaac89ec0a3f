// Package ui provides the LED (/Component/Leds, /Component/Leds/{LedIndex},
// the deprecated /Component/Led) and the visual indication (/Ui/Ind/Visual)
// that the LED shows.
//
// The LED's state is a function of device time: while an indication runs it
// overrides the state a client set. Continuous blinking (1) is on for 500 ms
// and off for 500 ms; one short blink (2) is on for 100 ms, after which the
// indication returns to 0 by itself.
package ui

import (
	"sync"
	"time"

	"senseboard/device"
	"senseboard/resource"
)

// Indication timing.
const (
	BlinkPeriod = time.Second
	ShortBlink  = 100 * time.Millisecond
)

// Red is the only LED colour.
const Red = 0

// LedState is the read form of an LED's state.
type LedState struct {
	IsOn     bool          `json:"IsOn"`
	LedColor resource.Pair `json:"LedColor"`
}

// LedList is the content of GET /Component/Leds.
type LedList struct {
	LedStates []LedState `json:"LedStates"`
}

// VisualInd is the content of GET /Ui/Ind/Visual.
type VisualInd struct {
	State uint16 `json:"state"`
}

// Provider serves the LED and indication resources.
type Provider struct {
	d *device.Core

	mu      sync.Mutex
	on      bool          // set by a client
	ind     uint16        // indication
	indFrom time.Duration // clock reading when the indication started
}

// New returns the provider.
func New() *Provider { return &Provider{} }

// Register installs the resources.
func (p *Provider) Register(d *device.Core) error {
	p.d = d
	d.HandleFunc("/Component/Leds", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(&LedList{LedStates: []LedState{p.state()}})
	})
	d.HandleFunc("/Component/Leds/{LedIndex}", resource.Get, func(req *resource.Request) resource.Response {
		if resp, ok := checkIndex(req); !ok {
			return resp
		}
		s := p.state()
		return resource.OK(&s)
	})
	d.HandleFunc("/Component/Leds/{LedIndex}", resource.Put, func(req *resource.Request) resource.Response {
		if resp, ok := checkIndex(req); !ok {
			return resp
		}
		var in struct {
			IsOn     *bool
			LedColor *int
		}
		if err := req.Arg(1).Decode(&in); err != nil || in.IsOn == nil {
			return resource.Errorf(resource.StatusBadRequest, "LedState needs IsOn (bool); LedColor is optional")
		}
		if in.LedColor != nil && *in.LedColor != Red {
			return resource.Errorf(resource.StatusBadRequest, "LedColor %d does not exist; allowed: 0 (Red)", *in.LedColor)
		}
		p.set(*in.IsOn)
		return resource.OK(nil)
	})
	d.HandleFunc("/Component/Led", resource.Put, func(req *resource.Request) resource.Response {
		p.set(req.Arg(0).Bool())
		return resource.OK(nil)
	})
	d.HandleFunc("/Ui/Ind/Visual", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(&VisualInd{State: p.Indication()})
	})
	d.HandleFunc("/Ui/Ind/Visual", resource.Put, func(req *resource.Request) resource.Response {
		p.mu.Lock()
		p.ind = uint16(req.Arg(0).Uint())
		p.indFrom = p.d.Clock().Now()
		p.mu.Unlock()
		return resource.OK(nil)
	})
	return nil
}

func checkIndex(req *resource.Request) (resource.Response, bool) {
	if i := req.Arg(0).Int(); i != 0 {
		return resource.Errorf(resource.StatusNotFound, "no LED %d; the device has LED 0 only", i), false
	}
	return resource.Response{}, true
}

func (p *Provider) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = on
}

// Indication returns the visual indication in effect.
func (p *Provider) Indication() uint16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.indicationLocked(p.d.Clock().Now())
}

func (p *Provider) indicationLocked(now time.Duration) uint16 {
	if p.ind == 2 && now-p.indFrom >= ShortBlink {
		p.ind = 0
	}
	return p.ind
}

// LedOn reports whether the LED is lit now.
func (p *Provider) LedOn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.d.Clock().Now()
	switch p.indicationLocked(now) {
	case 1:
		return (now-p.indFrom)%BlinkPeriod < BlinkPeriod/2
	case 2:
		return true
	}
	return p.on
}

func (p *Provider) state() LedState {
	return LedState{IsOn: p.LedOn(), LedColor: resource.Pair{Value: Red, Name: "Red"}}
}

// Reset turns the LED off and ends the indication.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on, p.ind = false, 0
}
