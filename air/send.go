package air

import (
	"sync"
	"sync/atomic"
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
// lock; the sender takes every queue in turn and is the one that waits for
// the connection.
//
// What waits is bounded (sendLimit bytes): over it, writers wait for the
// sender, as they waited for the connection before. A message the
// connection does not take fails its stream, as a Write that failed did
// (ErrLost), on the link's delivery goroutine (later): the writer that
// handed it over may wait for the sender, holding its stream.
type sender struct {
	l      *Link
	shards [sendShards]sendShard
	size   atomic.Int64  // bytes that wait in the shards
	kick   chan struct{} // wakes the sender for what waits, or to end
	left   chan struct{} // closed when the sender left
	sealed atomic.Bool   // close has closed every shard: nothing more comes

	mu    sync.Mutex
	space sync.Cond // broadcast when the sender took what waited, and at close
	marks [][]byte  // the link's marks, to its own inbox, after what waits
}

// sendShards is how many queues the streams' messages wait in.
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
// and where its encoding ends in its shard's buf.
type pending struct {
	s       *Stream
	subject string
	end     int
}

// sendLimit is the most bytes of messages that wait for the sender before
// writers wait for it.
const sendLimit = 4 << 20

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

// send hands the sender m, to subject, for stream s, after the messages
// s handed it before; it waits while sendLimit bytes wait already. It
// returns ErrClosed once the sender was closed.
func (sn *sender) send(s *Stream, subject string, m message) error {
	if sn.size.Load() >= sendLimit {
		sn.mu.Lock()
		for sn.size.Load() >= sendLimit && !sn.sealed.Load() {
			sn.space.Wait()
		}
		sn.mu.Unlock()
	}
	sh := &sn.shards[s.id%sendShards]
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return ErrClosed
	}
	wake := len(sh.msgs) == 0
	n := len(sh.buf)
	sh.buf = appendMessage(sh.buf, m)
	sh.msgs = append(sh.msgs, pending{s: s, subject: subject, end: len(sh.buf)})
	sn.size.Add(int64(len(sh.buf) - n))
	sh.mu.Unlock()
	if wake {
		sn.wake()
	}
	return nil
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
// then leaves. Each round takes the marks first and then every shard, and
// publishes the marks last: a mark goes after what was handed over before
// it.
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
		var size int64
		for i := range sn.shards {
			sh, t := &sn.shards[i], &taken[i]
			sh.mu.Lock()
			t.msgs, sh.msgs = sh.msgs, t.msgs[:0]
			t.buf, sh.buf = sh.buf, t.buf[:0]
			sh.mu.Unlock()
			size += int64(len(t.buf))
		}
		if sn.size.Add(-size)+size >= sendLimit {
			sn.mu.Lock()
			sn.space.Broadcast()
			sn.mu.Unlock()
		}
		for i := range taken {
			sn.publish(taken[i].msgs, taken[i].buf)
			if cap(taken[i].buf) > keepSendBuffer || cap(taken[i].msgs) > keepSendMsgs {
				taken[i].msgs, taken[i].buf = nil, nil
			}
		}
		for _, b := range marks {
			sn.l.nc.Publish(sn.l.inbox, b)
		}
		if sealed { // every shard closed before: this round took the last
			return
		}
	}
}

// publish publishes msgs, whose encodings are buf's, in order; a message
// the connection does not take fails its stream.
func (sn *sender) publish(msgs []pending, buf []byte) {
	start := 0
	for i, p := range msgs {
		if err := sn.l.nc.Publish(p.subject, buf[start:p.end]); err != nil {
			s := p.s
			sn.l.later(func() { s.fail(lost("the NATS connection did not take the message: %v", err), false) })
		}
		start = p.end
		msgs[i] = pending{}
	}
}

// close has the sender publish what waits and leave, and waits for it;
// what the streams send from then on is not taken (ErrClosed).
func (sn *sender) close() {
	for i := range sn.shards {
		sh := &sn.shards[i]
		sh.mu.Lock()
		sh.closed = true
		sh.mu.Unlock()
	}
	sn.sealed.Store(true)
	sn.mu.Lock()
	sn.space.Broadcast()
	sn.mu.Unlock()
	sn.wake()
	<-sn.left
}
