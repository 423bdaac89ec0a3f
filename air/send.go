package air

import (
	"container/list"
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
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
// until the connection has taken them as the memory they hold (each
// message's encoding and its record, pending). A stream takes no more
// than there is room for (room): its writer that must not wait
// (WriteNow, a connection event's) writes what fits and leaves the rest
// to its caller, in whose queues (the device's radio connection) it
// waits or is lost as the radio's model says; a writer that may wait
// (Write) waits for room (waitRoom). Keepalives and a stream's close,
// one message each, are handed over whatever waits. A message the
// connection does not take fails its stream, as a Write that failed did
// (ErrLost), on the link's delivery goroutine (later).
//
// A writer that waits for room is woken only by what concerns it: for
// its stream's room, by the stream's data published, for the link's, by
// the sender setting room aside for it (grant), and by its stream's end
// or deadline and the sender's close; so an event of one stream costs
// one wake, not one for each writer that waits. The writers that wait
// for the link's room get it in the order they came, before the writers
// that must not wait: while one waits, WriteNow finds none of the
// link's room. A connection event never waits for data then either: it
// writes nothing, as when the link is full, and what it gathered goes to
// its session's writer, which takes its turn behind the writers that
// came first (the sessions' writers, which end at their deadline of 2
// s); without that, connection events of other devices that came after
// took the room each time the sender freed some.
type sender struct {
	l        *Link
	shards   [sendShards]sendShard
	size     atomic.Int64  // bytes held for messages handed over and not yet published, of every stream (pending)
	reserved atomic.Int64  // of the link's room, what is set aside for writers that waited for it (grant)
	queued   atomic.Int64  // writers in the link's queue
	wakes    atomic.Int64  // wakes of writers that wait for room, ever
	ready    atomic.Uint64 // the shards that got a message since the sender took them, a bit each
	kick     chan struct{} // wakes the sender for what waits, or to end
	left     chan struct{} // closed when the sender left
	sealed   atomic.Bool   // close has closed every shard: nothing more comes

	mu      sync.Mutex
	queue   list.List                // of *roomWaiter: the writers that wait for the link's room, in the order they came
	waiting map[*roomWaiter]struct{} // every writer that waits for room, for close
	marks   [][]byte                 // the link's marks, to its own inbox, after what waits
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

// pending is a message that waits: its stream, the subject it goes to
// (the stream's, shared), where its encoding ends in its shard's buf,
// and the bytes of the stream's data it carries. The link's bound counts
// a message as its encoding and its pending (pendingSize): a data
// message of one byte holds 45 bytes or so.
type pending struct {
	s       *Stream
	subject string
	end     int
	data    int
}

// pendingSize is what a message's pending holds, besides its encoding.
const pendingSize = int64(unsafe.Sizeof(pending{}))

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
	return &sender{l: l, kick: make(chan struct{}, 1), left: make(chan struct{}), waiting: map[*roomWaiter]struct{}{}}
}

// limit returns the link's bound of what its streams handed over and the
// sender has not published.
func (sn *sender) limit() int64 { return max(sendLimit, sendShare*sn.l.nstreams.Load()) }

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
	sn.size.Add(int64(len(sh.buf)-n) + pendingSize)
	sh.mu.Unlock()
	if wake {
		sn.ready.Or(1 << i)
		sn.wake()
	}
	return nil
}

// roomWaiter is a writer that waits for room (waitRoom): for its
// stream's, woken only by what frees it (the stream's data published,
// the stream's end, a change of its write deadline), or in the link's
// queue for the link's, woken only when the sender set room aside for it
// (grant), or by its stream's end or deadline, or the sender's close.
type roomWaiter struct {
	s     *Stream
	want  int           // bytes of data its write has left
	wake  chan struct{} // one wake waits here at most
	grant int64         // the link's room set aside for it, once granted
	elem  *list.Element // its place in the queue; nil when not in it
}

// cost returns the link's room w waits for: one message of as much of
// its data as its stream has room for.
func (w *roomWaiter) cost() int64 {
	return msgCost + min(int64(w.want), streamSendBuffer-w.s.unsent.Load(), maxChunk)
}

// signal wakes w, and counts the wake.
func (sn *sender) signal(w *roomWaiter) {
	sn.wakes.Add(1)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// wakeStream wakes the writer of s that waits for room, if any: the
// stream ended or its write deadline changed.
func (sn *sender) wakeStream(s *Stream) {
	if w := s.waiter.Load(); w != nil {
		sn.signal(w)
	}
}

// msgCost is the most the link counts for a data message besides its
// data: its record (pending) and its header.
const msgCost = pendingSize + 1 + 2*binary.MaxVarintLen64

// room returns how many bytes of data stream s may hand over now in one
// message, with grant bytes of the link's room set aside for it: what is
// left of its own bound and of the link's, zero or more. While writers
// wait in the link's queue, the link's room is theirs first (grant).
func (sn *sender) room(s *Stream, grant int64) int {
	own := streamSendBuffer - s.unsent.Load()
	link := grant
	if sn.queued.Load() == 0 {
		link += max(0, sn.limit()-sn.size.Load()-sn.reserved.Load())
	}
	return int(max(0, min(own, link-msgCost, maxChunk)))
}

// waitRoom waits until stream s has room for more of the want bytes its
// writer has left: first its own (see room), then the link's, in the
// link's queue, until the sender sets it aside (grant), which the writer
// hands back with release once it wrote. It returns early when the
// stream's write deadline passes (os.ErrDeadlineExceeded), the stream
// ends (nil: the writer finds the end) or the sender closes (ErrClosed).
// The stream's mu is not held; one writer of s waits at a time (wmu).
func (sn *sender) waitRoom(s *Stream, want int) (grant int64, err error) {
	w := &roomWaiter{s: s, want: want, wake: make(chan struct{}, 1)}
	sn.mu.Lock()
	sn.waiting[w] = struct{}{}
	sn.mu.Unlock()
	s.waiter.Store(w)
	defer sn.leave(s, w)
	var timer *time.Timer
	var armed time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if sn.sealed.Load() {
			return 0, ErrClosed
		}
		ended, dl := s.writeState()
		if ended {
			return 0, nil
		}
		var tc <-chan time.Time
		if !dl.IsZero() {
			if !time.Now().Before(dl) {
				return 0, os.ErrDeadlineExceeded
			}
			if !dl.Equal(armed) {
				if timer != nil {
					timer.Stop()
				}
				timer, armed = time.NewTimer(time.Until(dl)), dl
			}
			tc = timer.C
		}
		if own := streamSendBuffer - s.unsent.Load(); own > 0 {
			sn.mu.Lock()
			if w.grant > 0 {
				grant, w.grant = w.grant, 0
				sn.mu.Unlock()
				return grant, nil
			}
			if w.elem == nil {
				w.elem = sn.queue.PushBack(w)
				sn.queued.Add(1)
				sn.grantLocked()
				if w.grant > 0 {
					grant, w.grant = w.grant, 0
					sn.mu.Unlock()
					return grant, nil
				}
			}
			sn.mu.Unlock()
		}
		select {
		case <-w.wake:
		case <-tc:
			armed = time.Time{} // fired: to be armed again, were the deadline moved
		}
	}
}

// leave takes w, a writer of s that waited for room, off the link's
// queue and hands back the room set aside for it, for the writers behind.
func (sn *sender) leave(s *Stream, w *roomWaiter) {
	s.waiter.Store(nil)
	sn.mu.Lock()
	delete(sn.waiting, w)
	if w.elem != nil {
		sn.queue.Remove(w.elem)
		w.elem = nil
		sn.queued.Add(-1)
	}
	if w.grant > 0 {
		sn.reserved.Add(-w.grant)
		w.grant = 0
	}
	sn.grantLocked()
	sn.mu.Unlock()
}

// release hands back room the sender set aside for a writer (grant) once
// it wrote, for the writers behind it in the link's queue.
func (sn *sender) release(grant int64) {
	sn.mu.Lock()
	sn.reserved.Add(-grant)
	sn.grantLocked()
	sn.mu.Unlock()
}

// grant sets the link's room aside for the writers that wait for it, in
// the order they came, as long as there is room for the first.
func (sn *sender) grant() {
	if sn.queued.Load() == 0 {
		return
	}
	sn.mu.Lock()
	sn.grantLocked()
	sn.mu.Unlock()
}

// grantLocked is grant with sn.mu held.
func (sn *sender) grantLocked() {
	for e := sn.queue.Front(); e != nil; e = sn.queue.Front() {
		w := e.Value.(*roomWaiter)
		cost := w.cost()
		if sn.limit()-sn.size.Load()-sn.reserved.Load() < cost {
			return
		}
		sn.queue.Remove(e)
		w.elem = nil
		sn.queued.Add(-1)
		w.grant = cost
		sn.reserved.Add(cost)
		sn.signal(w)
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
		for i := range taken {
			t := &taken[i]
			if len(t.msgs) == 0 {
				continue
			}
			sn.publish(t.msgs, t.buf)
			sn.size.Add(-int64(len(t.buf)) - int64(len(t.msgs))*pendingSize)
			if cap(t.buf) > keepSendBuffer || cap(t.msgs) > keepSendMsgs {
				t.msgs, t.buf = nil, nil
			} else {
				t.msgs, t.buf = t.msgs[:0], t.buf[:0]
			}
		}
		sn.grant() // the link's room to the writers that wait for it, first
		for _, b := range marks {
			sn.l.nc.Publish(sn.l.inbox, b)
		}
		if sealed {
			return
		}
	}
}

// publish publishes msgs, whose encodings are buf's, in order, and lets
// their streams hand over as much again: a stream's writer that waits for
// its stream's room is woken once it has some. A message the connection
// does not take fails its stream.
func (sn *sender) publish(msgs []pending, buf []byte) {
	start := 0
	for i, p := range msgs {
		if err := sn.l.nc.Publish(p.subject, buf[start:p.end]); err != nil {
			s := p.s
			sn.l.later(func() { s.fail(sn.l.refused(err), false) })
		}
		if p.data > 0 && p.s.unsent.Add(-int64(p.data))+int64(p.data) >= streamSendBuffer {
			// The stream was full: its writer, if one waits, waits for its
			// stream's room, not in the link's queue, which it joins with
			// room of its stream's that only it takes.
			sn.wakeStream(p.s)
		}
		start = p.end
		msgs[i] = pending{}
	}
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
	sn.mu.Lock()
	for w := range sn.waiting {
		sn.signal(w)
	}
	sn.mu.Unlock()
	sn.wake()
	<-sn.left
}
