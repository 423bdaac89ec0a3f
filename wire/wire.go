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
//	12     n    payload: UTF-8 JSON (binary for the radio link's GATT
//	            notifications, package link)
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

var kindNames = map[Kind]string{Hello: "hello", Welcome: "welcome", Refuse: "refuse", Bye: "bye", Request: "request",
	Response: "response", Notification: "notification", Ended: "ended", Ping: "ping", Pong: "pong", Error: "error"}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind 0x%02x", uint8(k))
}

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
