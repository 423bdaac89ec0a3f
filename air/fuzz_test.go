package air

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParseSubject: any subject either parses into one that prints back
// as itself, or is refused with ErrSubject.
func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{ScanSubject, AdvertSubject("000123"), DialSubject("000123"),
		InboxSubject("abcDEF012"), InboxSubject("x"),
		"senseboard.air", "senseboard.air.adv.*", "senseboard.air.in.a.b", "senseboard.air..", "other.subject"} {
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
	f.Add(AdvertSubject("000123"), []byte(`{"serial":"000123","program":"p","every":1000,"scan":{"serial":"000123","advertising":true}}`))
	f.Add(AdvertSubject("000123"), []byte(`{"serial":"000123","program":"p","every":1000,"scan":[1]}`))
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
	for _, m := range []message{{kind: msgData, stream: 1, seq: 0, body: []byte("hello")}, {kind: msgKeepalive, stream: 300, seq: 1 << 40},
		{kind: msgClose, stream: 2, seq: 3, body: []byte("the reader fell behind")}, {kind: msgClose, stream: 1}, {kind: msgMark, seq: 1 << 63}} {
		f.Add(appendMessage(nil, m))
	}
	// the frames of one connection event in one data message
	f.Add(appendMessage(nil, message{kind: msgData, stream: 5, seq: 7, body: []byte("\x45\x00\x00\x00\x00\x02\x00{}\x45\x00\x00\x00\x00\x02\x00{}")}))
	f.Add([]byte("X\x01\x00"))
	f.Add([]byte("D\x00\x00x"))
	f.Add([]byte("M\x01\x00"))
	f.Add([]byte("D\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMessage(data)
		if err != nil {
			if !errors.Is(err, ErrMessage) {
				t.Fatalf("%v does not wrap ErrMessage", err)
			}
			return
		}
		if m2, err := parseMessage(appendMessage(nil, m)); err != nil || m2.kind != m.kind || m2.stream != m.stream || m2.seq != m.seq || !bytes.Equal(m2.body, m.body) {
			t.Fatalf("%q parsed as %+v, which does not round-trip: %+v %v", data, m, m2, err)
		}
	})
}

// FuzzParseToken: the content of a token file gives a token of 16 to 128
// letters, digits, - or _, or ErrToken with a message that does not show
// the content.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"ABCDEFGHIJKLMNOPQRSTUVWXYZ\n", " 0123456789abcdef-_ \r\n", "SHORT", "", "NOT A TOKEN OF THIS PROGRAM", strings.Repeat("x", 129)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		tok, err := parseToken("f", content)
		if err != nil {
			if !errors.Is(err, ErrToken) {
				t.Fatalf("%v does not wrap ErrToken", err)
			}
			if s := strings.TrimSpace(string(content)); len(s) >= minToken && strings.Contains(err.Error(), s) {
				t.Fatalf("the error shows the content: %v", err)
			}
			return
		}
		if len(tok) < minToken || len(tok) > maxToken || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" ||
			!strings.Contains(string(content), tok) {
			t.Fatalf("%q gave the token %q", content, tok)
		}
	})
}

// FuzzParseCredentials: the content of a credentials file is accepted, or
// refused with ErrCredentials and a message that does not show it.
func FuzzParseCredentials(f *testing.F) {
	f.Add([]byte("-----BEGIN NATS USER JWT-----\nSECRETSECRETSECRET\n------END NATS USER JWT------\n"))
	f.Add([]byte("SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4\n"))
	f.Add([]byte("eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, content []byte) {
		err := parseCredentials("f", content, time.Unix(0, 0))
		if err == nil {
			return
		}
		if !errors.Is(err, ErrCredentials) {
			t.Fatalf("%v does not wrap ErrCredentials", err)
		}
		for _, field := range strings.Fields(string(content)) {
			if len(field) >= 16 && strings.Contains(err.Error(), field) {
				t.Fatalf("the error shows the content: %v", err)
			}
		}
	})
}

// FuzzRedact: a password in a list of URLs never shows in its redacted
// form.
func FuzzRedact(f *testing.F) {
	f.Add("nats://", "user", "s3cret", "127.0.0.1:4222", "")
	f.Add("", "user", "s3c,ret", "host:1", ",nats://h:2")
	f.Add("nats://h:1,tls://", "", "t0ken", "h:2/x?y#z", ",nats://u:p@h:3")
	f.Fuzz(func(t *testing.T, before, user, password, host, after string) {
		if strings.ContainsAny(password+host, "@/") {
			return // not a password, nor a host, of a URL
		}
		secret := "S3CR3T" + password
		urls := before + user + ":" + secret + "@" + host + after
		if got := Redact(urls); strings.Contains(got, secret) {
			t.Fatalf("Redact(%q) = %q", urls, got)
		}
	})
}
