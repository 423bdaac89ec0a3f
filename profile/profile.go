// Package profile owns the device profile: the build settings of the
// specification (debug message buffer, debug log area, optional modules,
// subscription limit) and the product data (serial number, names, versions,
// BLE address). Every setting has a default; a profile file overrides some of
// them, and a profile that breaks a stated limit is refused, naming the setting.
package profile

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Version is the software version the device reports.
const Version = "1.0.0"

// EEPROM geometry: two chips of ChipSize bytes, addressed as one space in
// which chip 1 starts at ChipSize.
const (
	ChipSize = 131072
	Chips    = 2
)

// Profile is a device's build settings and product data.
type Profile struct {
	Serial            string  `yaml:"serial"`
	Product           Product `yaml:"product"`
	App               App     `yaml:"app"`
	BLE               BLE     `yaml:"ble"`
	Modules           Modules `yaml:"modules"`
	Debug             Debug   `yaml:"debug"`
	Heap              Heap    `yaml:"heap"`
	Logbook           Logbook `yaml:"logbook"`
	Binary            Binary  `yaml:"binary"`
	SubscriptionLimit int     `yaml:"subscriptionLimit"`
	// RequestPool is how many requests may time out (their answers lost
	// on a link that dropped) before the device's request pool is
	// exhausted and it answers 429 to every request until a reset, as the
	// family's firmware does; 0 (the default) never exhausts it.
	RequestPool int `yaml:"requestPool"`
}

// Binary holds the choices of the content's binary form, over GSP and in
// the data logger's logs, where the family's clients disagree.
type Binary struct {
	// TempOrder is the order of /Meas/Temp's fields: TempTimestampFirst
	// or TempMeasurementFirst.
	TempOrder string `yaml:"tempOrder"`
}

// Orders of /Meas/Temp's fields in its binary form (binary.tempOrder).
const (
	// TempTimestampFirst is the definition's order, which current sensors
	// send and Movesense Commander reads: uint32 Timestamp, float32
	// Measurement.
	TempTimestampFirst = "timestampFirst"
	// TempMeasurementFirst is the order movesense-py reads: float32
	// Measurement, uint32 Timestamp.
	TempMeasurementFirst = "measurementFirst"
)

// TempMeasurementFirst reports whether /Meas/Temp's binary form puts the
// Measurement first.
func (b Binary) TempMeasurementFirst() bool { return b.TempOrder == TempMeasurementFirst }

// DefaultLogCapacity is the family's log storage: the 384 kB data EEPROM
// of its standard sensors.
const DefaultLogCapacity = 384 * 1024

// Logbook holds the log storage's build settings.
type Logbook struct {
	// Capacity is the bytes the logs may take in the non-volatile memory;
	// when they would take more, the oldest logs are erased.
	Capacity int `yaml:"capacity"`
}

// Product is the DeviceInfo data.
type Product struct {
	Manufacturer      string  `yaml:"manufacturer"`
	Brand             *string `yaml:"brand"`
	Name              string  `yaml:"name"`
	Variant           string  `yaml:"variant"`
	Design            *string `yaml:"design"`
	HWCompatibilityID string  `yaml:"hwCompatibilityId"`
	HWConfig          string  `yaml:"hwConfig"`
	PCBASerial        string  `yaml:"pcbaSerial"`
	HW                string  `yaml:"hw"`
	// SW is the software version /Info reports; by default senseboard's
	// (Version).
	SW string `yaml:"sw"`
}

// App is the AppInfo data.
type App struct {
	Name    string `yaml:"name"`
	Version string `yaml:"version"`
	Company string `yaml:"company"`
}

// BLE holds the radio's settings.
type BLE struct {
	// Address is the device's BLE address, XX:XX:XX:XX:XX:XX; by default a
	// static random address derived from the serial number.
	Address string `yaml:"address"`
	// Airtime is the throughput model of a connection.
	Airtime Airtime `yaml:"airtime"`
	// Advertisement is the layout of the default advertisement:
	// AdvertisementDefault or AdvertisementMovesense.
	Advertisement string `yaml:"advertisement"`
}

// Layouts of the default advertisement (ble.advertisement).
const (
	// AdvertisementDefault is the specification's: the family's
	// manufacturer field, the platform's 128-bit service UUID, and the
	// heart-rate service's 16-bit UUID while HRS runs.
	AdvertisementDefault = "default"
	// AdvertisementMovesense is what scanners see from current sensors of
	// the family: the manufacturer field, and the 16-bit service UUIDs
	// 0xFDF3 and, while HRS runs, 0x180D, without the 128-bit UUID.
	AdvertisementMovesense = "movesense"
)

// Airtime is the throughput model of a BLE connection, which package
// radio runs: what the air carries per connection event, and what the
// device loses when a subscription asks for more. The connection interval
// is the connection's own (see package radio).
type Airtime struct {
	// Enabled limits the throughput over BLE, as the hardware has it; off,
	// everything the device sends leaves at once.
	Enabled bool `yaml:"enabled"`
	// PacketsPerEvent is the link-layer packets a connection event
	// carries from the device, 1..MaxPacketsPerEvent.
	PacketsPerEvent int `yaml:"packetsPerEvent"`
	// DataLength is a link-layer packet's payload bytes, MinDataLength
	// (BLE 4.0 and 4.1) to MaxDataLength (the data length extension).
	DataLength int `yaml:"dataLength"`
	// TXQueue is the notifications that wait for the air at most,
	// MinTXQueue..MaxTXQueue; streams leave the last place to command
	// answers and log transfers.
	TXQueue int `yaml:"txQueue"`
	// MissedEvents is the share of connection events that carry nothing,
	// 0..MaxMissedEvents.
	MissedEvents float64 `yaml:"missedEvents"`
}

// Limits of the throughput model's settings.
const (
	MaxPacketsPerEvent = 32
	MinDataLength      = 27
	MaxDataLength      = 251
	MinTXQueue         = 2
	MaxTXQueue         = 64
	MaxMissedEvents    = 0.5
)

// ErrAirtime is a throughput model whose settings break their limits.
var ErrAirtime = errors.New("BLE throughput model setting out of range")

// Validate checks the model's settings when it is enabled, naming the
// profile setting that breaks its limits.
func (a *Airtime) Validate() error {
	if !a.Enabled {
		return nil
	}
	switch {
	case a.PacketsPerEvent < 1 || a.PacketsPerEvent > MaxPacketsPerEvent:
		return fmt.Errorf("%w: ble.airtime.packetsPerEvent %d: 1..%d", ErrAirtime, a.PacketsPerEvent, MaxPacketsPerEvent)
	case a.DataLength < MinDataLength || a.DataLength > MaxDataLength:
		return fmt.Errorf("%w: ble.airtime.dataLength %d: %d..%d bytes", ErrAirtime, a.DataLength, MinDataLength, MaxDataLength)
	case a.TXQueue < MinTXQueue || a.TXQueue > MaxTXQueue:
		return fmt.Errorf("%w: ble.airtime.txQueue %d: %d..%d notifications (streams leave the last place to command answers and log transfers)",
			ErrAirtime, a.TXQueue, MinTXQueue, MaxTXQueue)
	case !(a.MissedEvents >= 0 && a.MissedEvents <= MaxMissedEvents):
		return fmt.Errorf("%w: ble.airtime.missedEvents %v: 0..%v", ErrAirtime, a.MissedEvents, MaxMissedEvents)
	}
	return nil
}

// DefaultAirtime is the throughput model of the default profile: a phone
// that takes 4 packets per connection event with the data length
// extension, a transmit queue of 20 notifications, and 2% of the
// connection events missed.
//
// The queue of 20 follows the family's firmware, not the SoftDevice's
// own queue, whose size the firmware does not publish: the GATT
// SensorData sample gives its application 20 outstanding requests
// (numberOfRequests in its app_root.yaml), and each notification it
// forwards is one; the library's radio port has not dropped sends made
// at the same time since 1.5.0; and the family's release notes name the
// air's bandwidth and the ECG front end's FIFO as what loses samples, not
// streams that fall due together. With 8 places, seven streams of one
// sensor lost samples at any interval. See docs/behaviour.md, BLE
// throughput.
var DefaultAirtime = Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: MaxDataLength, TXQueue: 20, MissedEvents: 0.02}

// Modules says which optional modules are built in.
type Modules struct {
	HRS bool `yaml:"hrs"` // BLE heart-rate service, /Comm/Ble/HRS
	// HRSFeed feeds the heart-rate service from /Meas/HR while a central
	// has its notifications on, as the family's firmware does (package
	// hrs); without it only what apps post to /Comm/Ble/HRS is notified.
	// It needs HRS.
	HRSFeed bool `yaml:"hrsFeed"`
	NUS     bool `yaml:"nus"`  // BLE serial service, /Comm/Ble/NUS
	Heap    bool `yaml:"heap"` // heap statistics, /System/Memory/Heap
	GSP     bool `yaml:"gsp"`  // GATT SensorData Protocol service (package gsp)
	// Logbook is the offline recording: DataLogger and Logbook, /Mem/...
	Logbook bool `yaml:"logbook"`
}

// Enabled reports whether the named module (the x-module of a definition
// file: HRS, NUS, Heap) is enabled.
func (m Modules) Enabled(name string) bool {
	switch strings.ToLower(name) {
	case "hrs":
		return m.HRS
	case "nus":
		return m.NUS
	case "heap":
		return m.Heap
	case "gsp":
		return m.GSP
	case "logbook":
		return m.Logbook
	}
	return false
}

// Debug holds the debug service's build settings.
type Debug struct {
	// MessageLines and MessageChars size the debug message buffer: at most
	// this many stored lines, and characters including one terminator each.
	MessageLines int     `yaml:"messageLines"`
	MessageChars int     `yaml:"messageChars"`
	Log          LogArea `yaml:"log"`
}

// LogArea is the debug log's storage area in the EEPROM.
type LogArea struct {
	Enabled bool `yaml:"enabled"`
	// Offset is the area's byte address in the EEPROM space (chip 0 at 0,
	// chip 1 at 131072), a multiple of 256; the area lies within one chip.
	Offset int `yaml:"offset"`
	// Size is the area's length in bytes, 256..65535.
	Size int `yaml:"size"`
}

// Heap sizes the modelled heap that /System/Memory/Heap reports.
type Heap struct {
	Size int `yaml:"size"`
}

// Default returns the profile of a device on embedded defaults.
func Default() *Profile {
	return &Profile{
		Serial: "000123",
		Product: Product{
			Manufacturer:      "Senseboard",
			Name:              "Senseboard",
			Variant:           "SB-1",
			HWCompatibilityID: "A",
			HWConfig:          "IMU9-ECG",
			PCBASerial:        "P000123",
			HW:                "1.0",
			SW:                Version,
		},
		App:     App{Name: "senseboard", Version: Version, Company: "senseboard"},
		BLE:     BLE{Airtime: DefaultAirtime, Advertisement: AdvertisementDefault},
		Modules: Modules{Heap: true, GSP: true, Logbook: true},
		Logbook: Logbook{Capacity: DefaultLogCapacity},
		Binary:  Binary{TempOrder: TempTimestampFirst},
		Debug: Debug{
			MessageLines: 6,
			MessageChars: 120,
			Log:          LogArea{Enabled: false, Offset: 2*ChipSize - 4096, Size: 4096},
		},
		Heap:              Heap{Size: 32768},
		SubscriptionLimit: 32,
	}
}

// named holds the built-in profiles by name: YAML over the defaults, as
// a profile file.
//
//go:embed named/*.yaml
var named embed.FS

// Names returns the names of the built-in profiles, in order.
func Names() []string {
	entries, _ := named.ReadDir("named")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return out
}

// Lookup returns the built-in profile of that name (see Names), or else
// reads the profile file at that path (Load).
func Lookup(nameOrPath string) (*Profile, error) {
	if slices.Contains(Names(), nameOrPath) {
		data, err := named.ReadFile("named/" + nameOrPath + ".yaml")
		if err != nil {
			return nil, err
		}
		p, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", nameOrPath, err)
		}
		return p, nil
	}
	return Load(nameOrPath)
}

// Load reads a profile file over the defaults. Unknown settings are errors.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// Parse reads profile YAML over the defaults and validates the result.
func Parse(data []byte) (*Profile, error) {
	p := Default()
	p.Product.PCBASerial = "" // follows the serial unless the file sets it
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	} else if err == nil {
		var more yaml.Node
		if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
			return nil, errors.New("more than one YAML document; a profile is one")
		}
	}
	if p.Product.PCBASerial == "" {
		p.Product.PCBASerial = "P" + p.Serial
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// SerialAt returns the serial number of the i-th device of a fleet whose
// first device has serial first: the number first counts up by i, keeping
// its width (000123, 000124, ...). first must be a decimal number.
func SerialAt(first string, i int) (string, error) {
	n, err := strconv.ParseUint(first, 10, 64)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%0*d", len(first), n+uint64(i)), nil
}

// WithSerial returns a copy of the profile for another serial number: the
// derived values (PCBA serial, BLE address) follow it unless they were set.
func (p *Profile) WithSerial(serial string) *Profile {
	q := *p
	if q.Product.PCBASerial == "P"+p.Serial {
		q.Product.PCBASerial = "P" + serial
	}
	if q.BLE.Address == DeriveAddress(p.Serial) {
		q.BLE.Address = ""
	}
	q.Serial = serial
	return &q
}

var (
	serialRE  = regexp.MustCompile(`^[A-Za-z0-9]{1,16}$`)
	addressRE = regexp.MustCompile(`^[0-9A-F]{2}(:[0-9A-F]{2}){5}$`)
)

// Validate checks every stated limit and fills derived defaults, naming the
// first setting that breaks a limit.
func (p *Profile) Validate() error {
	if !serialRE.MatchString(p.Serial) {
		return fmt.Errorf("serial %q: 1 to 16 letters or digits", p.Serial)
	}
	for name, v := range map[string]string{
		"product.manufacturer": p.Product.Manufacturer, "product.name": p.Product.Name,
		"product.variant": p.Product.Variant, "product.hwCompatibilityId": p.Product.HWCompatibilityID,
		"product.hwConfig": p.Product.HWConfig, "product.pcbaSerial": p.Product.PCBASerial, "product.hw": p.Product.HW,
		"product.sw": p.Product.SW, "app.name": p.App.Name, "app.version": p.App.Version, "app.company": p.App.Company,
	} {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("%s: must not be empty", name)
		}
	}
	if p.BLE.Address == "" {
		p.BLE.Address = DeriveAddress(p.Serial)
	}
	p.BLE.Address = strings.ToUpper(p.BLE.Address)
	if !addressRE.MatchString(p.BLE.Address) {
		return fmt.Errorf("ble.address %q: form XX:XX:XX:XX:XX:XX", p.BLE.Address)
	}
	if err := p.BLE.Airtime.Validate(); err != nil {
		return err
	}
	if a := p.BLE.Advertisement; a != AdvertisementDefault && a != AdvertisementMovesense {
		return fmt.Errorf("ble.advertisement %q: %s or %s", a, AdvertisementDefault, AdvertisementMovesense)
	}
	if p.Modules.HRSFeed && !p.Modules.HRS {
		return errors.New("modules.hrsFeed: feeds the heart rate service, which needs modules.hrs: true")
	}
	if o := p.Binary.TempOrder; o != TempTimestampFirst && o != TempMeasurementFirst {
		return fmt.Errorf("binary.tempOrder %q: %s or %s", o, TempTimestampFirst, TempMeasurementFirst)
	}
	d := p.Debug
	if d.MessageLines < 1 || d.MessageLines > 1000 {
		return fmt.Errorf("debug.messageLines %d: 1..1000", d.MessageLines)
	}
	if d.MessageChars < 2 || d.MessageChars > 65536 {
		return fmt.Errorf("debug.messageChars %d: 2..65536", d.MessageChars)
	}
	l := d.Log
	if l.Offset < 0 || l.Offset%256 != 0 {
		return fmt.Errorf("debug.log.offset %d: a multiple of 256", l.Offset)
	}
	if l.Size < 256 || l.Size > 65535 {
		return fmt.Errorf("debug.log.size %d: at least 256 and below 65536", l.Size)
	}
	if l.Offset+l.Size > Chips*ChipSize || l.Offset/ChipSize != (l.Offset+l.Size-1)/ChipSize {
		return fmt.Errorf("debug.log.offset %d with size %d: the area must lie within one EEPROM chip (0..%d or %d..%d)",
			l.Offset, l.Size, ChipSize-1, ChipSize, Chips*ChipSize-1)
	}
	if p.SubscriptionLimit < 1 || p.SubscriptionLimit > 10000 {
		return fmt.Errorf("subscriptionLimit %d: 1..10000", p.SubscriptionLimit)
	}
	if p.RequestPool < 0 || p.RequestPool > 10000 {
		return fmt.Errorf("requestPool %d: 0 (never exhausted) or 1..10000 requests that time out", p.RequestPool)
	}
	if c := p.Logbook.Capacity; c < 4096 || c > 1<<30 {
		return fmt.Errorf("logbook.capacity %d: 4096..1073741824 bytes", c)
	}
	if p.Heap.Size < 4096 || p.Heap.Size > 1<<24 {
		return fmt.Errorf("heap.size %d: 4096..16777216", p.Heap.Size)
	}
	return nil
}

// DeriveAddress returns the static random BLE address of a serial number:
// stable, distinct for distinct serials in practice, with the two top bits set
// as static random addresses have them.
func DeriveAddress(serial string) string {
	h := fnv.New64a()
	h.Write([]byte("senseboard/" + serial))
	s := h.Sum64()
	b := make([]byte, 6)
	for i := range b {
		b[i] = byte(s >> (8 * i))
	}
	b[0] |= 0xC0
	return fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X", b[0], b[1], b[2], b[3], b[4], b[5])
}
