package air

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// sender publishes the messages of the link's streams on a goroutine of
// its own, each stream's in the order the stream handed them over. A NATS
// connection takes its publishes one at a time under one lock, which its
// writes to the server's socket hold as well; the writers of a program's
// streams (the connection events of thousands of devices, on the
// goroutines of their clock, and the goroutines that read the streams)
// that published themselves waited for one another and for the socket,
// and a fleet that had the cores for more ran at about one. A writer now
// hands its message over and goes on, to one of several queues (shards)
// by its stream, so that writers of different streams seldom meet at a
// lock; the sender takes the queues that have messages in turn and is
// the one that waits for the connection.
//
// What a stream hands over and the sender has not published yet is
// bounded, as a BLE link's notification buffers are: at most
// streamSendBuffer bytes of a stream's data, and a bound that grows
// with the link's streams (limit) of all of them together, counted
// until the connection has taken them. A stream takes no more than
// there is room for (room): its writer that must not wait (WriteNow, a
// connection event's) writes what fits and leaves the rest to its
// caller, in whose queues (the device's radio connection) it waits or
// is lost as the radio's model says; a writer that may wait (Write)
// waits for room (waitRoom). Keepalives and a stream's close, one
// message each, are handed over whatever waits. A message the
// connection does not take fails its stream, as a Write that failed did
// (ErrLost), on the link's delivery goroutine (later).
type sender struct {
	l       *Link
	shards  [sendShards]sendShard
	size    atomic.Int64  // bytes handed over and not yet published, of every stream
	ready   atomic.Uint64 // the shards that got a message since the sender took them, a bit each
	waiters atomic.Int32  // writers that wait for room (waitRoom)
	kick    chan struct{} // wakes the sender for what waits, or to end
	left    chan struct{} // closed when the sender left
	sealed  atomic.Bool   // close has closed every shard: nothing more comes

	mu    sync.Mutex
	space sync.Cond // broadcast when the sender published what waited, at a stream's end and at close
	marks [][]byte  // the link's marks, to its own inbox, after what waits
}

// sendShards is how many queues the streams' messages wait in: one bit
// each of sender.ready.
const sendShards = 64

// sendShard is one queue of messages that wait, of the streams whose id
// it holds (id modulo sendShards), padded to a cache line of its own.
type sendShard struct {
	mu     sync.Mutex
	msgs   []pending // in order
	buf    []byte    // their encodings, back to back
	closed bool      // nothing more is taken
	_      [64]byte
}

// pending is a message that waits: its stream, the subject it goes to,
// where its encoding ends in its shard's buf, and the bytes of the
// stream's data it carries.
type pending struct {
	s       *Stream
	subject string
	end     int
	data    int
}

// The bounds of what is handed over and not yet published:
// streamSendBuffer bytes of one stream's data (nearly three seconds of a
// device that streams IMU6, ECG and heart rate, docs/scaling.md), and of
// all a link's messages sendLimit bytes, or sendShare a stream when that
// is more (limit), as a fleet's other bounds grow with its devices.
const (
	streamSendBuffer = 16 << 10
	sendLimit        = 4 << 20
	sendShare        = 8 << 10
)

// keepSendBuffer is the most a shard's buffer of encodings keeps between
// batches, and keepSendMsgs the most messages its list keeps (8 KiB of
// them): the sender's and the shards' together keep at most 2 × 64 × 16
// KiB. Larger ones, grown while the sender fell behind or by a batch of
// many small messages, go.
const (
	keepSendBuffer = 8 << 10
	keepSendMsgs   = 256
)

func newSender(l *Link) *sender {
	sn := &sender{l: l, kick: make(chan struct{}, 1), left: make(chan struct{})}
	sn.space.L = &sn.mu
	return sn
}

// limit returns the link's bound of what its streams handed over and the
// sender has not published.
func (sn *sender) limit() int64 { return max(sendLimit, sendShare*sn.l.nstreams.Load()) }

// room returns how many bytes of data stream s may hand over now: what is
// left of its own bound and of the link's, zero or more.
func (sn *sender) room(s *Stream) int {
	return int(max(0, min(streamSendBuffer-s.unsent.Load(), sn.limit()-sn.size.Load())))
}

// send hands the sender m, to subject, for stream s, after the messages
// s handed it before, without waiting; the caller sees to the bounds
// (room). It returns ErrClosed once the sender was closed.
func (sn *sender) send(s *Stream, subject string, m message) error {
	i := s.id % sendShards
	sh := &sn.shards[i]
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return ErrClosed
	}
	wake := len(sh.msgs) == 0
	n := len(sh.buf)
	sh.buf = appendMessage(sh.buf, m)
	data := 0
	if m.kind == msgData {
		data = len(m.body)
	}
	sh.msgs = append(sh.msgs, pending{s: s, subject: subject, end: len(sh.buf), data: data})
	s.unsent.Add(int64(data))
	sn.size.Add(int64(len(sh.buf) - n))
	sh.mu.Unlock()
	if wake {
		sn.ready.Or(1 << i)
		sn.wake()
	}
	return nil
}

// waitRoom waits until stream s has room (see room), or its write
// deadline passes (os.ErrDeadlineExceeded), or it ends (nil: the writer
// finds the end), or the sender closes (ErrClosed). The stream's mu is
// not held.
func (sn *sender) waitRoom(s *Stream) error {
	var timer *time.Timer
	var armed time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.waiters.Add(1)
	defer sn.waiters.Add(-1)
	for sn.room(s) == 0 {
		if sn.sealed.Load() {
			return ErrClosed
		}
		ended, dl := s.writeState()
		if ended {
			return nil
		}
		if !dl.IsZero() {
			if !time.Now().Before(dl) {
				return os.ErrDeadlineExceeded
			}
			if !dl.Equal(armed) {
				if timer != nil {
					timer.Stop()
				}
				timer, armed = time.AfterFunc(time.Until(dl), sn.broadcast), dl
			}
		}
		sn.space.Wait()
	}
	return nil
}

// broadcast wakes the writers that wait for room, to look again.
func (sn *sender) broadcast() {
	sn.mu.Lock()
	sn.space.Broadcast()
	sn.mu.Unlock()
}

// wakeWaiters wakes the writers that wait for room, if any, to look
// again: a stream ended or its write deadline changed.
func (sn *sender) wakeWaiters() {
	if sn.waiters.Load() > 0 {
		sn.broadcast()
	}
}

// mark hands the sender a message to the link's own inbox that goes after
// everything the streams handed it before.
func (sn *sender) mark(m message) {
	sn.mu.Lock()
	sn.marks = append(sn.marks, appendMessage(nil, m))
	sn.mu.Unlock()
	sn.wake()
}

func (sn *sender) wake() {
	select {
	case sn.kick <- struct{}{}:
	default:
	}
}

// run publishes what waits until close, and what waits at close, and
// then leaves. Each round takes the marks first and then the shards that
// have messages, and publishes the marks last: a mark goes after what was
// handed over before it. A shard's messages count against the bounds
// until they are published.
func (sn *sender) run() {
	defer close(sn.left)
	var taken [sendShards]struct {
		msgs []pending
		buf  []byte
	}
	for {
		sealed := sn.sealed.Load()
		if !sealed {
			<-sn.kick
		}
		sn.mu.Lock()
		marks := sn.marks
		sn.marks = nil
		sn.mu.Unlock()
		ready := sn.ready.Swap(0)
		if sealed { // every shard closed before: this round takes the last
			ready = ^uint64(0)
		}
		for i := range sn.shards {
			if ready&(1<<i) == 0 {
				continue
			}
			sh, t := &sn.shards[i], &taken[i]
			sh.mu.Lock()
			t.msgs, sh.msgs = sh.msgs, t.msgs[:0]
			t.buf, sh.buf = sh.buf, t.buf[:0]
			sh.mu.Unlock()
		}
		freed := false // a stream that was full has room again
		for i := range taken {
			t := &taken[i]
			if len(t.msgs) == 0 {
				continue
			}
			freed = sn.publish(t.msgs, t.buf) || freed
			sn.size.Add(-int64(len(t.buf)))
			if cap(t.buf) > keepSendBuffer || cap(t.msgs) > keepSendMsgs {
				t.msgs, t.buf = nil, nil
			} else {
				t.msgs, t.buf = t.msgs[:0], t.buf[:0]
			}
		}
		if freed || sn.size.Load() <= sn.limit()/4*3 { // a full stream's room, or a link's that emptied a quarter
			sn.wakeWaiters() // at most once a round: thousands may wait, for the link's room
		}
		for _, b := range marks {
			sn.l.nc.Publish(sn.l.inbox, b)
		}
		if sealed {
			return
		}
	}
}

// publish publishes msgs, whose encodings are buf's, in order, and lets
// their streams hand over as much again; it reports whether a stream that
// was full has room again. A message the connection does not take fails
// its stream.
func (sn *sender) publish(msgs []pending, buf []byte) (freed bool) {
	start := 0
	for i, p := range msgs {
		if err := sn.l.nc.Publish(p.subject, buf[start:p.end]); err != nil {
			s := p.s
			sn.l.later(func() { s.fail(lost("the NATS connection did not take the message: %v", sn.l.unreachable(err)), false) })
		}
		if p.data > 0 && p.s.unsent.Add(-int64(p.data))+int64(p.data) >= streamSendBuffer {
			freed = true
		}
		start = p.end
		msgs[i] = pending{}
	}
	return freed
}

// close has the sender publish what waits and leave, and waits for it;
// what the streams send from then on is not taken (ErrClosed), and
// writers that wait for room stop waiting.
func (sn *sender) close() {
	for i := range sn.shards {
		sh := &sn.shards[i]
		sh.mu.Lock()
		sh.closed = true
		sh.mu.Unlock()
	}
	sn.sealed.Store(true)
	sn.broadcast()
	sn.wake()
	<-sn.left
}
