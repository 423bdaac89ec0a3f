// Package hrs is the in-device module that feeds the BLE heart-rate
// service (0x180D) from the heart-rate measurement, as the family's
// firmware feeds it: while a central has the Heart Rate Measurement's
// notifications on, each notification of /Meas/HR (the average heart rate
// and the RR intervals) is posted to /Comm/Ble/HRS, which notifies it; the
// measurement runs for it only then. The service is the radio's and
// /Comm/Ble/HRS the BLE provider's; the Module is an app (package app)
// built on the in-device application interface, as the firmware's own app
// that feeds the service is (the device library's ble_std_services
// sample does the same).
package hrs

import (
	"senseboard/app"
	"senseboard/content"
	"senseboard/device"
	"senseboard/provider/ble"
	"senseboard/radio"
	"senseboard/resource"
)

// Name is the app's name.
const Name = "HeartRateServiceFeed"

// MaxRR is the most RR intervals one Heart Rate Measurement carries, as
// /Comm/Ble/HRS takes them: nine fit a notification at the least MTU.
// More intervals go out in further measurements.
const MaxRR = 9

// Paths the module uses.
const (
	servicePath = "/Comm/Ble/HRS"
	hrPath      = "/Meas/HR"
)

// Module feeds the heart-rate service. Run it with app.Run on a device
// whose profile has the service (modules.hrs).
type Module struct {
	// owned by the app's goroutine
	hr *app.Subscription // to /Meas/HR while a central has notifications on
}

// New returns a module that is not running yet.
func New() *Module { return &Module{} }

// Name implements app.App.
func (m *Module) Name() string { return Name }

// Start implements app.App: the module follows the central's
// notifications of the service. After a reset no central is connected,
// so none has them on.
func (m *Module) Start(ctx *app.Context) error {
	m.hr = nil
	ctx.Subscribe(servicePath, func(c any) {
		if st, ok := c.(*ble.HRSState); ok {
			m.notifications(ctx, st.Enabled)
		}
	}, func(env resource.Envelope) {
		if !env.Status.OK() {
			ctx.Device().Logf(device.LevelError, "%s: subscribe %s: %s", Name, servicePath, env.Refusal())
		}
	})
	return nil
}

// notifications starts the measurement when a central switches the
// service's notifications on, and stops it when it switches them off or
// goes.
func (m *Module) notifications(ctx *app.Context, on bool) {
	switch {
	case on && m.hr == nil:
		var s *app.Subscription
		s = ctx.Subscribe(hrPath, func(c any) {
			if h, ok := c.(*content.HRData); ok && m.hr == s {
				post(ctx, h)
			}
		}, func(env resource.Envelope) {
			if !env.Status.OK() {
				ctx.Device().Logf(device.LevelError, "%s: subscribe %s: %s", Name, hrPath, env.Refusal())
				if m.hr == s {
					m.hr = nil
				}
			}
		})
		m.hr = s
	case !on && m.hr != nil:
		m.hr.Unsubscribe(nil)
		m.hr = nil
	}
}

// MaxAverage is the highest average heart rate /Comm/Ble/HRS takes, in
// beats per minute; a higher one goes as MaxAverage.
const MaxAverage = 255

// post sends a heart-rate notification to the service.
func post(ctx *app.Context, h *content.HRData) {
	for _, d := range measurements(h) {
		v, err := resource.Record("HRSData", d)
		if err != nil {
			ctx.Device().Logf(device.LevelError, "%s: %v", Name, err)
			return
		}
		ctx.Post(servicePath, func(env resource.Envelope) {
			if !env.Status.OK() {
				ctx.Device().Logf(device.LevelError, "%s: post %s: %s", Name, servicePath, env.Refusal())
			}
		}, v)
	}
}

// measurements returns the Heart Rate Measurements of a heart-rate
// notification: its average (at most MaxAverage) with its RR intervals,
// MaxRR to a measurement; one measurement without intervals when it has
// none.
func measurements(h *content.HRData) []radio.HRSData {
	avg := min(h.Average, MaxAverage)
	out := []radio.HRSData{{Average: avg, RRData: []uint16{}}}
	for i, rr := range h.RRData {
		if i > 0 && i%MaxRR == 0 {
			out = append(out, radio.HRSData{Average: avg})
		}
		m := &out[len(out)-1]
		m.RRData = append(m.RRData, rr)
	}
	return out
}
