// Package serial serves a device's interface on byte streams with the wire
// protocol (package wire): on a pseudo-terminal it creates, on a real serial
// port, and on TCP connections.
//
// A serial line (pty or port) carries one session at a time, as the
// specification says: a second client that says Hello while a session is
// active is refused. The session ends when its client says Bye, when the
// client's lock on the line goes away (pty: clients hold an flock on the
// tty while connected), or when nothing is heard from the client for
// wire.SessionTimeout (clients ping while idle). Its subscriptions end with it and
// the line waits for the next client. Each TCP connection is a session of
// its own and ends when the connection closes.
//
// Protocols carried on the same frames, such as the radio link (package
// link), serve their streams with Stream and the session it carries.
package serial

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/wire"
)

// Timing and sizes of sessions.
const (
	// probeInterval is how often a line checks its client's lock.
	probeInterval = 250 * time.Millisecond
	// QueueSize is how many notifications wait for one session at most.
	QueueSize = 4096
)

// Why sessions end: the reason given to Server.OnSessionEnd matches one of
// these with errors.Is (or is the error of the context that stopped serving).
var (
	// ErrBye: the client said bye.
	ErrBye = errors.New("the client said bye")
	// ErrStreamClosed: the line or the connection closed.
	ErrStreamClosed = errors.New("the stream closed")
	// ErrSlowConsumer: a write to the client blocked past WriteTimeout; the
	// client no longer reads what the device sends.
	ErrSlowConsumer = errors.New("the client stopped reading")
	// ErrLockReleased: the client let go of the line's lock.
	ErrLockReleased = errors.New("the client let go of the line")
	// ErrSilent: nothing was heard from the client for wire.SessionTimeout.
	ErrSilent = errors.New("nothing heard from the client")
	// ErrUnknownSerial: a hello named a device that the port does not
	// serve, or named none on a port that serves a fleet.
	ErrUnknownSerial = errors.New("no such device on this port")
)

// Server serves one device.
type Server struct {
	Device *device.Core
	// Log receives what happens to sessions; nil discards it.
	Log *slog.Logger
	// OnSessionEnd, when set, is told of the end of every session of a line
	// or a TCP connection, with the stream's name and why it ended. It runs
	// on the goroutine that serves the stream.
	OnSessionEnd func(stream string, why error)
	// MaxConns bounds the device's connections at once, TCP sessions and
	// the streams Accept serves each counted; DefaultMaxConns when zero.
	// One more is refused with a message that says so.
	MaxConns int
	// Program, when set, bounds the connections of several servers (the
	// devices of a program) together.
	Program *ConnLimit
	// HelloTimeout closes a TCP connection or Stream that has not
	// said hello; the HelloTimeout constant when zero.
	HelloTimeout time.Duration
	// IdleTimeout ends the session of a TCP connection or Stream
	// whose client has been silent (clients ping while idle);
	// wire.SessionTimeout when zero. It is the stream's read deadline:
	// a radio stream over NATS judges it by what its program's inbox
	// delivered (air.Stream.SetReadDeadline).
	IdleTimeout time.Duration
	// WriteInterval, when positive, holds the writes of notifications to
	// a line or TCP session at least this far apart on the device's clock:
	// the notifications published meanwhile wait and leave together in the
	// next write, as a radio's connection event carries what waited since
	// the last one. A notification that finds no write within the interval
	// leaves at once. On a clock that runs its calls in passes
	// (clock.Batcher) the writes leave at the ends of passes, up to the
	// clock's quantum before the interval has passed: a fleet's clock,
	// whose quantum is the interval, writes each session once a pass, and
	// a notification published between passes (by a request) waits for
	// the next. The pong to the ping of a client that subscribes waits
	// for the next write in the same way, and leaves with the
	// notifications that wait: a streaming client's keepalive costs no
	// write of its own, and its round trip includes up to the interval.
	// A session without subscriptions answers a ping at once, or after
	// the pongs that wait still, if it had some: in order. Fewer writes
	// cost the program and its client less CPU time, at the price of up to
	// the interval of lateness. Zero writes when the clock's pass ends
	// (clock.Batcher), or at once, and answers a ping at once.
	WriteInterval time.Duration

	connsOnce sync.Once
	conns     *ConnLimit
}

// ended logs a session's end and tells OnSessionEnd.
func (s *Server) ended(stream string, why error) {
	s.log().Info("session ended", "stream", stream, "why", why)
	if s.OnSessionEnd != nil {
		s.OnSessionEnd(stream, why)
	}
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return s.Log
}

// session is one client's session on a stream.
type session struct {
	log      *slog.Logger
	dev      Target
	do       func(*resource.Request) (resource.Envelope, error)
	w        *lockedWriter
	broken   atomic.Bool // a write failed: the client no longer reads
	onBroken func()      // called when a write fails, when set
	token    string
	client   *resource.Client
	queue    *resource.Queue
	done     chan struct{}
	wg       sync.WaitGroup
	heard    time.Time
	subsMu   sync.Mutex
	subs     map[string]uint32 // topic URI -> id of the request that subscribed
	closeMu  sync.Once
	reqBuf   []byte           // reused by the reading goroutine for responses
	welcome  []byte           // the welcome frame, sent again to a repeated hello
	pace     *pacer           // holds writes apart, when set
	events   []resource.Event // drained from the queue, reused by flush
	// Written by flush, on the goroutine that wakes it:
	flushMu sync.Mutex              // held while notifications are written
	more    atomic.Bool             // a flush found flushMu held: its holder flushes again
	buf     []byte                  // the frames of a flush
	gather  func(buf []byte) []byte // appends what a flush writes: encode, or a protocol's (Stream.StartSession)
	again   func()                  // flushes what came while a write waited: flush, or a protocol's (Stream.StartSession)
}

// newSession starts the session of a line or TCP connection. On a clock
// that runs its calls in passes (clock.Batcher, the real clock) its writer
// is woken when the pass ends, not by each notification: the
// notifications of a pass go out in one write. With srv.WriteInterval, it
// is woken no sooner than that after its last write.
func newSession(srv *Server, w *lockedWriter, token, name string) *session {
	q, p := sessionQueue(srv.Device.Clock(), srv.WriteInterval)
	return startSession(srv.log(), srv.Device, w, token, q, resource.NewClient(name, q), srv.Device.Do, p)
}

// sessionQueue returns the queue of a session on clk, and its pacer when
// interval is positive.
func sessionQueue(clk clock.Clock, interval time.Duration) (*resource.Queue, *pacer) {
	q := resource.NewQueue(QueueSize)
	var p *pacer
	if interval > 0 {
		p = newPacer(clk, interval, q.Wake)
		q.DeferWake(p.later)
	} else if b, ok := clk.(clock.Batcher); ok {
		q.DeferWake(b.AfterPass)
	}
	return q, p
}

// pacer holds a session's writes at least an interval apart on a clock.
// Its later is the session's queue's deferral (resource.Queue.DeferWake):
// the first notification to wait wakes the writer once the interval since
// the last write has passed. On a clock that runs its calls in passes
// (clock.Batcher) the writer wakes only when a pass ends, with what the
// pass's calls published: a notification of a pass that comes less than
// the clock's quantum before the interval's end leaves when that pass
// ends (the fleet's clock has the write interval as its quantum, so its
// sessions write once a pass), a later one at the end of the pass that
// runs the interval's end, one published between passes (by a request)
// at the end of the next, and the writes of a fleet's sessions share the
// pass's goroutines. The pongs to the pings of a session that subscribes
// wait for the writer's next write the same way (pong), and leave with
// what waits then.
type pacer struct {
	clk      clock.Clock
	interval time.Duration
	wake     func()       // wakes the writer: the session's queue's Wake
	next     atomic.Int64 // the clock's reading before which no write starts
	ponging  atomic.Bool  // pongs holds pongs
	flying   atomic.Bool  // a write under way carries pongs (appendPongs): wrote has not been called

	mu      sync.Mutex
	call    *clock.Call // wakes the writer at next
	stopped bool        // by stop: later does nothing
	pongs   []uint32    // the ids of the pings whose pongs wait for the next write
}

// maxWaitingPongs bounds the pongs that wait for a session's next write:
// a client pings every wire.PingInterval, and one that pings so fast that
// this many wait gets the pongs beyond them at once, written on the
// goroutine that reads its pings, which holds its reading up while the
// client does not read.
const maxWaitingPongs = 16

// newPacer returns the pacer of a session's writes on clk, whose writer
// wake wakes (the session's queue's Wake).
func newPacer(clk clock.Clock, interval time.Duration, wake func()) *pacer {
	return &pacer{clk: clk, interval: interval, wake: wake}
}

// later wakes the writer now, or when the interval since its last write
// has passed; after stop it does nothing. wake is the queue's, the same at
// every call. On a clock.Batcher a notification published by a call of
// the clock wakes the writer when the call's pass ends, if the interval
// ends within the clock's quantum; one published between passes (by a
// request), as a pong to a ping read then, waits for the next pass.
func (p *pacer) later(wake func()) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	at, now := time.Duration(p.next.Load()), p.clk.Now()
	b, passes := p.clk.(clock.Batcher)
	if passes && at <= now+b.Quantum() && b.DeferToPass(wake) {
		p.mu.Unlock()
		return
	}
	if !passes && at <= now {
		// Outside the lock, as a wake that ends the session stops the
		// pacer. One that runs beside stop is harmless: flush checks that
		// the session is done.
		p.mu.Unlock()
		wake()
		return
	}
	defer p.mu.Unlock()
	if p.call == nil {
		f := wake
		if passes {
			f = func() { b.AfterPass(wake) }
		}
		p.call = clock.NewCall(p.clk, f)
	}
	if passes {
		at -= b.Quantum() // the pass that runs it wakes the writer at its end
	}
	// Due now at the earliest: after the calls due before, which a time
	// past would not be.
	p.call.At(max(at, now))
}

// pong makes the pong to ping id wait for the writer's next write, which
// it wakes as a notification does: now, or once the interval since the
// last write has passed. It reports false, and the caller answers at
// once, when maxWaitingPongs wait already, or when the session streams
// nothing (quiet) and no pong waits, which the answer would overtake:
// none waits for the next write, and none is in a write under way,
// gathered before the answer and written after it otherwise.
func (p *pacer) pong(id uint32, quiet bool) bool {
	p.mu.Lock()
	if len(p.pongs) >= maxWaitingPongs || quiet && len(p.pongs) == 0 && !p.flying.Load() {
		p.mu.Unlock()
		return false
	}
	p.pongs = append(p.pongs, id)
	p.ponging.Store(true)
	p.mu.Unlock()
	p.later(p.wake)
	return true
}

// appendPongs appends the frames of the pongs that wait to buf. Its
// caller holds the right to write notifications.
func (p *pacer) appendPongs(buf []byte) []byte {
	if !p.ponging.Load() {
		return buf
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range p.pongs {
		buf = wire.AppendFrame(buf, wire.Pong, id, nil)
	}
	p.flying.Store(len(p.pongs) > 0)
	p.pongs = p.pongs[:0]
	p.ponging.Store(false)
	return buf
}

// wrote notes that the write of what the writer gathered last has ended,
// the pongs appendPongs appended to it among it. Its caller holds the
// right to write notifications.
func (p *pacer) wrote() {
	if p.flying.Load() {
		p.flying.Store(false)
	}
}

// writing notes a write that starts now.
func (p *pacer) writing() { p.next.Store(int64(p.clk.Now() + p.interval)) }

// stop cancels a pending wake, and the wakes of later calls of later.
func (p *pacer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.call != nil {
		p.call.Stop()
	}
}

// Target is the device a session serves.
type Target interface {
	URIPrefix() string
	ResourceURI(op resource.Op, path string, params ...resource.Value) (string, error)
}

// startSession starts a session whose client's notifications wait in q and
// whose requests go to do; p, when set, is the pacer q defers to.
func startSession(log *slog.Logger, dev Target, w *lockedWriter, token string, q *resource.Queue, c *resource.Client,
	do func(*resource.Request) (resource.Envelope, error), p *pacer) *session {
	s := unwrittenSession(log, dev, w, token, q, c, do, p)
	q.WakeWith(s.flush)
	return s
}

// unwrittenSession returns a session that writes no notifications by
// itself: its owner starts a writer, or flushes (Session.Flush).
func unwrittenSession(log *slog.Logger, dev Target, w *lockedWriter, token string, q *resource.Queue, c *resource.Client,
	do func(*resource.Request) (resource.Envelope, error), p *pacer) *session {
	s := &session{
		log:    log,
		dev:    dev,
		do:     do,
		w:      w,
		token:  token,
		queue:  q,
		client: c,
		done:   make(chan struct{}),
		heard:  time.Now(),
		subs:   map[string]uint32{},
		pace:   p,
	}
	s.gather, s.again = s.encode, s.flush
	return s
}

// end ends the session's subscriptions and stops its writer, interrupting
// a write that blocks on a client that does not read.
func (s *session) end() {
	s.closeMu.Do(func() {
		s.client.Close()
		close(s.done)
		s.w.Interrupt()
		s.flushMu.Lock() // a flush under way ends, and no new one writes
		s.flushMu.Unlock()
		s.wg.Wait()
		s.w.Resume()
		s.queue.Close()
		if s.pace != nil {
			s.pace.stop()
		}
	})
}

// drain writes what waits for the session's next write (notifications,
// and the pongs that wait with them) now, and waits for the write to end.
func (s *session) drain() {
	s.flushMu.Lock()
	if s.flushLocked() {
		s.flushMu.Unlock()
		return
	}
	s.flushMu.Lock() // a goroutine finishes the write, then unlocks it
	s.flushMu.Unlock()
}

// failed records a failed write.
func (s *session) failed() {
	if !s.broken.Swap(true) && s.onBroken != nil {
		s.onBroken()
	}
}

// send writes a frame at once, from the goroutine that reads the stream:
// a response does not wait for a hand-over to the writer. The stream's
// writer serializes it with the notification writer's frames.
func (s *session) send(frame []byte) {
	select {
	case <-s.done:
	default:
		if _, err := s.w.Write(frame); err != nil {
			s.failed()
		}
	}
}

// encode appends the pongs that wait for the write (pacer.pong), then
// drains the queue and appends the frames of its events to buf. Its
// caller holds the right to write notifications, flushMu.
func (s *session) encode(buf []byte) []byte {
	if s.pace != nil {
		buf = s.pace.appendPongs(buf)
	}
	s.events = s.queue.Drain(s.events[:0])
	for _, e := range s.events {
		buf = s.appendEvent(buf, e)
		resource.Release(e.Content) // encoded, or of no request: the frame holds what it said
	}
	clear(s.events) // the contents go with the frames
	return buf
}

// appendEvent appends the frame of a notification or an end of
// subscription, nothing when no request of the session's made it.
func (s *session) appendEvent(buf []byte, e resource.Event) []byte {
	id, ok := e.Sub.Tag.(requestID)
	if !ok || e.Ended != 0 {
		id, ok = s.requestOf(e)
	}
	if !ok {
		return buf
	}
	var err error
	if e.Ended != 0 {
		buf, err = wire.AppendJSONFrame(buf, wire.Ended, id, &wire.EndedMsg{Reason: e.Ended.String()})
	} else {
		buf, err = wire.AppendJSONFrame(buf, wire.Notification, id, e.Content)
	}
	if err != nil {
		s.log.Error("encode notification", "err", err)
	}
	return buf
}

// flush writes the notifications that wait (what gather appends), on the
// goroutine that wakes the session's writer (the end of a clock's pass,
// mostly): a connection that can write without waiting (lockedWriter.now)
// needs no goroutine of its own. What the connection does not take at
// once, what waits for a response being written, and everything on a
// connection that cannot write without waiting, a goroutine started for
// it writes, as long as it takes; notifications that come meanwhile wait
// for it. flush never waits for a write, and writes at most callerFlushes
// times on its caller's goroutine: what comes while it writes after that
// (a log's transfer, which its drains call back to fill the queue again,
// resource.Subscription.Offer) a goroutine started for it writes.
func (s *session) flush() {
	s.more.Store(true)
	for rounds := 0; s.more.Load(); rounds++ {
		if !s.flushMu.TryLock() {
			return // its holder flushes again once done
		}
		if rounds == callerFlushes {
			s.flushOn()
			return
		}
		s.more.Store(false)
		if !s.flushLocked() {
			return // a goroutine finishes the write, then unlocks flushMu
		}
		s.flushMu.Unlock()
	}
}

// flushLocked writes what waits without waiting, or hands what is left
// to a goroutine and returns false; flushMu is held.
func (s *session) flushLocked() bool {
	select {
	case <-s.done:
		return true
	default:
	}
	s.buf = s.gather(s.buf[:0])
	if len(s.buf) == 0 {
		return true
	}
	if s.pace != nil {
		s.pace.writing()
	}
	if s.w.now == nil || !s.w.mu.TryLock() { // a write that may wait, or a response is being written
		s.finish(s.buf, false)
		return false
	}
	n, err := s.w.writeNowLocked(s.buf)
	switch {
	case err != nil:
		s.w.mu.Unlock()
		s.failed()
	case n < len(s.buf):
		s.finish(s.buf[n:], true)
		return false
	default:
		s.w.mu.Unlock()
	}
	s.wrote()
	if cap(s.buf) > maxKeptBuffer {
		s.buf = nil
	}
	return true
}

// callerFlushes is how many times a flush writes on the goroutine that
// woke the writer before it leaves the rest to a goroutine of its own:
// the end of a clock's pass, which a fleet's sessions share, is not held
// up by a transfer that goes on as fast as the connection takes it.
const callerFlushes = 2

// flushOn flushes again on a goroutine of its own (again), which unlocks
// flushMu first; flushMu is held. After end it only unlocks flushMu.
func (s *session) flushOn() {
	select {
	case <-s.done:
		s.flushMu.Unlock()
		return
	default:
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.flushMu.Unlock()
		s.again()
	}()
}

// wrote notes that a write of what gather appended has ended; flushMu is
// held.
func (s *session) wrote() {
	if s.pace != nil {
		s.pace.wrote()
	}
}

// maxKeptBuffer bounds the buffer a session keeps between writes.
const maxKeptBuffer = 16 << 10

// finish writes rest on a goroutine of its own, which unlocks flushMu
// when done, and s.w.mu too when locked says the caller holds it; then,
// when a flush came meanwhile, it flushes again (again).
func (s *session) finish(rest []byte, locked bool) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var err error
		if locked {
			_, err = s.w.writeLocked(rest)
			s.w.mu.Unlock()
		} else {
			_, err = s.w.Write(rest)
		}
		if err != nil {
			s.failed()
		}
		s.wrote()
		s.flushMu.Unlock()
		if err == nil && s.more.Load() {
			s.again()
		}
	}()
}

// requestID is the id of the request that made a subscription, kept in
// the subscription's Tag by the session's writer once it has looked it up:
// the subscription is its client's, the session's, alone.
type requestID = uint32

// requestOf looks up the id of the request that made e's subscription,
// and forgets it when e is its end; the writer keeps it in the
// subscription's Tag for its next notifications (Drain gives none of a
// subscription that ended).
func (s *session) requestOf(e resource.Event) (requestID, bool) {
	uri := e.Sub.Topic.URI()
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	id, ok := s.subs[uri]
	if e.Ended != 0 && ok {
		delete(s.subs, uri)
	} else if ok {
		e.Sub.Tag = id
	}
	return id, ok
}

func (s *Server) welcome(token string) []byte {
	d := s.Device
	return wire.JSONFrame(wire.Welcome, 0, &wire.WelcomeMsg{
		Protocol: wire.Version, Session: token, Serial: d.Serial(), Product: d.Profile().Product.Name,
		SW: profile.Version, URIPrefix: d.URIPrefix(), MaxPayload: wire.MaxPayload,
	})
}

// greet reads a Hello and checks its version. A client this device cannot
// serve is refused on w and greet returns false.
func greet(w io.Writer, f wire.Frame) (wire.HelloMsg, bool) {
	var h wire.HelloMsg
	if err := json.Unmarshal(f.Payload, &h); err != nil {
		refuse(w, f.ID, h.Session, wire.RefuseMalformed, "hello: not a JSON hello message: "+err.Error())
		return h, false
	}
	if h.Protocol != wire.Version {
		refuse(w, f.ID, h.Session, wire.RefuseVersion,
			fmt.Sprintf("protocol version %d is not supported; this device speaks version %d", h.Protocol, wire.Version))
		return h, false
	}
	return h, true
}

// refuse refuses a session.
func refuse(w io.Writer, id uint32, session string, code wire.RefuseCode, why string) {
	w.Write(wire.JSONFrame(wire.Refuse, id, &wire.RefuseMsg{Session: session, Error: why, Code: code}))
}

// noSession answers a frame that comes before the session's hello.
func noSession(w io.Writer, f wire.Frame) {
	w.Write(wire.JSONFrame(wire.Error, f.ID, &wire.ErrorMsg{Error: "no session: send hello first", Code: wire.CodeNoSession}))
}

// streaming reports whether the session holds a subscription.
func (s *session) streaming() bool {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	return len(s.subs) > 0
}

// handle acts on one frame of an established session.
func (s *session) handle(f wire.Frame) {
	s.heard = time.Now()
	switch f.Kind {
	case wire.Ping:
		// With a write interval the pong of a session that streams leaves
		// with the next write; one that streams nothing has no write to
		// share, and answers at once, as a round trip measures it, unless
		// pongs of its streaming wait still: it follows them.
		if s.pace == nil || !s.pace.pong(f.ID, !s.streaming()) {
			s.send(wire.AppendFrame(nil, wire.Pong, f.ID, nil))
		}
	case wire.Request:
		s.request(f)
	case wire.Hello:
		// the same client saying hello again: welcome it again
		if s.welcome != nil {
			s.send(s.welcome)
		}
	case wire.Pong, wire.Bye:
	default:
		s.send(wire.ErrorFrame(f.ID, fmt.Sprintf("%s frames are not sent to a device", f.Kind)))
	}
}

// request carries out a Request frame and queues its Response.
func (s *session) request(f wire.Frame) {
	m, err := decodeRequest(f.Payload)
	if err != nil {
		s.send(wire.ErrorFrame(f.ID, "request: "+err.Error()))
		return
	}
	req := &resource.Request{Path: m.Path, Client: s.client}
	op, err := resource.ParseOp(m.Op)
	env := resource.Envelope{Status: resource.StatusBadRequest, URI: s.dev.URIPrefix() + "/" + strings.TrimPrefix(m.Path, "/")}
	if err != nil {
		env.Error = err.Error()
		s.reply(f.ID, &env)
		return
	}
	req.Op, env.Op = op, op
	for i, p := range m.Params {
		v, err := wire.DecodeParam(p)
		if err != nil {
			env.Error = fmt.Sprintf("value %d: %v", i+1, err)
			s.reply(f.ID, &env)
			return
		}
		req.Params = append(req.Params, v)
	}
	// A subscription's notifications carry the id of the request that made
	// it: note it before the first notification can come.
	var uri string
	if op == resource.Subscribe || op == resource.Post || op == resource.Unsubscribe || op == resource.Delete {
		if u, err := s.dev.ResourceURI(op, m.Path, req.Params...); err == nil {
			uri = u
		}
	}
	subscribing := uri != "" && (op == resource.Subscribe || op == resource.Post)
	if subscribing {
		s.subsMu.Lock()
		if _, dup := s.subs[uri]; !dup {
			s.subs[uri] = f.ID
		} else {
			subscribing = false
		}
		s.subsMu.Unlock()
	}
	env, err = s.do(req)
	if errors.Is(err, device.ErrOff) {
		if subscribing {
			s.forget(uri)
		}
		return // a device that is off does not answer
	}
	if err != nil { // the link refused the request (not paired, disconnected)
		s.send(wire.ErrorFrame(f.ID, err.Error()))
		if subscribing {
			s.forget(uri)
		}
		return
	}
	if subscribing && (!env.Status.OK() || req.Match.Op != resource.Subscribe) {
		s.forget(uri)
	}
	if uri != "" && env.Status.OK() && req.Match.Op == resource.Unsubscribe {
		s.forget(uri)
	}
	s.reply(f.ID, &env)
}

// decodeRequest reads a Request frame's payload. It refuses what
// encoding/json would repair or ignore: text that is not UTF-8, fields it
// does not know or that are spelled in another case, and fields given twice
// (in the request or in its values).
func decodeRequest(payload []byte) (wire.RequestMsg, error) {
	var m wire.RequestMsg
	if err := resource.CheckJSON(payload); err != nil {
		return m, err
	}
	if err := json.Unmarshal(payload, &m); err != nil {
		return m, fmt.Errorf("not a JSON request message: %w", err)
	}
	if err := resource.CheckObjectKeys(payload, "op", "path", "params"); err != nil {
		return m, err
	}
	var raw struct{ Params []json.RawMessage }
	json.Unmarshal(payload, &raw)
	for i, p := range raw.Params {
		if err := resource.CheckObjectKeys(p, "type", "value"); err != nil {
			return m, fmt.Errorf("value %d: %w", i+1, err)
		}
	}
	return m, nil
}

func (s *session) forget(uri string) {
	s.subsMu.Lock()
	delete(s.subs, uri)
	s.subsMu.Unlock()
}

// reply writes a response; it runs on the reading goroutine, which owns reqBuf.
func (s *session) reply(id uint32, env *resource.Envelope) {
	b, err := wire.AppendEnvelope(s.reqBuf[:0], id, env)
	if err != nil {
		b = wire.ErrorFrame(id, "the response does not encode: "+err.Error())
	} else {
		s.reqBuf = b
	}
	s.send(b)
}

// errClosed is what reading a closed stream gives.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}
