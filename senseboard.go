// Package senseboard assembles complete simulated devices: the device core
// with every provider of the interface, on a profile, a clock and a state
// directory. It is the entry point for Go programs that run devices in
// process; the calling paths (serial line, phone bridge, in-device apps) are
// in their own packages.
package senseboard

import (
	"fmt"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/provider/info"
	"senseboard/provider/timesvc"
)

// Config configures a device.
type Config struct {
	// Profile holds the build settings; nil means the embedded defaults.
	Profile *profile.Profile
	// Clock is the device's time; nil means real time. A *clock.Virtual lets
	// a test run hours of device time in milliseconds.
	Clock clock.Clock
	// Seed makes everything random about the device repeatable.
	Seed int64
}

// Device is a complete simulated device: the core, with handles on the
// providers that programs and tests drive directly.
type Device struct {
	*device.Device
	Info *info.Provider
	Time *timesvc.Provider
}

// New makes and starts a device.
func New(cfg Config) (*Device, error) {
	p := cfg.Profile
	if p == nil {
		p = profile.Default()
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	inf, err := info.New(p)
	if err != nil {
		return nil, err
	}
	d := &Device{Info: inf, Time: timesvc.New()}
	d.Device, err = device.New(device.Config{
		Profile:   p,
		Clock:     cfg.Clock,
		Providers: []device.Provider{d.Info, d.Time},
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}
