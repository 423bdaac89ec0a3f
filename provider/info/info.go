// Package info provides /Info and /Info/App: the device's identity, versions
// and addresses, and the application with its modules.
package info

import (
	"encoding/json"
	"fmt"
	"strings"

	"senseboard/device"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
)

// APILevel is the DeviceInfo apiLevel.
const APILevel = "1"

// DeviceInfo is the content of GET /Info.
type DeviceInfo struct {
	ManufacturerName      string        `json:"manufacturerName"`
	BrandName             *string       `json:"brandName"`
	ProductName           string        `json:"productName"`
	Variant               string        `json:"variant"`
	Design                *string       `json:"design"`
	HWCompatibilityID     string        `json:"hwCompatibilityId"`
	HWConfig              string        `json:"hwConfig"`
	Serial                string        `json:"serial"`
	PCBASerial            string        `json:"pcbaSerial"`
	SW                    string        `json:"sw"`
	HW                    string        `json:"hw"`
	AdditionalVersionInfo []VersionInfo `json:"additionalVersionInfo"`
	AddressInfo           []AddressInfo `json:"addressInfo"`
	APILevel              string        `json:"apiLevel"`

	encoded []byte
}

// AppendJSON appends the encoding made when the record was built: the
// record never changes, so GET /Info costs no encoding work.
func (i *DeviceInfo) AppendJSON(b []byte) []byte { return append(b, i.encoded...) }

// VersionInfo names a version.
type VersionInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// AddressInfo is a hardware address, XX-XX-XX-XX-XX-XX.
type AddressInfo struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

// AppInfo is the content of GET /Info/App.
type AppInfo struct {
	Name    string      `json:"name"`
	Version string      `json:"version"`
	Company string      `json:"company"`
	Modules *ModuleList `json:"modules"`
}

// ModuleList lists the application's modules.
type ModuleList struct {
	Data []ModuleStatus `json:"data"`
}

// ModuleStatus says whether a module is enabled.
type ModuleStatus struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

// Provider serves /Info and /Info/App.
type Provider struct {
	info *DeviceInfo
	app  *AppInfo
}

// New returns the provider for a profile.
func New(p *profile.Profile) (*Provider, error) {
	dfu, err := radio.DFUAddress(p.BLE.Address)
	if err != nil {
		return nil, err
	}
	info := &DeviceInfo{
		ManufacturerName:  p.Product.Manufacturer,
		BrandName:         p.Product.Brand,
		ProductName:       p.Product.Name,
		Variant:           p.Product.Variant,
		Design:            p.Product.Design,
		HWCompatibilityID: p.Product.HWCompatibilityID,
		HWConfig:          p.Product.HWConfig,
		Serial:            p.Serial,
		PCBASerial:        p.Product.PCBASerial,
		SW:                p.Product.SW,
		HW:                p.Product.HW,
		AddressInfo: []AddressInfo{
			{Name: "BLE", Address: strings.ReplaceAll(p.BLE.Address, ":", "-")},
			{Name: "DFU-BLE", Address: strings.ReplaceAll(dfu, ":", "-")},
		},
		APILevel: APILevel,
	}
	if info.encoded, err = json.Marshal(info); err != nil {
		return nil, fmt.Errorf("encode DeviceInfo: %w", err)
	}
	m := p.Modules
	app := &AppInfo{
		Name:    p.App.Name,
		Version: p.App.Version,
		Company: p.App.Company,
		Modules: &ModuleList{Data: []ModuleStatus{
			{"DataLogger", m.Logbook},
			{"Logbook", m.Logbook},
			{"LedService", true},
			{"IndicationService", true},
			{"BleService", true},
			{"EepromService", true},
			{"DebugLogService", p.Debug.Log.Enabled},
			{"HeapService", m.Heap},
			{"BleHrsService", m.HRS},
			{"BleNusService", m.NUS},
			{"GattSensorDataService", m.GSP},
		}},
	}
	return &Provider{info: info, app: app}, nil
}

// Info returns the device information.
func (p *Provider) Info() *DeviceInfo { return p.info }

// Register installs GET /Info and GET /Info/App.
func (p *Provider) Register(d *device.Core) error {
	d.HandleFunc("/Info", resource.Get, func(*resource.Request) resource.Response { return resource.OK(p.info) })
	d.HandleFunc("/Info/App", resource.Get, func(*resource.Request) resource.Response { return resource.OK(p.app) })
	return nil
}
