// Package gspwire is the frame format of the GATT SensorData Protocol
// (package gsp): the service's UUIDs, the command codes, the parsing and
// writing of commands, the notification codes and the cutting of a payload
// into notifications of an MTU. It uses the standard library alone, so that
// clients and the phone bridge speak the protocol without the device.
//
// A client writes commands [command, reference, payload...] to the command
// characteristic and receives notifications [code, reference, ...] on the
// data characteristic. docs/gsp.md describes the protocol.
package gspwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// UUIDs of the GSP service and its characteristics.
const (
	ServiceUUID = "34802252-7185-4d5d-b431-630e7050e8f0"
	CommandUUID = "34800001-7185-4d5d-b431-630e7050e8f0" // write: commands
	DataUUID    = "34800002-7185-4d5d-b431-630e7050e8f0" // notify: responses and data
)

// ProtocolVersion is the protocol version HELLO reports.
const ProtocolVersion = 1

// Code is a command code.
type Code uint8

// The commands.
const (
	Hello               Code = 0
	Subscribe           Code = 1
	Unsubscribe         Code = 2
	FetchLog            Code = 3
	Get                 Code = 4
	ClearLogbook        Code = 5
	PutDataLoggerConfig Code = 6
	PutSystemMode       Code = 7
	PutUTCTime          Code = 8
	PutDataLoggerState  Code = 9
)

var codeNames = [...]string{"HELLO", "SUBSCRIBE", "UNSUBSCRIBE", "FETCH_LOG", "GET", "CLEAR_LOGBOOK",
	"PUT_DATALOGGER_CONFIG", "PUT_SYSTEMMODE", "PUT_UTCTIME", "PUT_DATALOGGER_STATE"}

// String returns the command's name, as docs/gsp.md spells it.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("command(%d)", uint8(c))
}

// Response codes, the first byte of every notification.
const (
	CommandResponse = 1 // [1, ref, status uint16, data...]
	Data            = 2 // [2, ref, payload...]: the first part of a notification's payload
	DataPart2       = 3 // the second part, when the payload does not fit one notification
	DataPart3       = 4 // the third and every further part
)

// MaxDataLoggerPaths is how many paths one PUT_DATALOGGER_CONFIG carries:
// the data logger's 8 streams and the /Time/Detailed that clients append.
// The device's data logger judges the paths themselves.
const MaxDataLoggerPaths = 9

// MaxPath is the longest resource path a command may carry, in bytes,
// counting the leading slash that ParseCommand adds when it is left out.
const MaxPath = 160

// DefaultMTU is the ATT MTU of a connection that has not negotiated one;
// MinMTU is the smallest the protocol allows.
const (
	DefaultMTU = 247
	MinMTU     = 23
)

// Errors of ParseCommand, wrapped in a *CommandError.
var (
	ErrShort      = errors.New("a command is at least 2 bytes: command code and reference")
	ErrUnknown    = errors.New("unknown command code; allowed: 0 HELLO .. 9 PUT_DATALOGGER_STATE")
	ErrBadPayload = errors.New("malformed command payload")
)

// CommandError is a command that could not be parsed. Code and Ref are set
// when the command had them, so that the answer can name the reference.
type CommandError struct {
	Code   Code
	Ref    uint8
	HasRef bool
	Err    error  // ErrShort, ErrUnknown or ErrBadPayload
	Detail string // what was wrong
}

// Error names the command, when the write had a code, what was wrong and
// the detail.
func (e *CommandError) Error() string {
	s := "gsp: "
	if e.HasRef {
		s += e.Code.String() + ": "
	}
	s += e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns ErrShort, ErrUnknown or ErrBadPayload.
func (e *CommandError) Unwrap() error { return e.Err }

// Command is a parsed command.
type Command struct {
	Code  Code
	Ref   uint8
	Path  string   // SUBSCRIBE, GET
	Paths []string // PUT_DATALOGGER_CONFIG
	LogID uint32   // FETCH_LOG
	Value uint8    // PUT_SYSTEMMODE, PUT_DATALOGGER_STATE
	Time  uint64   // PUT_UTCTIME: microseconds since 1970-01-01 UTC
}

// ParseCommand parses one write to the command characteristic. Paths may
// end in NUL or not, and may omit the leading slash.
func ParseCommand(b []byte) (Command, error) {
	if len(b) < 2 {
		return Command{}, &CommandError{Err: ErrShort, Detail: fmt.Sprintf("got %d", len(b))}
	}
	c := Command{Code: Code(b[0]), Ref: b[1]}
	p := b[2:]
	bad := func(format string, args ...any) (Command, error) {
		return Command{}, &CommandError{Code: c.Code, Ref: c.Ref, HasRef: true, Err: ErrBadPayload, Detail: fmt.Sprintf(format, args...)}
	}
	var err error
	switch c.Code {
	case Hello, Unsubscribe, ClearLogbook:
		// Trailing bytes are ignored, as the firmware does.
	case Subscribe, Get:
		if c.Path, err = parsePath(p); err != nil {
			return bad("%v", err)
		}
	case FetchLog:
		if len(p) != 4 {
			return bad("the log id is a uint32 (4 bytes), got %d bytes", len(p))
		}
		c.LogID = binary.LittleEndian.Uint32(p)
	case PutDataLoggerConfig:
		parts := strings.Split(strings.TrimRight(string(p), "\x00"), "\x00")
		if len(p) == 0 {
			parts = nil
		}
		if len(parts) > MaxDataLoggerPaths {
			return bad("%d paths, at most %d are allowed", len(parts), MaxDataLoggerPaths)
		}
		for _, s := range parts {
			path, err := parsePath([]byte(s))
			if err != nil {
				return bad("%v", err)
			}
			c.Paths = append(c.Paths, path)
		}
	case PutSystemMode, PutDataLoggerState:
		if len(p) != 1 {
			return bad("the value is one byte (uint8), got %d bytes", len(p))
		}
		c.Value = p[0]
	case PutUTCTime:
		if len(p) != 8 {
			return bad("the time is a uint64 of microseconds since 1970 (8 bytes), got %d bytes", len(p))
		}
		c.Time = binary.LittleEndian.Uint64(p)
	default:
		return Command{}, &CommandError{Code: c.Code, Ref: c.Ref, HasRef: true, Err: ErrUnknown, Detail: fmt.Sprintf("got %d", b[0])}
	}
	return c, nil
}

func parsePath(p []byte) (string, error) {
	if i := indexNUL(p); i >= 0 {
		if i != len(p)-1 {
			return "", errors.New("a path ends at its only NUL byte")
		}
		p = p[:i]
	}
	switch {
	case len(p) == 0:
		return "", errors.New("the resource path is empty")
	case !utf8.Valid(p):
		return "", errors.New("the resource path is not UTF-8")
	}
	s := string(p)
	if s[0] != '/' {
		s = "/" + s
	}
	if len(s) > MaxPath { // with its leading slash, as it parses again
		return "", fmt.Errorf("the resource path is %d bytes with its leading slash, at most %d are allowed", len(s), MaxPath)
	}
	return s, nil
}

func indexNUL(p []byte) int {
	for i, c := range p {
		if c == 0 {
			return i
		}
	}
	return -1
}

// AppendCommand appends the bytes of c, as a client writes them.
func AppendCommand(b []byte, c Command) []byte {
	b = append(b, byte(c.Code), c.Ref)
	switch c.Code {
	case Subscribe, Get:
		b = append(append(b, c.Path...), 0)
	case FetchLog:
		b = binary.LittleEndian.AppendUint32(b, c.LogID)
	case PutDataLoggerConfig:
		for _, p := range c.Paths {
			b = append(append(b, p...), 0)
		}
	case PutSystemMode, PutDataLoggerState:
		b = append(b, c.Value)
	case PutUTCTime:
		b = binary.LittleEndian.AppendUint64(b, c.Time)
	}
	return b
}

// MaxNotification is the longest notification a connection of the given
// MTU carries: the ATT header takes 3 bytes.
func MaxNotification(mtu int) int {
	if mtu < MinMTU {
		mtu = MinMTU
	}
	return mtu - 3
}

// Splitter cuts notification payloads into notifications. It reuses its
// memory: the parts one Split returns are valid until the next. The zero
// value is ready to use.
type Splitter struct {
	buf   []byte   // the parts, back to back
	parts [][]byte // slices of buf
}

// Split cuts a notification payload into notifications of at most
// MaxNotification(mtu) bytes: DATA for the first, DATA_PART2 for the
// second, DATA_PART3 for the third and any further part. An empty payload
// is one DATA notification without data.
func (s *Splitter) Split(mtu int, ref uint8, payload []byte) [][]byte {
	room := MaxNotification(mtu) - 2
	n := max(1, (len(payload)+room-1)/room)
	s.buf = slices.Grow(s.buf[:0], len(payload)+2*n) // no part moves once cut
	s.parts = s.parts[:0]
	code := byte(Data)
	for range n {
		k := min(room, len(payload))
		start := len(s.buf)
		s.buf = append(append(s.buf, code, ref), payload[:k]...)
		s.parts = append(s.parts, s.buf[start:len(s.buf):len(s.buf)])
		payload = payload[k:]
		if code < DataPart3 {
			code++
		}
	}
	return s.parts
}
