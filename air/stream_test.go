package air

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"senseboard/internal/loopback"
)

// rawLink is a link on a server of the test's, and a plain NATS client of
// the same server that watches what the link sends.
func rawLink(t *testing.T, o Options) (*Link, *nats.Conn) {
	t.Helper()
	addr := loopback.FreeAddr(t)
	o.TokenFile = filepath.Join(t.TempDir(), "nats.token")
	l, err := Local(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	tok, err := loadToken(o.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("nats://"+addr, nats.Token(tok))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return l, nc
}

// TestKeepaliveOnlyWhenSilent: a stream that sent data in the last half
// interval sends no keepalive at a tick; one that sent nothing for longer
// does, with the sequence number of its next data message.
func TestKeepaliveOnlyWhenSilent(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour}) // the link's own ticks never come
	watch, err := nc.SubscribeSync(StreamSubject("000123", "s1", FromDevice))
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	s := newStream(l, "000123", "s1", true, time.Hour)
	if err := l.add(s); err != nil {
		t.Fatal(err)
	}
	if err := s.subscribe(); err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("x"))
	now := time.Now()
	s.keepalive(now, false)                               // data went just now: no keepalive
	s.keepalive(now.Add(l.opts.Interval/4), false)        // nor a quarter interval later
	s.keepalive(now.Add(l.opts.Interval/2+1), false)      // silent for half an interval: a keepalive
	s.Write([]byte("y"))                                  //
	s.keepalive(time.Now().Add(l.opts.Interval/8), false) // no keepalive
	s.Close()
	var got []string
	for {
		msg, err := watch.NextMsg(30 * time.Second) // hang guard
		if err != nil {
			t.Fatal(err)
		}
		m, err := parseMessage(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m.kind)+string(rune('0'+m.seq))+string(m.body))
		if m.kind == msgClose {
			break
		}
	}
	if want := "D0x K1 D1y C2"; strings.Join(got, " ") != want {
		t.Errorf("messages %q, want %q", strings.Join(got, " "), want)
	}
}

// TestStreamIDInUse: a dial for a stream id the device has a stream of is
// refused, and the open stream goes on.
func TestStreamIDInUse(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	ln, err := l.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := func() dialReply {
		t.Helper()
		msg, err := nc.Request(DialSubject("000123"), []byte(`{"stream": "s1", "every": 1000}`), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep dialReply
		if err := json.Unmarshal(msg.Data, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := dial(); rep.Error != "" {
		t.Fatalf("first dial: %s", rep.Error)
	}
	if rep := dial(); rep.Error != "stream s1 is open already; a new stream takes a new id" {
		t.Errorf("second dial: %q", rep.Error)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := StreamSubject("000123", "s1", FromCentral)
	nc.Publish(in, appendMessage(nil, message{kind: msgData, seq: 0, body: []byte("hi")}))
	b := make([]byte, 2)
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hi" {
		t.Errorf("read %q, %v", b, err)
	}
	if err := l.add(newStream(l, "000123", "s1", true, time.Second)); !errors.Is(err, errStreamID) {
		t.Errorf("add: %v", err)
	}
}

// TestStreamBuffer: what arrives in messages of any size reads back whole
// and in order through reads of any size, while the buffer is reused.
func TestStreamBuffer(t *testing.T) {
	l := newLink("nats://127.0.0.1:1", Options{})
	s := newStream(l, "000123", "s1", false, time.Second)
	var want, got bytes.Buffer
	p := make([]byte, 7)
	seq := uint64(0)
	for i := range 2000 {
		body := bytes.Repeat([]byte{byte(i)}, 1+i%300)
		want.Write(body)
		s.receive(appendMessage(nil, message{kind: msgData, seq: seq, body: body}))
		seq++
		for j := 0; j < i%4 && got.Len() < want.Len(); j++ { // reads that fall behind and catch up
			n, err := s.Read(p[:1+i%len(p)])
			if err != nil {
				t.Fatal(err)
			}
			got.Write(p[:n])
		}
	}
	for got.Len() < want.Len() {
		n, err := s.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(p[:n])
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("the bytes read differ from those sent")
	}
	if s.off != 0 || len(s.buf) != 0 || cap(s.buf) > keepBuffer {
		t.Errorf("after reading all: offset %d, %d bytes of %d kept", s.off, len(s.buf), cap(s.buf))
	}
	// a reader that keeps up reads from the same buffer, message after message
	var first *byte
	for i := range 3 {
		s.receive(appendMessage(nil, message{kind: msgData, seq: seq, body: []byte("abc")}))
		seq++
		if i == 0 {
			first = &s.buf[0]
		} else if &s.buf[0] != first {
			t.Errorf("message %d: a new buffer", i)
		}
		if n, err := s.Read(p); n != 3 || err != nil || string(p[:3]) != "abc" {
			t.Errorf("read %q, %v", p[:n], err)
		}
	}
}

// recordConn records the writes to it.
type recordConn struct {
	net.Conn
	mu     sync.Mutex
	writes []string
	fail   error
	closed bool
}

func (c *recordConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }

func (c *recordConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *recordConn) written() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

// TestBatchConn: writes wait, together, for the delay; a full buffer goes
// at once; Close sends what waits; a write that fails fails the next ones
// and closes the connection.
func TestBatchConn(t *testing.T) {
	rc := &recordConn{}
	c := newBatchConn(rc, time.Hour) // only a full buffer or Close sends
	c.Write([]byte("PUB a 1\r\nx\r\n"))
	c.Write([]byte("PUB b 1\r\ny\r\n"))
	if w := rc.written(); len(w) != 0 {
		t.Fatalf("written before the delay: %q", w)
	}
	big := bytes.Repeat([]byte("z"), batchMax)
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if w := rc.written(); len(w) != 1 || w[0] != "PUB a 1\r\nx\r\nPUB b 1\r\ny\r\n"+string(big) {
		t.Fatalf("a full buffer: %d writes", len(w))
	}
	c.Write([]byte("PING\r\n"))
	c.Close()
	if w := rc.written(); len(w) != 2 || w[1] != "PING\r\n" || !rc.closed {
		t.Fatalf("close: writes %q, closed %v", w[1:], rc.closed)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}

	// the delay sends what waits
	rc = &recordConn{}
	c = newBatchConn(rc, time.Millisecond)
	c.Write([]byte("a"))
	c.Write([]byte("b"))
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for len(rc.written()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if w := rc.written(); strings.Join(w, "") != "ab" {
		t.Errorf("after the delay: %q", w)
	}

	// a failed write
	broken := errors.New("broken pipe")
	rc = &recordConn{fail: broken}
	c = newBatchConn(rc, time.Hour)
	c.Write([]byte("a"))
	if err := c.flush(); !errors.Is(err, broken) || !rc.closed {
		t.Errorf("flush: %v, closed %v", err, rc.closed)
	}
	if _, err := c.Write([]byte("b")); !errors.Is(err, broken) {
		t.Errorf("write after a failed one: %v", err)
	}
}

// pushed collects what Push hands out.
type pushed struct {
	mu   sync.Mutex
	data []byte
	ends []error
	done chan struct{}
}

func newPushed() *pushed { return &pushed{done: make(chan struct{})} }

func (p *pushed) take(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.data = append(p.data, b...)
}

func (p *pushed) end(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ends = append(p.ends, err)
	if len(p.ends) == 1 {
		close(p.done)
	}
}

func (p *pushed) wait(t *testing.T) (string, []error) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("no end")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.data), append([]error(nil), p.ends...)
}

// TestPush: what waited unread and what comes later reach data in order,
// then the end, once; data may close the stream; a stream that ended
// before Push hands over what it kept, then its end.
func TestPush(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	central := func(id string) *Stream {
		t.Helper()
		s := newStream(l, "000123", id, false, time.Hour)
		if err := l.add(s); err != nil {
			t.Fatal(err)
		}
		if err := s.subscribe(); err != nil {
			t.Fatal(err)
		}
		l.nc.Flush() // the server has the subscription
		return s
	}
	send := func(s *Stream, kind byte, seq uint64, body string) {
		nc.Publish(s.in, appendMessage(nil, message{kind: kind, seq: seq, body: []byte(body)}))
		nc.Flush()
	}
	waitUnread := func(s *Stream, n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // hang guard
		for {
			s.mu.Lock()
			unread := len(s.buf) - s.off
			s.mu.Unlock()
			if unread == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d bytes unread, want %d", unread, n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// the peer's orderly close
	s := central("s1")
	send(s, msgData, 0, "ab")
	waitUnread(s, 2)
	p := newPushed()
	s.Push(p.take, p.end)
	send(s, msgData, 1, "cd")
	send(s, msgData, 2, "ef")
	send(s, msgClose, 3, "")
	if data, ends := p.wait(t); data != "abcdef" || len(ends) != 1 || ends[0] != io.EOF {
		t.Errorf("pushed %q, ends %v", data, ends)
	}
	if _, err := s.Read(make([]byte, 8)); err != io.EOF {
		t.Errorf("read after push: %v", err)
	}

	// data closes the stream
	s = central("s2")
	p = newPushed()
	s.Push(func(b []byte) { p.take(b); s.Close() }, p.end)
	send(s, msgData, 0, "gh")
	send(s, msgData, 1, "ij") // after the close: not handed out
	if data, ends := p.wait(t); data != "gh" || len(ends) != 1 || !errors.Is(ends[0], net.ErrClosed) {
		t.Errorf("pushed %q, ends %v", data, ends)
	}

	// a stream that ended before Push
	s = central("s3")
	send(s, msgData, 0, "kl")
	send(s, msgClose, 1, "device 000123 went off the air: its program stopped")
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for ended := false; !ended && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		s.mu.Lock()
		ended = s.closed
		s.mu.Unlock()
	}
	p = newPushed()
	s.Push(p.take, p.end)
	if data, ends := p.wait(t); data != "kl" || len(ends) != 1 || !errors.Is(ends[0], ErrLost) || !strings.Contains(ends[0].Error(), "went off the air") {
		t.Errorf("pushed %q, ends %v", data, ends)
	}
}
