// Package wire owns the serial line protocol of the device: binary frames
// with a checksum, the message kinds, the encoding of values in them, and a
// resumable decoder that finds frames in any stream of bytes, however it is
// split, skipping garbage and broken frames. docs/protocol.md describes it
// for third-party clients.
//
// A frame is:
//
//	offset size
//	0      2    magic 0xA5 0x5A
//	2      1    protocol version (1)
//	3      1    kind
//	4      4    id, little endian (a request id, which also names the
//	            subscription a request made)
//	8      4    payload length n, little endian, at most MaxPayload
//	12     n    payload: UTF-8 JSON
//	12+n   4    CRC-32C (Castagnoli) of bytes 2 .. 12+n, little endian
package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Frame constants.
const (
	Magic0     = 0xA5
	Magic1     = 0x5A
	Version    = 1
	HeaderSize = 12
	TrailSize  = 4
	MaxPayload = 64 * 1024
)

// Kind is the kind of a frame.
type Kind uint8

// The frame kinds. The client sends Hello first and the device answers
// Welcome or Refuse; then the client sends Requests (and Pings), and the
// device sends Responses, Notifications of the subscriptions the requests
// made, Ended when a subscription ends without being asked, and Errors for
// frames it cannot act on. Bye ends the session.
const (
	Hello        Kind = 0x01
	Welcome      Kind = 0x02
	Refuse       Kind = 0x03
	Bye          Kind = 0x04
	Request      Kind = 0x10
	Response     Kind = 0x11
	Notification Kind = 0x12
	Ended        Kind = 0x13
	Ping         Kind = 0x20
	Pong         Kind = 0x21
	Error        Kind = 0x7F
)

// The frame kinds of the radio link, where a central (the phone bridge)
// reaches a device as over the air: it says Hello, may Scan for the
// device's Advert, Connects (Connected or an Error), may Pair or Encrypt
// (Paired or an Error), then sends Requests as on a serial line. When the
// connection ends, for whatever reason, the device sends Disconnected and
// closes the stream; Disconnect asks it to. While connected, the central
// may switch heart rate notifications (HRSNotify) and write to the serial
// service (NUSWrite), both answered with Ack; the device sends HRSData and
// NUSData when its resources /Comm/Ble/HRS and /Comm/Ble/NUS send them.
const (
	Scan         Kind = 0x30
	Advert       Kind = 0x31
	Connect      Kind = 0x32
	Connected    Kind = 0x33
	Pair         Kind = 0x34
	Paired       Kind = 0x35
	Encrypt      Kind = 0x36
	Disconnect   Kind = 0x37
	Disconnected Kind = 0x38
	HRSNotify    Kind = 0x39
	NUSWrite     Kind = 0x3A
	HRSData      Kind = 0x3B
	NUSData      Kind = 0x3C
	Ack          Kind = 0x3F
)

// The GATT frame kinds of the radio link. While connected, the central
// may list the device's services (GATTDiscover, answered with
// GATTServices), choose the connection's ATT MTU (GATTMTU), write to a
// characteristic (GATTWrite) and switch its notifications (GATTNotify),
// each answered with Ack or an Error, and read a characteristic
// (GATTRead, answered with GATTValue or an Error); the device sends
// GATTNotification for each notification of a characteristic the central
// switched on.
const (
	GATTDiscover     Kind = 0x40
	GATTServices     Kind = 0x41
	GATTMTU          Kind = 0x42
	GATTWrite        Kind = 0x43
	GATTNotify       Kind = 0x44
	GATTNotification Kind = 0x45
	GATTRead         Kind = 0x48
	GATTValue        Kind = 0x49
)

// The definitions frame kinds of the radio link. While connected (and,
// with a pass key, paired), the central may ask for the device's interface
// definitions (Definitions, with a DefinitionsRequestMsg), answered with
// DefinitionsData (a DefinitionsMsg) or an Error.
const (
	Definitions     Kind = 0x46
	DefinitionsData Kind = 0x47
)

var kindNames = map[Kind]string{Hello: "hello", Welcome: "welcome", Refuse: "refuse", Bye: "bye", Request: "request",
	Response: "response", Notification: "notification", Ended: "ended", Ping: "ping", Pong: "pong", Error: "error",
	Scan: "scan", Advert: "advert", Connect: "connect", Connected: "connected", Pair: "pair", Paired: "paired",
	Encrypt: "encrypt", Disconnect: "disconnect", Disconnected: "disconnected", HRSNotify: "hrs notify",
	NUSWrite: "nus write", HRSData: "hrs data", NUSData: "nus data", Ack: "ack",
	GATTDiscover: "gatt discover", GATTServices: "gatt services", GATTMTU: "gatt mtu", GATTWrite: "gatt write",
	GATTNotify: "gatt notify", GATTNotification: "gatt notification", GATTRead: "gatt read", GATTValue: "gatt value",
	Definitions: "definitions", DefinitionsData: "definitions data"}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind 0x%02x", uint8(k))
}

// Known reports whether k is a kind of this protocol version.
func (k Kind) Known() bool { _, ok := kindNames[k]; return ok }

// Frame is one decoded frame. Payload aliases the decoder's buffer until the
// next call of Feed.
type Frame struct {
	Version uint8
	Kind    Kind
	ID      uint32
	Payload []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendFrame appends a frame with the payload to dst.
func AppendFrame(dst []byte, kind Kind, id uint32, payload []byte) []byte {
	start := len(dst)
	dst = BeginFrame(dst, kind, id)
	dst = append(dst, payload...)
	return EndFrame(dst, start)
}

// BeginFrame appends a frame header whose length EndFrame fills in, so that
// a payload can be encoded straight into dst between the two.
func BeginFrame(dst []byte, kind Kind, id uint32) []byte {
	dst = append(dst, Magic0, Magic1, Version, byte(kind), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(dst[len(dst)-8:], id)
	return dst
}

// EndFrame completes the frame that BeginFrame started at offset start: it
// writes the payload's length and appends the checksum.
func EndFrame(dst []byte, start int) []byte {
	n := len(dst) - start - HeaderSize
	binary.LittleEndian.PutUint32(dst[start+8:], uint32(n))
	sum := crc32.Checksum(dst[start+2:], castagnoli)
	return binary.LittleEndian.AppendUint32(dst, sum)
}
