package ble

import (
	"errors"
	"fmt"
)

// AD structure types used by the default packets.
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

// CompanyID is the Bluetooth SIG company identifier in the manufacturer data:
// 0xFFFF, the value reserved for tests and for devices without an assigned one.
const CompanyID = 0xFFFF

// Manufacturer data flags (the last byte of the manufacturer field).
const (
	FlagPassKey = 1 << 0 // pairing needs the static pass key
	FlagBonded  = 1 << 1 // a central is bonded
	FlagHRS     = 1 << 2 // the heart-rate service runs
)

// ManufacturerFormat is the first data byte of the manufacturer field.
const ManufacturerFormat = 0x01

// AD is one advertising data structure.
type AD struct {
	Type byte
	Data []byte
}

// ParseAD splits a packet into AD structures: a length byte (counting the
// type and the data), the type, the data. A zero length ends the significant
// part (the rest must be zeros).
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

// DefaultAdv builds the default advertisement: flags 0x06 (LE general
// discoverable, BR/EDR not supported); the 6-byte manufacturer field (company
// id, format 0x01, flags); the complete list of 128-bit service UUIDs with
// the platform UUID; and, when the heart-rate service runs, the complete list
// of 16-bit service UUIDs with 0x180D.
func DefaultAdv(flags byte, hrs bool) []byte {
	p := []byte{2, ADFlags, 0x06}
	p = append(p, 5, ADManufacturerData, byte(CompanyID&0xFF), byte(CompanyID>>8), ManufacturerFormat, flags)
	p = append(p, 17, ADUUID128Complete)
	p = append(p, PlatformUUID[:]...)
	if hrs {
		p = append(p, 3, ADUUID16Complete, byte(HRSUUID&0xFF), byte(HRSUUID>>8))
	}
	return p
}

// DefaultScanResp builds the default scan response: the complete local name,
// the product name and the serial number separated by a space, or the
// shortened name when that does not fit.
func DefaultScanResp(product, serial string) []byte {
	name := product + " " + serial
	typ := byte(ADCompleteName)
	if len(name) > MaxPacket-2 {
		name, typ = name[:MaxPacket-2], ADShortName
	}
	return append([]byte{byte(1 + len(name)), typ}, name...)
}

// checkPacket validates a custom packet of AdvSettings.
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
