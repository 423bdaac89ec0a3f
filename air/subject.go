package air

import (
	"errors"
	"fmt"
	"strings"
)

// The subjects of the radio link. Every one begins with Prefix. Control
// goes by device: the serial number is a token of its own, so that a NATS
// account's permissions or a subject mapping can take one device or a
// shard of them. Stream data goes by program: each program has one inbox,
// where the messages of every stream it holds an end of arrive, the way
// NATS carries the replies of requests; so a program with thousands of
// streams subscribes to a few subjects, not one per stream.
//
//	senseboard.air.scan            a central asks every device to advertise now
//	senseboard.air.adv.<serial>    a device's advert (presence, and what a scan sees), and its goodbye
//	senseboard.air.dial.<serial>   request: open a stream to a device
//	senseboard.air.in.<program>    a program's inbox: the messages of its streams, from their peers
const (
	Prefix      = "senseboard.air"
	ScanSubject = Prefix + ".scan"
	// AdvertSubjects matches the advert of every device.
	AdvertSubjects = Prefix + ".adv.*"
	// InboxSubjects matches the inbox of every program.
	InboxSubjects = Prefix + ".in.*"
)

// Kinds of subject.
const (
	KindScan   = "scan"
	KindAdvert = "adv"
	KindDial   = "dial"
	KindInbox  = "in"
)

// ErrSubject is a subject that is not one of the radio link's.
var ErrSubject = errors.New("not a subject of the radio link")

// ErrSerial is a serial number that cannot name a device on the air.
var ErrSerial = errors.New("a serial number on the air is 1 to 64 letters, digits, '-' or '_'")

// ErrProgram is a program id that cannot name a program on the air.
var ErrProgram = errors.New("a program's id on the air is 1 to 64 letters, digits, '-' or '_'")

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
func AdvertSubject(serial string) string { return advertPrefix + serial }

// advertPrefix begins every advert's subject, before the serial number.
const advertPrefix = Prefix + ".adv."

// advertSerial returns the serial number of an advert's subject, without
// checking it (ParseSubject does), and false for another subject.
func advertSerial(subject string) (string, bool) {
	return strings.CutPrefix(subject, advertPrefix)
}

// DialSubject is where the device with a serial number takes streams.
func DialSubject(serial string) string { return Prefix + ".dial." + serial }

// InboxSubject is the inbox of the program with an id: where the peers of
// its streams send their messages.
func InboxSubject(program string) string { return Prefix + ".in." + program }

// Subject is a parsed subject of the radio link.
type Subject struct {
	Kind    string // KindScan, KindAdvert, KindDial or KindInbox
	Serial  string // for KindAdvert and KindDial
	Program string // for KindInbox
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
	return InboxSubject(s.Program)
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
	case KindInbox:
		if len(t) != 2 || !token(t[1]) {
			return bad("in is followed by one program id (1 to 64 letters, digits, '-' or '_')")
		}
		return Subject{Kind: KindInbox, Program: t[1]}, nil
	}
	return bad("the kind after " + Prefix + " is scan, adv, dial or in")
}
