package air

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"senseboard/internal/await"
)

// TestDialAnswers: a dial takes an answer whose keepalive interval is from
// 1 ms to maxEvery, both included, and keeps that interval for the
// stream; it refuses an answer outside those limits, without a program or
// a stream, or that refuses the dial.
func TestDialAnswers(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	var mu sync.Mutex
	var rep dialReply // the answer to give
	sub, err := nc.Subscribe(DialSubject("000777"), func(m *nats.Msg) {
		mu.Lock()
		b, _ := json.Marshal(rep)
		mu.Unlock()
		m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	most := maxEvery.Milliseconds()
	for _, tt := range []struct {
		rep   dialReply
		every time.Duration // 0: refused
	}{
		{dialReply{Program: "peer", Stream: 7, Every: 1}, time.Millisecond},
		{dialReply{Program: "peer", Stream: 7, Every: most}, maxEvery},
		{dialReply{Program: "peer", Stream: 7, Every: most + 1}, 0},
		{dialReply{Program: "peer", Stream: 7, Every: 0}, 0},
		{dialReply{Program: "peer", Stream: 7, Every: -1}, 0},
		{dialReply{Program: "peer", Stream: 0, Every: 1000}, 0},
		{dialReply{Program: "a.b", Stream: 7, Every: 1000}, 0},
		{dialReply{Error: "busy"}, 0},
	} {
		mu.Lock()
		rep = tt.rep
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
		s, err := l.Dial(ctx, "000777")
		cancel()
		if tt.every == 0 {
			if err == nil {
				s.Close()
				t.Errorf("answer %+v taken", tt.rep)
			} else if tt.rep.Error != "" && !errors.Is(err, ErrRefused) {
				t.Errorf("answer %+v: %v, want ErrRefused", tt.rep, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("answer %+v: %v", tt.rep, err)
			continue
		}
		s.mu.Lock()
		every := s.every
		s.mu.Unlock()
		s.Close()
		if every != tt.every {
			t.Errorf("answer %+v: keepalives every %v, want %v", tt.rep, every, tt.every)
		}
	}
}

// TestListenAnswers: a device takes a dial whose keepalive interval is
// from 1 ms to maxEvery, both included, and keeps it for the stream; it
// refuses one outside those limits.
func TestListenAnswers(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	ln, err := l.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	most := maxEvery.Milliseconds()
	for _, tt := range []struct {
		every int64
		ok    bool
	}{
		{1, true},
		{most, true},
		{most + 1, false},
		{0, false},
	} {
		req, _ := json.Marshal(dialMsg{Program: "peer", Stream: 7, Every: tt.every})
		msg, err := nc.Request(DialSubject("000123"), req, await.Guard) // hang guard
		if err != nil {
			t.Fatal(err)
		}
		var rep dialReply
		if err := json.Unmarshal(msg.Data, &rep); err != nil {
			t.Fatal(err)
		}
		if (rep.Error == "") != tt.ok {
			t.Errorf("a dial of keepalives every %d ms: %+v, want taken %v", tt.every, rep, tt.ok)
		}
		if rep.Error != "" {
			continue
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		s := c.(*Stream)
		s.mu.Lock()
		every := s.every
		s.mu.Unlock()
		c.Close()
		if every != time.Duration(tt.every)*time.Millisecond {
			t.Errorf("a dial of keepalives every %d ms: the stream keeps %v", tt.every, every)
		}
	}
}

// TestAdvertScan: an advert carries the scan when it is a JSON object, and
// none when the scan is empty or something else.
func TestAdvertScan(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	watch, err := nc.SubscribeSync(AdvertSubject("000123"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	ln, err := l.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tt := range []struct {
		scan, want string
	}{
		{`{"advertising":true}`, `{"advertising":true}`},
		{"", ""},
		{"[1]", ""},
	} {
		ln.SetScan(func() []byte { return []byte(tt.scan) })
		l.nc.Publish(AdvertSubject("000123"), []byte("end")) // after the advert SetScan sent
		var a Advert
		for {
			msg, err := watch.NextMsg(await.Guard) // hang guard
			if err != nil {
				t.Fatal(err)
			}
			if string(msg.Data) == "end" {
				break
			}
			a = Advert{}
			if err := json.Unmarshal(msg.Data, &a); err != nil {
				t.Fatal(err)
			}
		}
		if a.Serial != "000123" || string(a.Scan) != tt.want {
			t.Errorf("scan %q: advert %+v; want the scan %q", tt.scan, a, tt.want)
		}
	}
}
