package air

import (
	"errors"
	"fmt"
	"strings"
)

// The subjects of the radio link. Every one begins with Prefix; the device's
// serial number is a token of its own, so that a bridge, a NATS account's
// permissions or a subject mapping can take one device or a shard of them.
//
//	senseboard.air.scan                              a central asks every device to advertise now
//	senseboard.air.adv.<serial>                      a device's advert (presence), and its goodbye
//	senseboard.air.dial.<serial>                     request: open a stream to a device
//	senseboard.air.stream.<serial>.<stream>.dev      a stream's messages from the device
//	senseboard.air.stream.<serial>.<stream>.cen      a stream's messages from the central
const (
	Prefix      = "senseboard.air"
	ScanSubject = Prefix + ".scan"
	// AdvertSubjects matches the advert of every device.
	AdvertSubjects = Prefix + ".adv.*"
)

// Kinds of subject.
const (
	KindScan   = "scan"
	KindAdvert = "adv"
	KindDial   = "dial"
	KindStream = "stream"
)

// Directions of a stream's subjects: the sender of its messages.
const (
	FromDevice  = "dev"
	FromCentral = "cen"
)

// ErrSubject is a subject that is not one of the radio link's.
var ErrSubject = errors.New("not a subject of the radio link")

// ErrSerial is a serial number that cannot name a device on the air.
var ErrSerial = errors.New("a serial number on the air is 1 to 64 letters, digits, '-' or '_'")

// CheckSerial reports whether serial can be a token of the subjects.
func CheckSerial(serial string) error {
	if !token(serial) {
		return fmt.Errorf("serial %q: %w", serial, ErrSerial)
	}
	return nil
}

// token reports whether s is 1 to 64 letters, digits, '-' or '_': a NATS
// subject token without wildcards or separators.
func token(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// AdvertSubject is where the device with a serial number advertises.
func AdvertSubject(serial string) string { return Prefix + ".adv." + serial }

// DialSubject is where the device with a serial number takes streams.
func DialSubject(serial string) string { return Prefix + ".dial." + serial }

// StreamSubject is where the messages of one stream to a device go, from
// the device (FromDevice) or from the central (FromCentral).
func StreamSubject(serial, stream, from string) string {
	return Prefix + ".stream." + serial + "." + stream + "." + from
}

// Subject is a parsed subject of the radio link.
type Subject struct {
	Kind   string // KindScan, KindAdvert, KindDial or KindStream
	Serial string // "" for KindScan
	Stream string // the stream's id, for KindStream
	From   string // FromDevice or FromCentral, for KindStream
}

// String returns the subject.
func (s Subject) String() string {
	switch s.Kind {
	case KindScan:
		return ScanSubject
	case KindAdvert:
		return AdvertSubject(s.Serial)
	case KindDial:
		return DialSubject(s.Serial)
	}
	return StreamSubject(s.Serial, s.Stream, s.From)
}

// ParseSubject parses a subject of the radio link; an error wraps
// ErrSubject and says what is wrong.
func ParseSubject(subject string) (Subject, error) {
	rest, ok := strings.CutPrefix(subject, Prefix+".")
	if !ok {
		return Subject{}, fmt.Errorf("subject %q: %w: it does not begin with %s.", subject, ErrSubject, Prefix)
	}
	t := strings.Split(rest, ".")
	bad := func(what string) (Subject, error) {
		return Subject{}, fmt.Errorf("subject %q: %w: %s", subject, ErrSubject, what)
	}
	switch t[0] {
	case KindScan:
		if len(t) != 1 {
			return bad("scan takes no more tokens")
		}
		return Subject{Kind: KindScan}, nil
	case KindAdvert, KindDial:
		if len(t) != 2 || !token(t[1]) {
			return bad(t[0] + " is followed by one serial number (1 to 64 letters, digits, '-' or '_')")
		}
		return Subject{Kind: t[0], Serial: t[1]}, nil
	case KindStream:
		if len(t) != 4 || !token(t[1]) || !token(t[2]) || t[3] != FromDevice && t[3] != FromCentral {
			return bad("stream is followed by a serial number, a stream id and dev or cen")
		}
		return Subject{Kind: KindStream, Serial: t[1], Stream: t[2], From: t[3]}, nil
	}
	return bad("the kind after " + Prefix + " is scan, adv, dial or stream")
}
