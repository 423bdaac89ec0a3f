// Package link is the radio link protocol: what a central (a phone, the
// bridge's or the load's) and a device say to each other as over BLE, on a
// stream of the wire protocol's frames (package wire) that a carrier gives
// (package air between programs, a pipe within one).
//
// A central says Hello, may Scan for the device's Advert, Connects
// (Connected or an Error), may Pair or Encrypt (Paired or an Error), then
// makes requests of the line protocol over the connection. While
// connected it may use the heart rate and serial services, the GATT
// services and the device's interface definitions. When the connection
// ends, for whatever reason, the device sends Disconnected and closes the
// stream.
//
// The package holds both ends: the peripheral's (Peripheral serves a
// device's radio, package radio, on each stream) and the central's
// (Central opens streams and Conn is one of them). docs/protocol.md
// describes the frames for third-party centrals.
package link

import (
	"errors"
	"fmt"

	"senseboard/radio"
	"senseboard/wire"
)

// The frame kinds of the radio link, beside those of the line protocol on
// the same stream. The central sends Scan, Connect, Pair, Encrypt and
// Disconnect; the device answers Advert, Connected and Paired, and sends
// Disconnected when the connection ends. While connected, the central may
// switch heart rate notifications (HRSNotify) and write to the serial
// service (NUSWrite), both answered with Ack; the device sends HRSData and
// NUSData when its resources /Comm/Ble/HRS and /Comm/Ble/NUS send them.
const (
	Scan         wire.Kind = 0x30
	Advert       wire.Kind = 0x31
	Connect      wire.Kind = 0x32
	Connected    wire.Kind = 0x33
	Pair         wire.Kind = 0x34
	Paired       wire.Kind = 0x35
	Encrypt      wire.Kind = 0x36
	Disconnect   wire.Kind = 0x37
	Disconnected wire.Kind = 0x38
	HRSNotify    wire.Kind = 0x39
	NUSWrite     wire.Kind = 0x3A
	HRSData      wire.Kind = 0x3B
	NUSData      wire.Kind = 0x3C
	Ack          wire.Kind = 0x3F
)

// The GATT frame kinds. While connected, the central may list the
// device's services (GATTDiscover, answered with GATTServices), choose the
// connection's ATT MTU (GATTMTU), write to a characteristic (GATTWrite)
// and switch its notifications (GATTNotify), each answered with Ack or an
// Error, and read a characteristic (GATTRead, answered with GATTValue or
// an Error); the device sends GATTNotification for each notification of a
// characteristic the central switched on, in binary (AppendNotification).
const (
	GATTDiscover     wire.Kind = 0x40
	GATTServices     wire.Kind = 0x41
	GATTMTU          wire.Kind = 0x42
	GATTWrite        wire.Kind = 0x43
	GATTNotify       wire.Kind = 0x44
	GATTNotification wire.Kind = 0x45
	GATTRead         wire.Kind = 0x48
	GATTValue        wire.Kind = 0x49
)

// The definitions frame kinds. While connected (and, with a pass key,
// paired), the central may ask for the device's interface definitions
// (Definitions, with a DefinitionsRequestMsg), answered with
// DefinitionsData (a DefinitionsMsg) or an Error.
const (
	Definitions     wire.Kind = 0x46
	DefinitionsData wire.Kind = 0x47
)

// kindNames names the radio link's frame kinds in errors; the line
// protocol's are wire.Kind's.
var kindNames = map[wire.Kind]string{
	Scan: "scan", Advert: "advert", Connect: "connect", Connected: "connected", Pair: "pair", Paired: "paired",
	Encrypt: "encrypt", Disconnect: "disconnect", Disconnected: "disconnected", HRSNotify: "hrs notify",
	NUSWrite: "nus write", HRSData: "hrs data", NUSData: "nus data", Ack: "ack",
	GATTDiscover: "gatt discover", GATTServices: "gatt services", GATTMTU: "gatt mtu", GATTWrite: "gatt write",
	GATTNotify: "gatt notify", GATTNotification: "gatt notification", GATTRead: "gatt read", GATTValue: "gatt value",
	Definitions: "definitions", DefinitionsData: "definitions data"}

// KindName names a frame kind of the radio link or of the line protocol.
func KindName(k wire.Kind) string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return k.String()
}

// AdvertMsg is what a scan sees of a device: whether it advertises, and
// its advertisement and scan response packets as they go over the air.
type AdvertMsg struct {
	Serial      string `json:"serial"`
	Address     string `json:"address"`
	Advertising bool   `json:"advertising"`
	Adv         []byte `json:"adv,omitempty"`
	ScanResp    []byte `json:"scanResp,omitempty"`
}

// ScanMsg, the optional payload of a Scan, says who scans: the central's
// BLE address and how many times its Bluetooth was turned off and on
// (Power), which a stuck device heeds.
type ScanMsg struct {
	Address string `json:"address,omitempty"`
	Power   uint32 `json:"power,omitempty"`
}

// ConnectMsg connects a central, named by its BLE address, to the device.
// Interval is the connection interval the central asks for, in units of
// 1.25 ms (6..3200); zero leaves it to the device. Power counts the times
// the central's Bluetooth was turned off and on.
type ConnectMsg struct {
	Address  string `json:"address"`
	Name     string `json:"name,omitempty"`
	Interval uint16 `json:"interval,omitempty"`
	Power    uint32 `json:"power,omitempty"`
}

// ConnectedMsg accepts a connection: its handle and the connection
// interval granted, in units of 1.25 ms.
type ConnectedMsg struct {
	Handle   uint16 `json:"handle"`
	Interval uint16 `json:"interval,omitempty"`
}

// PairMsg pairs over the connection, with the device's pass key when it
// has one, and bonds when Bond is set.
type PairMsg struct {
	PassKey string `json:"passKey,omitempty"`
	Bond    bool   `json:"bond"`
}

// EncryptMsg encrypts the connection with the key of an earlier bond.
type EncryptMsg struct {
	Key string `json:"key"`
}

// PairedMsg says the link is encrypted; Key is the long-term key the
// central keeps after bonding, empty when it did not bond.
type PairedMsg struct {
	Key string `json:"key,omitempty"`
}

// DisconnectedMsg says why the connection ended.
type DisconnectedMsg struct {
	Reason string `json:"reason"`
}

// HRSNotifyMsg switches the central's heart rate notifications.
type HRSNotifyMsg struct {
	On bool `json:"on"`
}

// NUSMsg is data of the serial service, either way (base64 in JSON).
type NUSMsg struct {
	Data []byte `json:"data"`
}

// GATTService is one GATT service of a device, with its characteristics.
type GATTService struct {
	UUID            string               `json:"uuid"`
	Characteristics []GATTCharacteristic `json:"characteristics"`
}

// GATTCharacteristic is a characteristic and what a central may do with
// it: "read", "write", "write-without-response", "notify".
type GATTCharacteristic struct {
	UUID       string   `json:"uuid"`
	Properties []string `json:"properties"`
}

// GATTServicesMsg lists the device's GATT services.
type GATTServicesMsg struct {
	Services []GATTService `json:"services"`
}

// GATTMTUMsg chooses the connection's ATT MTU.
type GATTMTUMsg struct {
	MTU int `json:"mtu"`
}

// GATTWriteMsg writes to a characteristic (data in base64 in JSON).
type GATTWriteMsg struct {
	Char string `json:"char"`
	Data []byte `json:"data"`
}

// GATTNotifyMsg switches the notifications of a characteristic.
type GATTNotifyMsg struct {
	Char string `json:"char"`
	On   bool   `json:"on"`
}

// A GATTNotification frame carries a notification of a characteristic
// in binary, not JSON: the characteristic's UUID in its 128-bit form,
// most significant byte first (16 bytes), then the value.
const uuidSize = len(radio.UUID{})

// ErrNotification is a GATTNotification payload too short to hold its
// characteristic's UUID.
var ErrNotification = errors.New("gatt notification")

// AppendNotification appends a GATTNotification frame, the device's own
// (id 0), of a value of characteristic char.
func AppendNotification(dst []byte, char radio.UUID, value []byte) []byte {
	start := len(dst)
	dst = wire.BeginFrame(dst, GATTNotification, 0)
	dst = append(dst, char[:]...)
	dst = append(dst, value...)
	return wire.EndFrame(dst, start)
}

// ParseNotification reads the payload of a GATTNotification frame: the
// characteristic and the value, which aliases payload.
func ParseNotification(payload []byte) (char radio.UUID, value []byte, err error) {
	if len(payload) < uuidSize {
		return char, nil, fmt.Errorf("%w: %d bytes; a notification is the characteristic's %d-byte UUID and the value", ErrNotification, len(payload), uuidSize)
	}
	copy(char[:], payload)
	return char, payload[uuidSize:], nil
}

// GATTReadMsg reads a characteristic.
type GATTReadMsg struct {
	Char string `json:"char"`
}

// GATTValueMsg is the value of a characteristic that was read.
type GATTValueMsg struct {
	Char string `json:"char"`
	Data []byte `json:"data"`
}
