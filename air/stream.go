package air

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Kinds of the messages on an inbox. A message is its kind, the id the
// receiver gave the stream (uvarint), a sequence number (uvarint) and a
// body.
const (
	msgData      = 'D' // sequence number of this data message, then the bytes of the stream
	msgKeepalive = 'K' // sequence number the next data message will have; no body
	msgClose     = 'C' // sequence number the next data message would have, then why (UTF-8; empty: an orderly close)
	msgMark      = 'M' // stream 0: a program's mark to its own inbox, named by the sequence number; no body
)

// maxChunk bounds the stream bytes of one data message.
const maxChunk = 32 << 10

// maxReason bounds the text of a close.
const maxReason = 1024

// ErrMessage is a stream message that does not parse.
var ErrMessage = errors.New("malformed stream message")

// message is one message of an inbox.
type message struct {
	kind   byte
	stream uint64 // the receiver's id of the stream; 0 for a mark
	seq    uint64
	body   []byte
}

// appendMessage appends the encoding of m to b.
func appendMessage(b []byte, m message) []byte {
	b = append(b, m.kind)
	b = binary.AppendUvarint(b, m.stream)
	b = binary.AppendUvarint(b, m.seq)
	return append(b, m.body...)
}

// parseMessage parses a message of an inbox; the body shares data.
func parseMessage(data []byte) (message, error) {
	if len(data) == 0 {
		return message{}, fmt.Errorf("%w: empty", ErrMessage)
	}
	m := message{kind: data[0]}
	rest := data[1:]
	stream, n := binary.Uvarint(rest)
	if n <= 0 {
		return message{}, fmt.Errorf("%w: no stream id after the kind", ErrMessage)
	}
	rest = rest[n:]
	seq, n := binary.Uvarint(rest)
	if n <= 0 {
		return message{}, fmt.Errorf("%w: no sequence number after the stream id", ErrMessage)
	}
	m.stream, m.seq, m.body = stream, seq, rest[n:]
	if m.kind != msgMark && m.stream == 0 {
		return message{}, fmt.Errorf("%w: stream id 0; a stream's id is 1 or more", ErrMessage)
	}
	switch m.kind {
	case msgData:
		if len(m.body) == 0 || len(m.body) > maxChunk {
			return message{}, fmt.Errorf("%w: data of %d bytes; 1 to %d", ErrMessage, len(m.body), maxChunk)
		}
	case msgKeepalive:
		if len(m.body) != 0 {
			return message{}, fmt.Errorf("%w: a keepalive with a body", ErrMessage)
		}
	case msgClose:
		if len(m.body) > maxReason || !utf8.Valid(m.body) {
			return message{}, fmt.Errorf("%w: a close's reason is at most %d bytes of UTF-8", ErrMessage, maxReason)
		}
	case msgMark:
		if m.stream != 0 || len(m.body) != 0 {
			return message{}, fmt.Errorf("%w: a mark is of stream 0, with no body", ErrMessage)
		}
	default:
		return message{}, fmt.Errorf("%w: kind %q; D, K, C or M", ErrMessage, m.kind)
	}
	return m, nil
}

// ErrLost is a stream that broke: its peer stopped answering, the NATS
// connection was lost, messages went missing, or the peer closed it for a
// fault. The error's text says which.
var ErrLost = errors.New("the radio link was lost")

// StreamError is why a stream ended: Err is ErrLost or ErrFellBehind, and
// Reason says what happened.
type StreamError struct {
	Err    error
	Reason string
}

func (e *StreamError) Error() string { return e.Err.Error() + ": " + e.Reason }

// Unwrap returns ErrLost or ErrFellBehind.
func (e *StreamError) Unwrap() error { return e.Err }

// lost is a StreamError of ErrLost.
func lost(format string, a ...any) error {
	return &StreamError{Err: ErrLost, Reason: fmt.Sprintf(format, a...)}
}

// ErrFellBehind is a stream whose reader did not keep up: rather than hold
// up the sender, the stream closes.
var ErrFellBehind = errors.New("the reader fell behind")

// Stream is one stream of the radio link over NATS: a net.Conn whose bytes
// travel as messages to the inbox of the peer's program, each naming the
// stream by the id the peer gave it. Writes never wait for the peer; what
// the peer has not read waits in a bounded buffer at the peer, which
// closes the stream when it overflows. Each side sends a keepalive every
// interval, unless it sent data in the last half of it, and closes a
// stream whose peer was silent for Missed of its intervals.
type Stream struct {
	l      *Link
	serial string
	id     uint64    // this side's id of the stream, which the peer's messages name
	device bool      // this side is the device
	ln     *Listener // the device's, on the device's side

	mu      sync.Mutex
	out     string        // the peer's inbox; "" until a central's dial is answered
	peer    uint64        // the peer's id of the stream
	program string        // the peer's program
	process Process       // the device's program, on the central's side, when it said
	buf     []byte        // received; buf[off:] is not read yet
	off     int           // what Read took of buf
	wake    chan struct{} // closed and replaced, when a reader waits, as buf, err or the read deadline change
	waiting bool          // a reader waits on wake
	rseq    uint64        // the sequence number the next data message must have
	wseq    uint64        // the sequence number of the next data message sent
	sent    time.Time     // when the last data message went
	err     error         // why reads end, once the stream ended
	closed  bool          // Close was called or the stream ended
	heard   time.Time     // when the peer was last heard
	every   time.Duration // the peer's keepalive interval
	rdl     time.Time     // read deadline
	wdl     time.Time     // write deadline
	limit   int           // bytes buf may hold

	wmu    sync.Mutex                 // held by a write, while it hands its bytes over
	unsent atomic.Int64               // bytes of data handed to the sender and not yet published (sender.room)
	waiter atomic.Pointer[roomWaiter] // the write that waits for room, if any (sender.waitRoom)

	// Push: run on the link's delivery goroutine only
	push    func([]byte) // takes the data once Push was called
	pushEnd func(error)  // is told the end; nil once it was
	first   []byte       // what waited unread when Push was called, until push takes it
}

// keepBuffer is the most a stream's empty receive buffer keeps for the
// next messages; a larger one, grown by a reader that fell behind, goes.
const keepBuffer = 64 << 10

// addr names a side of a stream.
type addr string

func (addr) Network() string  { return "nats" }
func (a addr) String() string { return string(a) }

// newStream returns a stream to or of the device with a serial number;
// the link's add gives it its id.
func newStream(l *Link, serial string, device bool, peerEvery time.Duration) *Stream {
	return &Stream{l: l, serial: serial, device: device, wake: make(chan struct{}), heard: time.Now(),
		every: peerEvery, limit: l.opts.ReadBuffer}
}

// connect sets where the peer takes the stream's messages: the inbox of
// its program, and its id of the stream.
func (s *Stream) connect(program string, peer uint64) {
	s.mu.Lock()
	s.out, s.peer, s.program = InboxSubject(program), peer, program
	s.mu.Unlock()
}

// peerName says who is at the other end, for messages.
func (s *Stream) peerName() string {
	if s.device {
		return "the central"
	}
	return "device " + s.serial + "'s program"
}

// receive takes one message of the peer; it never blocks.
func (s *Stream) receive(m message) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.heard = time.Now()
	if m.seq != s.rseq {
		missing := m.seq - s.rseq
		s.mu.Unlock()
		s.fail(lost("%d messages from %s went missing on the way (the NATS connection fell behind or was cut)", missing, s.peerName()), true)
		return
	}
	switch m.kind {
	case msgData:
		s.rseq++
		if push := s.push; push != nil {
			first := s.first
			s.first = nil
			s.mu.Unlock()
			if len(first) > 0 {
				push(first)
			}
			push(m.body)
			return
		}
		if len(s.buf)-s.off+len(m.body) > s.limit {
			s.mu.Unlock()
			who := "the device's program"
			if !s.device {
				who = "the central"
			}
			s.fail(&StreamError{Err: ErrFellBehind, Reason: fmt.Sprintf("%s left %d bytes of device %s's stream unread", who, s.limit, s.serial)}, true)
			return
		}
		if s.off > 0 && len(s.buf)+len(m.body) > cap(s.buf) {
			s.buf = s.buf[:copy(s.buf, s.buf[s.off:])]
			s.off = 0
		}
		s.buf = append(s.buf, m.body...)
		s.signal()
	case msgClose:
		if len(m.body) == 0 {
			s.err = io.EOF
		} else {
			s.err = lost("%s", m.body)
		}
		s.closed = true
		s.signal()
		s.mu.Unlock()
		s.end()
		return
	}
	s.mu.Unlock()
}

// signal wakes the readers that wait; s.mu is held.
func (s *Stream) signal() {
	if s.waiting {
		close(s.wake)
		s.wake = make(chan struct{})
		s.waiting = false
	}
}

// Read reads what the peer sent. After the peer's orderly close it returns
// io.EOF; after a fault, an error that wraps ErrLost or ErrFellBehind.
func (s *Stream) Read(p []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		if s.off < len(s.buf) {
			n := copy(p, s.buf[s.off:])
			s.off += n
			if s.off == len(s.buf) {
				s.buf, s.off = s.buf[:0], 0
				if cap(s.buf) > keepBuffer {
					s.buf = nil
				}
			}
			s.mu.Unlock()
			return n, nil
		}
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return 0, err
		}
		dl := s.rdl
		var delivered <-chan struct{} // moves on while the delivery is behind the deadline
		if !dl.IsZero() && !time.Now().Before(dl) {
			if delivered = s.l.deliveredPast(dl); delivered == nil {
				s.mu.Unlock()
				return 0, os.ErrDeadlineExceeded
			}
		}
		wake := s.wake
		s.waiting = true
		s.mu.Unlock()
		var tc <-chan time.Time
		if !dl.IsZero() && delivered == nil {
			if timer == nil {
				timer = time.NewTimer(time.Until(dl))
			} else {
				timer.Reset(time.Until(dl))
			}
			tc = timer.C
		}
		select {
		case <-wake:
		case <-tc:
		case <-delivered:
		}
	}
}

// Write sends p to the peer. It does not wait for the peer: it hands p to
// the link's sender, which publishes it after what the stream sent
// before. It waits only for room at the sender, which holds a bounded
// number of bytes of each stream that it has not published yet (like
// the notification buffers of a BLE link, see sender), until the write
// deadline; it fails when the stream ended. A message the NATS
// connection does not take ends the stream, with ErrLost, when the sender
// meets it.
func (s *Stream) Write(p []byte) (int, error) {
	n, err := s.write(p, true)
	if errors.Is(err, ErrLost) {
		s.fail(err, false)
	}
	return n, err
}

// WriteNow writes what of p the sender has room for at once (see Write)
// and returns how much that was, without waiting: a writer that must not
// wait (one on the goroutine of a connection event, serial.NowWriter)
// leaves the rest to a writer that may.
func (s *Stream) WriteNow(p []byte) (int, error) {
	n, err := s.write(p, false)
	if errors.Is(err, ErrLost) {
		s.fail(err, false)
	}
	return n, err
}

// write hands the sender p, or what of p it has room for when wait is
// false. One write of the stream hands over at a time, so that the
// writes' bytes do not interleave: one that must not wait finds no room
// while another is under way.
func (s *Stream) write(p []byte, wait bool) (int, error) {
	if wait {
		s.wmu.Lock()
	} else if !s.wmu.TryLock() {
		return 0, nil
	}
	defer s.wmu.Unlock()
	n := 0
	var grant int64 // the link's room the sender set aside for this write (sender.waitRoom)
	defer func() {
		if grant > 0 {
			s.l.send.release(grant)
		}
	}()
	for {
		s.mu.Lock()
		if s.closed {
			err := s.err
			s.mu.Unlock()
			if err != nil && err != io.EOF {
				return n, err
			}
			return n, net.ErrClosed
		}
		now := time.Now()
		if !s.wdl.IsZero() && !now.Before(s.wdl) {
			s.mu.Unlock()
			return n, os.ErrDeadlineExceeded
		}
		if n == len(p) {
			s.mu.Unlock()
			return n, nil
		}
		room := s.l.send.room(s, grant)
		if room > 0 {
			chunk := p[n:min(len(p), n+room)]
			if err := s.sendLocked(message{kind: msgData, seq: s.wseq, body: chunk}); err != nil {
				s.mu.Unlock()
				return n, lost("the NATS connection did not take the message: %v", err)
			}
			s.sent = now
			s.wseq++
			n += len(chunk)
		}
		s.mu.Unlock()
		if grant > 0 { // used: what is left of it goes to the writers behind
			s.l.send.release(grant)
			grant = 0
		}
		if n == len(p) {
			return n, nil
		}
		if room > 0 {
			continue
		}
		if !wait {
			return n, nil
		}
		var err error
		if grant, err = s.l.send.waitRoom(s, len(p)-n); err != nil {
			return n, err
		}
	}
}

// writeState reports whether the stream ended, and its write deadline.
func (s *Stream) writeState() (ended bool, deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed, s.wdl
}

// sendLocked hands m, of the peer's id of the stream, to the link's
// sender for the peer's inbox, after the stream's messages before it;
// s.mu is held.
func (s *Stream) sendLocked(m message) error {
	if s.out == "" {
		return nil // a central's dial not yet answered: the device does not know the stream
	}
	m.stream = s.peer
	return s.l.send.send(s, s.out, m)
}

// Messages returns how many data messages the stream has sent and
// received: a write of up to 32 KiB is one message, whatever frames it
// carries.
func (s *Stream) Messages() (sent, received uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wseq, s.rseq
}

// keepalive sends a keepalive, unless the stream sent data in the last
// half interval or data of its waits at the sender (so that the peer
// hears from it at least every one and a half intervals), or ends a
// stream whose peer was silent for Missed of its intervals. caught is
// when the link's delivery of what reached it last caught up (see
// Link.tick): the peer's messages sent until then have been taken, so
// the peer was silent from when it was last heard until then at least,
// whatever waits behind.
func (s *Stream) keepalive(now, caught time.Time) {
	s.mu.Lock()
	if s.closed || s.out == "" {
		s.mu.Unlock()
		return
	}
	if silent := caught.Sub(s.heard); silent > time.Duration(s.l.opts.Missed)*s.every {
		s.mu.Unlock()
		s.fail(lost("%s stopped answering (nothing for %v; it sends a keepalive every %v)", s.peerName(), silent.Round(time.Millisecond), s.every), false)
		return
	}
	if now.Sub(s.sent) >= s.l.opts.Interval/2 && s.unsent.Load() == 0 { // data that waits says as much
		s.sendLocked(message{kind: msgKeepalive, seq: s.wseq})
	}
	s.mu.Unlock()
}

// fail ends the stream with why; tell sends why to the peer.
func (s *Stream) fail(why error, tell bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.err == nil {
		s.err = why
	}
	s.closed = true
	if tell {
		reason := why.Error()
		if len(reason) > maxReason {
			reason = strings.ToValidUTF8(reason[:maxReason], "")
		}
		s.sendLocked(message{kind: msgClose, seq: s.wseq, body: []byte(reason)})
	}
	s.signal()
	s.mu.Unlock()
	s.l.send.wakeStream(s) // a write that waits for room ends
	s.l.log.Info("radio stream lost", "device", s.serial, "stream", s.id, "why", why)
	s.end()
}

// end lets go of the stream's place in the link, and has Push's end told.
func (s *Stream) end() {
	s.mu.Lock()
	pushing := s.pushEnd != nil
	s.mu.Unlock()
	s.l.forget(s)
	if pushing {
		s.l.later(s.handEnd)
	}
}

// Push hands what the peer sends to data as it arrives, instead of
// keeping it for Read: first what waits unread, then the bytes of each
// data message, in order; when the stream ends, end is told once, after
// the last data, with what Read would return (io.EOF after the peer's
// orderly close). Both run on the goroutine that delivers the messages of
// all the streams of the link, one call at a time: they must not block,
// and b is valid only until data returns. They may Write to and Close the
// stream. A reader that keeps up needs no goroutine of its own this way,
// and nothing waits in the stream's buffer (ReadBuffer does not apply).
// After Push, Read returns only the end. Push is called once.
func (s *Stream) Push(data func(b []byte), end func(error)) {
	s.mu.Lock()
	s.push, s.pushEnd = data, end
	s.first = append([]byte(nil), s.buf[s.off:]...)
	s.buf, s.off = nil, 0
	ended := s.closed
	s.mu.Unlock()
	s.l.later(s.handFirst)
	if ended {
		s.l.later(s.handEnd)
	}
}

// handFirst hands push what waited unread when Push was called.
func (s *Stream) handFirst() {
	s.mu.Lock()
	first, push := s.first, s.push
	s.first = nil
	s.mu.Unlock()
	if len(first) > 0 {
		push(first)
	}
}

// handEnd tells Push's end, once.
func (s *Stream) handEnd() {
	s.handFirst()
	s.mu.Lock()
	end, err := s.pushEnd, s.err
	s.pushEnd = nil
	s.mu.Unlock()
	if end != nil {
		end(err)
	}
}

// Close ends the stream: the peer reads what was sent before, then io.EOF,
// or, when the device left the air, an ErrLost that says why.
func (s *Stream) Close() error {
	var reason string
	if s.ln != nil {
		if why := s.ln.leftWhy(); why != "" {
			reason = "device " + s.serial + " went off the air: " + why
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.err == nil {
		s.err = net.ErrClosed
	}
	s.sendLocked(message{kind: msgClose, seq: s.wseq, body: []byte(reason)})
	s.buf, s.off = nil, 0
	s.signal()
	s.mu.Unlock()
	s.l.send.wakeStream(s) // a write that waits for room ends
	s.end()
	return nil
}

// LocalAddr names this side of the stream.
func (s *Stream) LocalAddr() net.Addr {
	if s.device {
		return addr("device " + s.serial)
	}
	return addr(fmt.Sprintf("central of program %s, stream %d", s.l.id, s.id))
}

// RemoteAddr names the peer.
func (s *Stream) RemoteAddr() net.Addr {
	if s.device {
		s.mu.Lock()
		defer s.mu.Unlock()
		return addr(fmt.Sprintf("central of program %s, stream %d", s.program, s.peer))
	}
	return addr("device " + s.serial)
}

// Process names the process of the device's program, on the central's
// side of a stream, as the program said when it took the stream; the
// zero Process when it did not say, and on the device's side.
func (s *Stream) Process() Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.process
}

// SetDeadline sets the read and write deadlines.
func (s *Stream) SetDeadline(t time.Time) error {
	s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

// SetReadDeadline bounds the wait of reads: a read fails with
// os.ErrDeadlineExceeded once t has passed and the link's delivery has
// caught up past it (a mark the link sent after t came back, see
// Link.tick). What the peer sent before t is read, however long it waited
// in the program's inbox behind a delivery that fell behind: a deadline
// bounds the peer's silence, not the program's. On a link that keeps up
// that is up to one interval (Options.Interval) after t.
func (s *Stream) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rdl = t
	s.signal()
	return nil
}

// SetWriteDeadline makes writes fail once t has passed; writes never wait
// for the peer otherwise, and wait for room at the link's sender until t.
func (s *Stream) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	s.wdl = t
	s.mu.Unlock()
	s.l.send.wakeStream(s) // to wait until the new deadline
	return nil
}
