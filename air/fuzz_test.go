package air

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParseSubject: any subject either parses into one that prints back
// as itself, or is refused with ErrSubject.
func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{ScanSubject, AdvertSubject("000123"), DialSubject("000123"),
		StreamSubject("000123", "abcDEF012", FromDevice), StreamSubject("x", "y", FromCentral),
		"senseboard.air", "senseboard.air.adv.*", "senseboard.air.stream.a.b.up", "senseboard.air..", "other.subject"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		s, err := ParseSubject(subject)
		if err != nil {
			if !errors.Is(err, ErrSubject) {
				t.Fatalf("%q: %v does not wrap ErrSubject", subject, err)
			}
			return
		}
		if s.String() != subject {
			t.Fatalf("%q parsed as %+v, which prints as %q", subject, s, s.String())
		}
	})
}

// FuzzParseAdvert: an advert parses, or is refused with ErrAdvert; one
// that parses names its subject's device and a sane interval.
func FuzzParseAdvert(f *testing.F) {
	f.Add(AdvertSubject("000123"), []byte(`{"serial":"000123","program":"p","every":1000}`))
	f.Add(AdvertSubject("000123"), []byte(`{"serial":"000123","program":"p","every":1000,"gone":"it left the air"}`))
	f.Add(AdvertSubject("000123"), []byte(`{"serial":"000124","program":"p","every":1000}`))
	f.Add(DialSubject("000123"), []byte(`{}`))
	f.Add(AdvertSubject("1"), []byte(`{"serial":"1","program":"p","every":1000}{}`))
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		a, err := ParseAdvert(subject, data)
		if err != nil {
			if !errors.Is(err, ErrAdvert) {
				t.Fatalf("%v does not wrap ErrAdvert", err)
			}
			return
		}
		if AdvertSubject(a.Serial) != subject || a.Program == "" || a.interval() <= 0 || a.interval() > maxEvery {
			t.Fatalf("%q %q parsed as %+v", subject, data, a)
		}
	})
}

// FuzzParseMessage: a stream message parses and encodes back to the same
// bytes, or is refused with ErrMessage.
func FuzzParseMessage(f *testing.F) {
	for _, m := range []message{{kind: msgData, seq: 0, body: []byte("hello")}, {kind: msgKeepalive, seq: 1 << 40},
		{kind: msgClose, seq: 3, body: []byte("the reader fell behind")}, {kind: msgClose}} {
		f.Add(appendMessage(nil, m))
	}
	f.Add([]byte("X\x00"))
	f.Add([]byte("D\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMessage(data)
		if err != nil {
			if !errors.Is(err, ErrMessage) {
				t.Fatalf("%v does not wrap ErrMessage", err)
			}
			return
		}
		if m2, err := parseMessage(appendMessage(nil, m)); err != nil || m2.kind != m.kind || m2.seq != m.seq || !bytes.Equal(m2.body, m.body) {
			t.Fatalf("%q parsed as %+v, which does not round-trip: %+v %v", data, m, m2, err)
		}
	})
}
