package radio

import (
	"errors"
	"fmt"
)

// AD structure types the device's packets use.
const (
	ADFlags            = 0x01
	ADUUID16Complete   = 0x03
	ADUUID128Complete  = 0x07
	ADShortName        = 0x08
	ADCompleteName     = 0x09
	ADManufacturerData = 0xFF
)

// MaxPacket is the length of an advertising or scan-response packet.
const MaxPacket = 31

// PlatformUUID is the device platform's 128-bit service UUID, in the byte
// order it is advertised in.
var PlatformUUID = [16]byte{0x41, 0x00, 0x74, 0x70, 0x63, 0x88, 0x7A, 0xB5, 0xCC, 0x49, 0x31, 0x82, 0x90, 0x30, 0x35, 0x61}

// HRSUUID is the 16-bit UUID of the Heart Rate service.
const HRSUUID = 0x180D

// FamilyUUID is the member-assigned 16-bit service UUID that current
// sensors of the family advertise, beside 0x180D, as BLE scanners show them.
const FamilyUUID = 0xFDF3

// CompanyID is the Bluetooth SIG company identifier in the manufacturer data:
// 0xFFFF, the value reserved for tests and for devices without an assigned one.
const CompanyID = 0xFFFF

// ManufacturerFormat is the first data byte of the manufacturer field
// after the company identifier.
const ManufacturerFormat = 0x01

// Manufacturer data flags (the last byte of the manufacturer field).
const (
	FlagPassKey = 1 << 0 // pairing needs the static pass key
	FlagBonded  = 1 << 1 // a central is bonded
	FlagHRS     = 1 << 2 // the heart-rate service runs
)

// DiscoverableFlags are the AD flags of the device: LE general
// discoverable, BR/EDR not supported.
const DiscoverableFlags = 0x06

// AD is one advertising data structure.
type AD struct {
	Type byte
	Data []byte
}

// ParseAD splits a packet into AD structures: a length byte (counting the
// type and the data), the type, the data. A zero length ends the significant
// part (the rest must be zeros). Data aliases p.
func ParseAD(p []byte) ([]AD, error) {
	if len(p) > MaxPacket {
		return nil, fmt.Errorf("%d bytes; a packet holds at most %d", len(p), MaxPacket)
	}
	var out []AD
	for i := 0; i < len(p); {
		n := int(p[i])
		if n == 0 {
			for _, b := range p[i:] {
				if b != 0 {
					return nil, fmt.Errorf("byte %d: data after a zero-length structure", i)
				}
			}
			break
		}
		if i+1+n > len(p) {
			return nil, fmt.Errorf("byte %d: structure of length %d runs past the packet's end (%d bytes)", i, n, len(p))
		}
		out = append(out, AD{Type: p[i+1], Data: p[i+2 : i+1+n]})
		i += 1 + n
	}
	return out, nil
}

// Packets are the advertisement and scan response a device sends.
type Packets struct {
	Adv, ScanResp []byte
}

// Advertisement is what a device's packets say, as a scanner reads them.
type Advertisement struct {
	// Flags are the AD flags; 0 leaves the structure out.
	Flags byte
	// Manufacturer says the packet carries the device family's
	// manufacturer field, with the three flags below.
	Manufacturer bool
	// PassKey says pairing needs the device's static pass key.
	PassKey bool
	// Bonded says a central is bonded with the device.
	Bonded bool
	// HRS says the device runs the heart-rate service.
	HRS bool
	// Services16 and Services128 are the complete lists of service UUIDs.
	Services16  []uint16
	Services128 [][16]byte
	// Name is the local name of the scan response; ShortName says it is
	// shortened.
	Name      string
	ShortName bool
}

// DefaultAdvertisement is what a device advertises unless told otherwise:
// discoverable, the manufacturer field with its flags, the platform's
// service UUID (and the heart-rate service's while it runs), and the
// product name and serial number separated by a space as local name.
func DefaultAdvertisement(product, serial string, passKey, bonded, hrs bool) Advertisement {
	a := Advertisement{Flags: DiscoverableFlags, Manufacturer: true, PassKey: passKey, Bonded: bonded, HRS: hrs,
		Services128: [][16]byte{PlatformUUID}, Name: product + " " + serial}
	if hrs {
		a.Services16 = []uint16{HRSUUID}
	}
	return a
}

// FamilyAdvertisement is what current sensors of the family advertise, as
// scanners see them: DefaultAdvertisement with the 16-bit service UUIDs
// FamilyUUID and, while HRS runs, HRSUUID in place of the platform's
// 128-bit UUID (which, with the manufacturer field, would leave no room
// for them).
func FamilyAdvertisement(product, serial string, passKey, bonded, hrs bool) Advertisement {
	a := DefaultAdvertisement(product, serial, passKey, bonded, hrs)
	a.Services128 = nil
	a.Services16 = []uint16{FamilyUUID}
	if hrs {
		a.Services16 = append(a.Services16, HRSUUID)
	}
	return a
}

// AppendAdv appends the advertising packet: the flags, the manufacturer
// field (company identifier, format, flags), the 128-bit and then the
// 16-bit service UUIDs. Structures that do not fit in MaxPacket are left out.
func (a *Advertisement) AppendAdv(dst []byte) []byte {
	start := len(dst)
	add := func(typ byte, data ...byte) {
		if len(dst)-start+2+len(data) <= MaxPacket {
			dst = append(append(dst, byte(1+len(data)), typ), data...)
		}
	}
	if a.Flags != 0 {
		add(ADFlags, a.Flags)
	}
	if a.Manufacturer {
		var f byte
		if a.PassKey {
			f |= FlagPassKey
		}
		if a.Bonded {
			f |= FlagBonded
		}
		if a.HRS {
			f |= FlagHRS
		}
		add(ADManufacturerData, byte(CompanyID&0xFF), byte(CompanyID>>8), ManufacturerFormat, f)
	}
	if len(a.Services128) > 0 {
		var d []byte
		for _, u := range a.Services128 {
			d = append(d, u[:]...)
		}
		add(ADUUID128Complete, d...)
	}
	if len(a.Services16) > 0 {
		var d []byte
		for _, u := range a.Services16 {
			d = append(d, byte(u), byte(u>>8))
		}
		add(ADUUID16Complete, d...)
	}
	return dst
}

// AppendScanResp appends the scan response packet: the local name,
// shortened when it does not fit.
func (a *Advertisement) AppendScanResp(dst []byte) []byte {
	if a.Name == "" {
		return dst
	}
	name, typ := a.Name, byte(ADCompleteName)
	if a.ShortName {
		typ = ADShortName
	}
	if len(name) > MaxPacket-2 {
		name, typ = name[:MaxPacket-2], ADShortName
	}
	return append(append(dst, byte(1+len(name)), typ), name...)
}

// Packets returns the advertising and scan response packets.
func (a *Advertisement) Packets() Packets {
	return Packets{Adv: a.AppendAdv(nil), ScanResp: a.AppendScanResp(nil)}
}

// ParseAdvertisement reads what the packets (an advertisement and a scan
// response, in any number) say. A packet that is not a sequence of AD
// structures adds nothing; the error names the first such packet, and the
// others are read all the same.
func ParseAdvertisement(packets ...[]byte) (Advertisement, error) {
	var a Advertisement
	var errs []error
	for i, p := range packets {
		ads, err := ParseAD(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("packet %d: %w", i+1, err))
			continue
		}
		for _, ad := range ads {
			a.add(ad)
		}
	}
	return a, errors.Join(errs...)
}

func (a *Advertisement) add(ad AD) {
	switch ad.Type {
	case ADFlags:
		if len(ad.Data) > 0 {
			a.Flags = ad.Data[0]
		}
	case ADManufacturerData:
		if len(ad.Data) >= 4 && ad.Data[2] == ManufacturerFormat {
			a.Manufacturer = true
			a.PassKey = ad.Data[3]&FlagPassKey != 0
			a.Bonded = ad.Data[3]&FlagBonded != 0
			a.HRS = ad.Data[3]&FlagHRS != 0
		}
	case ADUUID16Complete:
		for i := 0; i+1 < len(ad.Data); i += 2 {
			a.Services16 = append(a.Services16, uint16(ad.Data[i])|uint16(ad.Data[i+1])<<8)
		}
	case ADUUID128Complete:
		for i := 0; i+16 <= len(ad.Data); i += 16 {
			a.Services128 = append(a.Services128, [16]byte(ad.Data[i:i+16]))
		}
	case ADCompleteName, ADShortName:
		a.Name, a.ShortName = string(ad.Data), ad.Type == ADShortName
	}
}

// checkPacket validates a custom packet of AdvSettings, whose bytes come
// as integers.
func checkPacket(field string, p []int) ([]byte, error) {
	b := make([]byte, len(p))
	for i, v := range p {
		if v < 0 || v > 255 {
			return nil, fmt.Errorf("%s byte %d is %d; bytes are 0..255", field, i, v)
		}
		b[i] = byte(v)
	}
	ads, err := ParseAD(b)
	if err != nil {
		return nil, fmt.Errorf("%s is not a sequence of AD structures: %w", field, err)
	}
	if field == "AdvPacket" && len(ads) == 0 {
		return nil, errors.New("AdvPacket is empty; give null for the default content")
	}
	return b, nil
}
