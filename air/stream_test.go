package air

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"senseboard/internal/await"
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
// does, with the sequence number of its next data message; every message
// goes to the peer's inbox, naming the peer's id of the stream.
func TestKeepaliveOnlyWhenSilent(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour}) // the link's own ticks never come
	watch, err := nc.SubscribeSync(InboxSubject("peer"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	s := newStream(l, "000123", true, time.Hour)
	if err := l.add(s); err != nil {
		t.Fatal(err)
	}
	s.connect("peer", 9)
	s.Write([]byte("x"))
	published(t, s) // data that waits at the sender says as much as a keepalive
	now := time.Now()
	var never time.Time
	s.keepalive(now, never)                               // data went just now: no keepalive
	s.keepalive(now.Add(l.opts.Interval/4), never)        // nor a quarter interval later
	s.keepalive(now.Add(l.opts.Interval/2+1), never)      // silent for half an interval: a keepalive
	s.unsent.Add(1)                                       // as if data of the stream waited at the sender
	s.keepalive(now.Add(l.opts.Interval), never)          // which says as much: no keepalive
	s.unsent.Add(-1)                                      // and was published
	s.Write([]byte("y"))                                  //
	s.keepalive(time.Now().Add(l.opts.Interval/8), never) // no keepalive
	s.Close()
	var got []string
	for {
		m, msg := nextMessage(t, watch)
		if m.stream != 9 {
			t.Errorf("%q names stream %d, want the peer's 9", msg.Data, m.stream)
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

// published waits until the link's sender has published what s handed
// it.
func published(t *testing.T, s *Stream) {
	t.Helper()
	for hang := time.Now().Add(60 * time.Second); s.unsent.Load() > 0; time.Sleep(time.Millisecond) { // hang guard
		if time.Now().After(hang) {
			t.Fatalf("%d bytes of the stream were never published", s.unsent.Load())
		}
	}
}

// TestKeepaliveDecidesPerStream: a stream ends when its own peer was
// silent for Missed of its intervals until the delivery last caught up,
// whatever the other streams' peers send; a stream heard since is kept.
func TestKeepaliveDecidesPerStream(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour, Missed: 3})
	quiet, busy := newStream(l, "000123", true, time.Second), newStream(l, "000124", true, time.Second)
	for _, s := range []*Stream{quiet, busy} {
		if err := l.add(s); err != nil {
			t.Fatal(err)
		}
		s.connect("peer", 1)
	}
	t0 := time.Now()
	quiet.heard, busy.heard = t0, t0.Add(2*time.Second)
	caught := t0.Add(3*time.Second + time.Millisecond) // the delivery took what came until then
	later := caught.Add(time.Minute)                   // and is far behind now
	quiet.keepalive(later, caught)
	busy.keepalive(later, caught)
	if _, err := quiet.Read(make([]byte, 1)); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "stopped answering (nothing for 3.001s") {
		t.Errorf("the quiet stream: %v", err)
	}
	busy.mu.Lock()
	closed := busy.closed
	busy.mu.Unlock()
	if closed {
		t.Errorf("the stream heard %v before the delivery caught up ended", caught.Sub(busy.heard))
	}
}

// TestMarks: a mark the link sends comes back through its inbox and says
// when the delivery caught up; a mark of another's is ignored.
func TestMarks(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	nc.Publish(l.inbox, appendMessage(nil, message{kind: msgMark, seq: 12345}))
	nc.Flush()
	at := time.Now().Add(-time.Minute)
	l.mark(at)
	for hang := time.Now().Add(await.Guard); !l.caughtUp().Equal(at); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(hang) {
			t.Fatal("the mark never came back")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.marks) != 0 {
		t.Errorf("marks waiting: %v", l.marks)
	}
}

// TestDial: a dial names the central's program and its id of the stream;
// the answer names the device's, and its process; the stream's messages
// go to each side's inbox under its own id. A malformed dial is refused.
func TestDial(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	ln, err := l.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	watch, err := nc.SubscribeSync(InboxSubject("peer"))
	if err != nil {
		t.Fatal(err)
	}
	dial := func(req string) dialReply {
		t.Helper()
		msg, err := nc.Request(DialSubject("000123"), []byte(req), await.Guard)
		if err != nil {
			t.Fatal(err)
		}
		var rep dialReply
		if err := json.Unmarshal(msg.Data, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, bad := range []string{`{"stream": 7, "every": 1000}`, `{"program": "peer", "every": 1000}`, `{"program": "a.b", "stream": 7, "every": 1000}`, `{"program": "peer", "stream": 7}`} {
		if rep := dial(bad); !strings.HasPrefix(rep.Error, "malformed dial") {
			t.Errorf("%s: %+v", bad, rep)
		}
	}
	rep := dial(`{"program": "peer", "stream": 7, "every": 1000}`)
	if rep.Error != "" || rep.Program != l.id || rep.Stream == 0 || rep.PID != os.Getpid() || rep.Host == "" {
		t.Fatalf("dial: %+v", rep)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc.Publish(l.inbox, appendMessage(nil, message{kind: msgData, stream: rep.Stream, seq: 0, body: []byte("hi")}))
	b := make([]byte, 2)
	c.SetReadDeadline(time.Now().Add(await.Guard)) // hang guard
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hi" {
		t.Errorf("read %q, %v", b, err)
	}
	c.Write([]byte("ho"))
	msg, err := watch.NextMsg(await.Guard) // hang guard
	if err != nil {
		t.Fatal(err)
	}
	if m, err := parseMessage(msg.Data); err != nil || m.kind != msgData || m.stream != 7 || string(m.body) != "ho" {
		t.Errorf("the device sent %+v, %v", m, err)
	}
}

// TestStreamBuffer: what arrives in messages of any size reads back whole
// and in order through reads of any size, while the buffer is reused.
func TestStreamBuffer(t *testing.T) {
	l, err := newLink("nats://127.0.0.1:1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStream(l, "000123", false, time.Second)
	var want, got bytes.Buffer
	p := make([]byte, 7)
	seq := uint64(0)
	for i := range 2000 {
		body := bytes.Repeat([]byte{byte(i)}, 1+i%300)
		want.Write(body)
		s.receive(message{kind: msgData, stream: 1, seq: seq, body: body})
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
		s.receive(message{kind: msgData, stream: 1, seq: seq, body: []byte("abc")})
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
	wrote  chan struct{} // if not nil, told of each write without waiting
}

func (c *recordConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, string(p))
	select {
	case c.wrote <- struct{}{}:
	default:
	}
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

	// the delay sends what waits, in one write: here both writes wait
	// while a write to the server is under way (wmu), however soon the
	// delay ends
	rc = &recordConn{wrote: make(chan struct{}, 1)}
	c = newBatchConn(rc, time.Millisecond)
	c.wmu.Lock()
	c.Write([]byte("a"))
	c.Write([]byte("b"))
	c.wmu.Unlock()
	<-rc.wrote
	if w := rc.written(); len(w) != 1 || w[0] != "ab" {
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
	await.Within(t, p.done, "the pushed stream did not end")
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.data), append([]error(nil), p.ends...)
}

// TestPush: what waited unread and what comes later reach data in order,
// then the end, once; data may close the stream; a stream that ended
// before Push hands over what it kept, then its end.
func TestPush(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	central := func() *Stream {
		t.Helper()
		s := newStream(l, "000123", false, time.Hour)
		if err := l.add(s); err != nil {
			t.Fatal(err)
		}
		s.connect("peer", 1)
		return s
	}
	send := func(s *Stream, kind byte, seq uint64, body string) {
		nc.Publish(l.inbox, appendMessage(nil, message{kind: kind, stream: s.id, seq: seq, body: []byte(body)}))
		nc.Flush()
	}
	waitUnread := func(s *Stream, n int) {
		t.Helper()
		deadline := time.Now().Add(await.Guard) // hang guard
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
	s := central()
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
	s = central()
	p = newPushed()
	s.Push(func(b []byte) { p.take(b); s.Close() }, p.end)
	send(s, msgData, 0, "gh")
	send(s, msgData, 1, "ij") // after the close: not handed out
	if data, ends := p.wait(t); data != "gh" || len(ends) != 1 || !errors.Is(ends[0], net.ErrClosed) {
		t.Errorf("pushed %q, ends %v", data, ends)
	}

	// a stream that ended before Push
	s = central()
	send(s, msgData, 0, "kl")
	send(s, msgClose, 1, "device 000123 went off the air: its program stopped")
	deadline := time.Now().Add(await.Guard) // hang guard
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

// A close's reason is at most maxReason bytes of UTF-8.
func TestCloseReasonLimits(t *testing.T) {
	for _, tt := range []struct {
		reason string
		ok     bool
	}{
		{strings.Repeat("r", maxReason), true},
		{strings.Repeat("r", maxReason+1), false},
		{"\xff", false},
	} {
		m, err := parseMessage(appendMessage(nil, message{kind: msgClose, stream: 7, body: []byte(tt.reason)}))
		if ok := err == nil; ok != tt.ok || ok && string(m.body) != tt.reason {
			t.Errorf("a close with a reason of %d bytes: %v, want ok %v", len(tt.reason), err, tt.ok)
		}
	}
}

// TestParseMessageErrors: a message too short for its stream id or its
// sequence number is refused with an error that says which is missing.
func TestParseMessageErrors(t *testing.T) {
	for _, tt := range []struct {
		data string
		want string // in the error; "" for none
	}{
		{"", "empty"},
		{"D", "no stream id after the kind"},
		{"D\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "no stream id after the kind"}, // an overflow
		{"D\x01", "no sequence number after the stream id"},
		{"D\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "no sequence number after the stream id"},
		{"D\x00\x00", "stream id 0"},
		{"D\x01\x00x", ""},
	} {
		m, err := parseMessage([]byte(tt.data))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.data, err)
		case tt.want != "" && (!errors.Is(err, ErrMessage) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %+v, %v; want ErrMessage: %s", tt.data, m, err, tt.want)
		}
	}
}

// TestKeepaliveBounds: a stream sends a keepalive once it has been silent
// for half an interval, and not a nanosecond before; it ends when its peer
// was silent for more than Missed of the peer's intervals, and not at
// exactly that.
func TestKeepaliveBounds(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour, Missed: 3})
	watch, err := nc.SubscribeSync(InboxSubject("peer"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	t0 := time.Now()
	for _, tt := range []struct {
		name      string
		sentAgo   time.Duration // before now
		silent    time.Duration // the peer's, until the delivery caught up
		keepalive bool
		lost      bool
	}{
		{"silent a nanosecond short of half an interval", time.Hour/2 - 1, 0, false, false},
		{"silent half an interval", time.Hour / 2, 0, true, false},
		{"peer silent for Missed intervals", 0, 3 * time.Second, false, false},
		{"peer silent a nanosecond longer", 0, 3*time.Second + 1, false, true},
	} {
		s := newStream(l, "000123", true, time.Second)
		if err := l.add(s); err != nil {
			t.Fatal(err)
		}
		s.connect("peer", 9)
		s.sent, s.heard = t0.Add(-tt.sentAgo), t0
		s.keepalive(t0, t0.Add(tt.silent))
		s.mu.Lock()
		lost := s.closed
		s.mu.Unlock()
		if lost || tt.lost { // the cases that end the stream come last: nothing to read
			if lost != tt.lost {
				t.Errorf("%s: lost %t, want %t", tt.name, lost, tt.lost)
			}
			continue
		}
		s.Close()
		var kinds []byte
		for {
			m, _ := nextMessage(t, watch)
			if m.kind == msgClose {
				break
			}
			kinds = append(kinds, m.kind)
		}
		if keepalive := string(kinds) == string(msgKeepalive); keepalive != tt.keepalive {
			t.Errorf("%s: messages %q; want a keepalive %t", tt.name, kinds, tt.keepalive)
		}
	}
}

// TestReadBufferLimit: a stream holds up to its limit of unread bytes,
// counted from what was read; one byte more ends it: its reader fell
// behind.
func TestReadBufferLimit(t *testing.T) {
	l, err := newLink("nats://127.0.0.1:1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		bodies []int // the sizes of the data messages, in order
		read   int   // bytes read after the first
		behind bool
	}{
		{"at the limit", []int{10}, 0, false},
		{"a byte over it", []int{10, 1}, 0, true},
		{"at the limit after a read", []int{6, 8}, 4, false},
		{"a byte over it after a read", []int{6, 9}, 4, true},
	} {
		s := newStream(l, "000123", false, time.Second)
		s.limit = 10
		for i, n := range tt.bodies {
			s.receive(message{kind: msgData, stream: 1, seq: uint64(i), body: bytes.Repeat([]byte{'x'}, n)})
			if i == 0 && tt.read > 0 {
				if n, err := s.Read(make([]byte, tt.read)); n != tt.read || err != nil {
					t.Fatalf("%s: read %d, %v", tt.name, n, err)
				}
			}
		}
		s.mu.Lock()
		err := s.err
		s.mu.Unlock()
		if behind := errors.Is(err, ErrFellBehind); behind != tt.behind {
			t.Errorf("%s: %v; want fallen behind %t", tt.name, err, tt.behind)
		}
	}
}

// TestPushTakesWhatWaitedFirst: data that arrives after Push but before
// the delivery handed over what waited unread goes after it.
func TestPushTakesWhatWaitedFirst(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour})
	s := newStream(l, "000123", false, time.Hour)
	if err := l.add(s); err != nil {
		t.Fatal(err)
	}
	s.connect("peer", 1)
	s.receive(message{kind: msgData, stream: s.id, seq: 0, body: []byte("ab")})
	held, release := make(chan struct{}), make(chan struct{})
	l.later(func() { close(held); <-release }) // the delivery waits
	<-held
	p := newPushed()
	s.Push(p.take, p.end)
	s.receive(message{kind: msgData, stream: s.id, seq: 1, body: []byte("cd")}) // as the delivery would, before Push's hand-over
	close(release)
	s.Close()
	if data, _ := p.wait(t); data != "abcd" {
		t.Errorf("pushed %q, want %q", data, "abcd")
	}
}

// nextMessage reads the next message a subscription watches, as the
// stream's message it carries.
func nextMessage(t *testing.T, watch *nats.Subscription) (message, *nats.Msg) {
	t.Helper()
	msg, err := watch.NextMsg(await.Guard) // hang guard
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseMessage(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	return m, msg
}

// TestReadDeadlineWaitsForTheDelivery: a read deadline passes once the
// link's delivery has caught up past it (a mark sent after it came back):
// what the peer sent before it, waiting in the program's inbox behind a
// delivery that is held up, is read, not taken for the peer's silence.
func TestReadDeadlineWaitsForTheDelivery(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour}) // the link's own ticks never come: the test sends the marks
	s := newStream(l, "000123", true, time.Hour)
	if err := l.add(s); err != nil {
		t.Fatal(err)
	}
	s.connect("peer", 9)
	release := make(chan struct{})
	var once sync.Once
	releaseOnce := func() { once.Do(func() { close(release) }) }
	l.later(func() { <-release }) // the delivery is held up
	nc.Publish(l.inbox, appendMessage(nil, message{kind: msgData, stream: s.id, seq: 0, body: []byte("ping")}))
	nc.Flush()
	s.SetReadDeadline(time.Now()) // past before the read starts
	read := make(chan struct{})
	go func() {
		defer releaseOnce()
		for {
			s.mu.Lock()
			waiting := s.waiting
			s.mu.Unlock()
			select {
			case <-read:
				return
			default:
			}
			if waiting {
				return // the read waits for the delivery
			}
			time.Sleep(time.Millisecond)
		}
	}()
	buf := make([]byte, 8)
	n, err := s.Read(buf)
	close(read)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("a read past its deadline, while the peer's message waited in the inbox: %q, %v; want the message", buf[:n], err)
	}
	s.SetReadDeadline(time.Now())
	l.mark(time.Now()) // once it comes back the delivery has caught up past the deadline
	if n, err := s.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a read past its deadline once the delivery caught up past it: %q, %v; want the deadline's error", buf[:n], err)
	}
}
