// Package senseboard makes complete simulated devices: the device core
// with every provider of the interface and the modules built on the
// in-device application interface, on a profile, a clock, a state
// directory for the non-volatile memory, a wearer (scenario) and optional
// recordings to replay. New makes one device; NewFleet makes a number of
// them from the same Config and serves them as a program does, on
// pseudo-terminals, serial ports, TCP and the radio link between
// programs. The calling paths themselves (serial line, phone bridge,
// in-device apps) are in their own packages.
package senseboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"senseboard/app"
	"senseboard/clock"
	"senseboard/content"
	"senseboard/device"
	"senseboard/fault"
	"senseboard/gsp"
	"senseboard/hrs"
	"senseboard/logbook"
	"senseboard/noise"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/provider/afe"
	"senseboard/provider/ble"
	"senseboard/provider/debug"
	"senseboard/provider/eeprom"
	"senseboard/provider/info"
	"senseboard/provider/meas"
	"senseboard/provider/misc"
	"senseboard/provider/system"
	"senseboard/provider/timesvc"
	"senseboard/provider/ui"
	"senseboard/radio"
	"senseboard/replay"
	"senseboard/sensor"
	"senseboard/world"
)

// Config configures a device (New), or each device of a fleet (NewFleet,
// which says how its devices differ).
type Config struct {
	// Profile holds the build settings; nil means the embedded defaults.
	Profile *profile.Profile
	// Clock is the device's time; nil means real time, on a clock of the
	// device's own, which Close closes. A *clock.Virtual lets a test run
	// hours of device time in milliseconds.
	Clock clock.Clock
	// Seed makes everything random about the device and its wearer repeatable.
	Seed int64
	// StateDir holds the non-volatile memory. New requires it: each device
	// needs its own directory, which it locks.
	StateDir string
	// Scenario is the wearer's timeline; nil means the default (standing
	// at rest, gear on).
	Scenario *world.Scenario
	// Replay lists recordings that stand in for the model: each channel a
	// recording has (IMU, ECG, temperature) is played from it.
	Replay []*replay.Recording
	// ReplayHRLeads is how many leads of a replayed record of two the heart
	// rate (/Meas/HR) detects beats on: 1 (0 means 1), the lead the ECG
	// plays, as on the device; or 2, both, through the two-lead detector
	// (replay.Source.SetHRLeads has the trade), which needs a replayed
	// recording of two ECG leads, its second not let go
	// (replay.Recording.DropSecondLead).
	ReplayHRLeads int
	// Faults is a plan of field faults on the device's timeline, after
	// the scenario's own (docs/faults.md); its random and spread times are
	// drawn from Seed.
	Faults fault.Plan
}

// Device is a complete simulated device: the core, with handles on the
// parts that programs and tests drive directly.
type Device struct {
	*device.Core
	Store  *nvm.Store
	EEPROM *nvm.EEPROM
	Wearer *world.Wearer
	Model  *sensor.Model
	// Radio is the device's BLE radio, which centrals connect to.
	Radio *radio.Peripheral

	Info    *info.Provider
	Time    *timesvc.Provider
	BLE     *ble.Provider
	Debug   *debug.Provider
	System  *system.Provider
	Storage *eeprom.Provider
	UI      *ui.Provider
	AFE     *afe.Provider
	IMU     *meas.IMU
	ECG     *meas.ECG
	HR      *meas.HR
	Temp    *meas.Temp

	// Logbook is the data logger and the Logbook, a module that runs as an
	// app; nil when the profile leaves it out.
	Logbook *logbook.Module
	logbook *app.Runtime

	// GSP is the GATT SensorData Protocol module, a module that runs as an
	// app; nil when the profile leaves it out.
	GSP *gsp.Module
	gsp *app.Runtime

	// hrsFeed runs the module that feeds the heart-rate service from
	// /Meas/HR (package hrs); nil when the profile leaves it out.
	hrsFeed *app.Runtime

	// Faults carries out the device's field faults and keeps their ground
	// truth.
	Faults *Faults

	ownClock *clock.Real // the device's clock when Config gave none, which Close closes
}

// New makes and starts a device. When it fails, it has released everything
// it took and changed no state file.
func New(cfg Config) (*Device, error) {
	p := cfg.Profile
	if p == nil {
		p = profile.Default()
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if cfg.StateDir == "" {
		return nil, errors.New("senseboard: Config.StateDir is required: the directory of the device's non-volatile memory")
	}
	d := &Device{}
	if err := d.start(cfg, p); err != nil {
		d.abandon()
		return nil, err
	}
	return d, nil
}

// abandon releases what a failed start took: the apps, the logs, the
// device's providers once the device exists (Core.Close closes them), else
// the debug log's writer; the device's own clock; then the state
// directory.
func (d *Device) abandon() {
	d.stopApps()
	if d.Logbook != nil {
		d.Logbook.Close()
	}
	if d.Core != nil {
		d.Core.Close()
	} else if d.Debug != nil {
		d.Debug.Close()
	}
	if d.ownClock != nil {
		d.ownClock.Close()
	}
	if d.Store != nil {
		d.Store.Close()
	}
}

// start opens the non-volatile memory and builds the device on it.
func (d *Device) start(cfg Config, p *profile.Profile) (err error) {
	c := cfg.Clock
	if c == nil {
		d.ownClock = clock.NewReal()
		c = d.ownClock
	}
	seed := uint64(cfg.Seed)
	if d.Store, err = nvm.Open(cfg.StateDir); err != nil {
		return err
	}
	if d.EEPROM, err = nvm.OpenEEPROM(d.Store); err != nil {
		return err
	}
	d.Wearer = world.New(seed, cfg.Scenario, c.Now())
	d.Model = sensor.NewModel(d.Wearer, seed)
	var imuSrc sensor.IMUSource = d.Model
	var ecgSrc sensor.ECGSource = d.Model
	var tempSrc sensor.TempSource = d.Model
	if len(cfg.Replay) > 0 {
		src := replay.NewSource(c.Now(), d.Model, cfg.Replay...)
		leads := cfg.ReplayHRLeads
		if leads == 0 {
			leads = 1
		}
		if err := src.SetHRLeads(leads); err != nil {
			return fmt.Errorf("senseboard: Config.ReplayHRLeads: %w", err)
		}
		imuSrc, ecgSrc, tempSrc = src, src, src
	}

	if d.Info, err = info.New(p); err != nil {
		return err
	}
	settings, err := radio.OpenSettings(d.Store)
	if err != nil {
		return err
	}
	d.Radio, err = radio.New(radio.Config{
		Address: p.BLE.Address, Serial: p.Serial, Product: p.Product.Name,
		HRS: p.Modules.HRS, NUS: p.Modules.NUS, Advertisement: p.BLE.Advertisement, Seed: seed, Clock: c,
		Airtime: p.BLE.Airtime, NotificationSize: content.Size, Stamps: stamps{},
	}, settings)
	if err != nil {
		return err
	}
	d.BLE = ble.New(d.Radio)
	if d.Debug, err = debug.New(d.Store, d.EEPROM, p); err != nil {
		return err
	}
	d.Time = timesvc.New()
	d.Storage = eeprom.New(d.EEPROM)
	d.UI = ui.New()
	d.ECG = meas.NewECG(ecgSrc)
	d.HR = meas.NewHR(ecgSrc)
	d.Temp = meas.NewTemp(tempSrc)
	d.AFE = afe.New(afe.Config{Electrodes: ecgSrc, ECG: d.ECG, HR: d.HR})
	d.IMU = meas.NewIMU(imuSrc)
	d.System = system.New(system.Config{Wearer: d.Wearer, FrontEnd: d.AFE, Detectors: d.IMU, Radio: d.BLE, LED: d.UI})
	d.IMU.ReportTo(d.System) // which asks the detectors in turn

	providers := []device.Provider{
		d.Info, d.Time, d.BLE, d.Debug, d.System, d.Storage, d.UI, d.AFE, misc.Provider{},
		d.IMU, d.ECG, d.HR, d.Temp,
	}
	var apps []string // the modules that run as apps and serve resources
	if p.Modules.Logbook {
		if d.Logbook, err = logbook.New(d.Store, p.Logbook.Capacity, d.Time); err != nil {
			return err
		}
		apps = append(apps, logbook.ModuleName)
	}
	d.Core, err = device.New(device.Config{
		Profile:    p,
		Clock:      c,
		ClockDrift: clockDrift(seed, d.Wearer.Scenario()),
		Providers:  providers,
		AppModules: apps,
	})
	if err != nil {
		return err
	}
	if err = d.Radio.AddService(radio.NewBatteryService(d.System.EnergyLevel)); err != nil {
		return fmt.Errorf("battery service: %w", err)
	}
	if d.Logbook != nil {
		if d.logbook, err = app.Run(d.Core, d.Logbook); err != nil {
			return fmt.Errorf("module %s: %w", logbook.ModuleName, err)
		}
	}
	if p.Modules.GSP {
		d.GSP = gsp.New()
		if d.gsp, err = app.Run(d.Core, d.GSP); err != nil {
			return fmt.Errorf("module %s: %w", gsp.Name, err)
		}
		if err = d.Radio.AddService(d.GSP.Service()); err != nil {
			return fmt.Errorf("module %s: %w", gsp.Name, err)
		}
	}
	if p.Modules.HRSFeed {
		if d.hrsFeed, err = app.Run(d.Core, hrs.New()); err != nil {
			return fmt.Errorf("module %s: %w", hrs.Name, err)
		}
	}

	d.Faults = newFaults(d, c, slices.Concat(d.Wearer.Scenario().Faults, cfg.Faults), seed)
	return nil
}

// clockDrift returns the device oscillator's rate error in ppm: the
// scenario's when it sets one, otherwise drawn from the seed, normally
// distributed with a standard deviation of 8 ppm and kept within the
// 20 ppm accuracy /Time/Detailed reports.
func clockDrift(seed uint64, sc *world.Scenario) float64 {
	if sc.ClockDrift != nil {
		return *sc.ClockDrift
	}
	return max(-20, min(20, 8*noise.Gauss(noise.Key(seed, streamClock, 0))))
}

// stamps reads and changes notifications' timestamps for the radio.
type stamps struct{}

func (stamps) Timestamp(c any) (uint32, bool)     { return content.Timestamp(c) }
func (stamps) WithTimestamp(c any, ts uint32) any { return content.WithTimestamp(c, ts) }

// streamClock is the noise stream of the device's oscillator.
const streamClock = 0xC10C

// stopApps stops the modules that run as apps for good: their contexts
// end, and with them the holds they had on a virtual clock.
func (d *Device) stopApps() {
	for _, rt := range []*app.Runtime{d.hrsFeed, d.gsp, d.logbook} {
		if rt != nil {
			rt.Stop()
		}
	}
}

// Close ends every subscription, closes the device's own clock (when Config
// gave none), writes what the non-volatile memory still holds in memory,
// and releases the state directory.
func (d *Device) Close() error {
	if d.Faults != nil {
		d.Faults.close()
	}
	d.stopApps()
	var err error
	if d.Logbook != nil {
		err = d.Logbook.Close()
	}
	if cerr := d.Core.Close(); err == nil { // closes the providers
		err = cerr
	}
	if d.ownClock != nil {
		d.ownClock.Close()
	}
	if cerr := d.Store.Close(); err == nil {
		err = cerr
	}
	return err
}

// Inject makes something happen to the wearer now: an event as a
// scenario's events give them (see world.ParseInjection).
func (d *Device) Inject(e world.Event) {
	e.At = d.Clock().Now()
	d.Wearer.Inject(e)
}

// InjectJSON makes something happen to the wearer now: an event as JSON,
// as a scenario gives it ({"gear": "off"}). It returns the event's kind,
// or what is wrong with the event.
func (d *Device) InjectJSON(event json.RawMessage) (string, error) {
	e, err := world.ParseInjection(event)
	if err != nil {
		return "", err
	}
	d.Inject(e)
	return e.Kind.String(), nil
}
