package serial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"senseboard/wire"
)

// Line is a serial line the device serves: a pseudo-terminal or a port.
type Line interface {
	io.ReadWriter
	// SetReadDeadline makes a blocked Read return at t.
	SetReadDeadline(t time.Time) error
	// SetWriteDeadline makes a blocked Write return at t.
	SetWriteDeadline(t time.Time) error
	// ClientGone reports whether a client that holds a lock on the line
	// has let go of it (a pty's flock); false when the line cannot tell.
	ClientGone() bool
	// SessionEnded tells the line that its session ended.
	SessionEnded()
	// Name names the line for messages.
	Name() string
}

// WriteTimeout is how long one write may block before the client counts as
// gone: a client that stops reading cannot hold the device's writer forever.
const WriteTimeout = 2 * time.Second

// deadliner is a stream whose writes can be given a deadline.
type deadliner interface {
	io.Writer
	SetWriteDeadline(t time.Time) error
}

// lockedWriter serializes whole-frame writes from several goroutines and
// bounds each by WriteTimeout. Interrupt makes a blocked write, and every
// write until Resume, fail at once.
type lockedWriter struct {
	mu          sync.Mutex // held for a whole write
	dmu         sync.Mutex // guards interrupted and the deadline
	interrupted bool
	deadline    bool // a write deadline is set
	w           deadliner
	now         NowWriter // writes without waiting, when w can (a TCP connection, a NowWriter)
}

// NowWriter is a connection that can write without waiting for its
// reader. WriteNow writes what of p the connection takes at once and
// returns how much that was; an error is one of the connection's. A
// connection that is one (the radio link's streams over NATS, whose
// writes never wait for the peer) is written on the goroutine that has
// something to write, as a TCP connection is while its socket has room
// (a session's notifications, the radio link's connection events); on
// other connections a goroutine started for a write that may wait
// writes it.
type NowWriter interface {
	WriteNow(p []byte) (int, error)
}

// newLockedWriter returns the locked writer of w.
func newLockedWriter(w deadliner) *lockedWriter {
	l := &lockedWriter{w: w}
	if nw, ok := w.(NowWriter); ok {
		l.now = nw
	} else if nw := newNowWriter(w); nw != nil {
		l.now = nw
	}
	return l
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked(p)
}

// writeLocked writes p, bounded by WriteTimeout; l.mu is held.
func (l *lockedWriter) writeLocked(p []byte) (int, error) {
	l.dmu.Lock()
	if l.interrupted {
		l.dmu.Unlock()
		return 0, os.ErrDeadlineExceeded
	}
	l.w.SetWriteDeadline(time.Now().Add(WriteTimeout))
	l.deadline = true
	l.dmu.Unlock()
	return l.w.Write(p)
}

// writeNowLocked writes what of p the stream takes without waiting and
// returns how much that was; l.mu is held and l.now is set.
func (l *lockedWriter) writeNowLocked(p []byte) (int, error) {
	l.dmu.Lock()
	if l.interrupted {
		l.dmu.Unlock()
		return 0, os.ErrDeadlineExceeded
	}
	if l.deadline { // a past deadline fails any write, one that does not wait too
		l.w.SetWriteDeadline(time.Time{})
		l.deadline = false
	}
	l.dmu.Unlock()
	return l.now.WriteNow(p)
}

// nowWriter writes to a connection's descriptor without waiting: one
// write system call, which takes what the socket's buffer has room for.
type nowWriter struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // w.do, made once
	p   []byte
	n   int
	err error
}

// newNowWriter returns the nowWriter of w, or nil when w is not a
// connection with a descriptor.
func newNowWriter(w io.Writer) *nowWriter {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	nw := &nowWriter{rc: rc}
	nw.fn = nw.do
	return nw
}

func (w *nowWriter) do(fd uintptr) bool {
	w.n, w.err = syscall.Write(int(fd), w.p)
	return true // done, whatever it wrote: never wait for room
}

// WriteNow writes what of p the socket takes at once.
func (w *nowWriter) WriteNow(p []byte) (int, error) {
	w.p = p
	if err := w.rc.Write(w.fn); err != nil {
		w.p = nil
		return 0, err
	}
	n, err := max(w.n, 0), w.err
	w.p, w.err = nil, nil
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		err = nil // no room now: what is left waits
	}
	return n, err
}

// Interrupt fails the write under way and those that follow.
func (l *lockedWriter) Interrupt() {
	l.dmu.Lock()
	defer l.dmu.Unlock()
	l.interrupted = true
	l.w.SetWriteDeadline(time.Unix(1, 0))
}

// Resume lets writes through again.
func (l *lockedWriter) Resume() {
	l.dmu.Lock()
	defer l.dmu.Unlock()
	l.interrupted, l.deadline = false, false
	l.w.SetWriteDeadline(time.Time{})
}

// lineSession is the session on a line and what the line knows of its client.
type lineSession struct {
	*session
	locked bool // the client holds the line's lock
}

// ServeLine serves sessions on a line, one at a time, until ctx ends or the
// line fails.
func (s *Server) ServeLine(ctx context.Context, l Line) error {
	w := newLockedWriter(l) // a pseudo-terminal writes without waiting
	dec := wire.NewDecoder(0)
	var cur *lineSession
	endCur := func(why error) {
		if cur != nil {
			s.ended(l.Name(), why)
			cur.end()
			cur = nil
			l.SessionEnded()
		}
	}
	defer endCur(ErrStreamClosed)
	handle := func(f wire.Frame) {
		switch {
		case f.Kind == wire.Hello:
			h, ok := greet(w, f)
			if !ok {
				return
			}
			if cur != nil && cur.token != h.Session && cur.locked && (helloLocks(f) || l.ClientGone()) {
				// The lock is exclusive: a client that says hello holding
				// it (or a lock that nobody holds) shows that the session's
				// client let go of the line, crashed perhaps, before the
				// next probe would have found out. The new client takes
				// over at once.
				endCur(ErrLockReleased)
			}
			if cur != nil && cur.token != h.Session {
				refuse(w, f.ID, h.Session, wire.RefuseBusy,
					fmt.Sprintf("line %s is in use by another session; one session per serial line", l.Name()))
				return
			}
			if cur == nil {
				cur = &lineSession{session: newSession(s, w, h.Session, "serial:"+l.Name()), locked: helloLocks(f)}
				s.log().Info("session started", "line", l.Name(), "client", h.Client)
			}
			cur.welcome = s.welcome(h.Session)
			cur.send(cur.welcome)
			cur.heard = time.Now()
		case cur == nil:
			noSession(w, f)
		case f.Kind == wire.Bye:
			endCur(ErrBye)
		default:
			cur.handle(f)
		}
	}
	buf := make([]byte, 8192)
	for {
		if err := ctx.Err(); err != nil {
			return nil
		}
		l.SetReadDeadline(time.Now().Add(probeInterval))
		n, err := l.Read(buf)
		if n > 0 {
			dec.Feed(buf[:n], handle)
			reportOversized(dec, w)
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			if isClosed(err) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("line %s: %w", l.Name(), err)
		}
		if cur != nil {
			switch {
			case cur.broken.Load():
				endCur(ErrSlowConsumer)
			case cur.locked && l.ClientGone():
				// What the client wrote before it let go may still wait in
				// the line: read it first, so that a Bye ends the session
				// as a Bye and not as a released lock.
				drainLine(l, buf, func(b []byte) { dec.Feed(b, handle) })
				if cur != nil {
					endCur(ErrLockReleased)
				}
			case time.Since(cur.heard) > wire.SessionTimeout:
				endCur(fmt.Errorf("%w for %v", ErrSilent, wire.SessionTimeout))
			}
		}
	}
}

// drainLine feeds what is waiting in the line, reading until a short read
// finds nothing more.
func drainLine(l Line, buf []byte, feed func([]byte)) {
	for {
		l.SetReadDeadline(time.Now().Add(drainWait))
		n, err := l.Read(buf)
		if n > 0 {
			feed(buf[:n])
		}
		if n == 0 || err != nil {
			return
		}
	}
}

// drainWait is how long drainLine waits for bytes already in the line.
const drainWait = 20 * time.Millisecond

// helloLocks reports whether a hello says the client holds the line's lock.
func helloLocks(f wire.Frame) bool {
	var h struct {
		Lock bool `json:"lock"`
	}
	json.Unmarshal(f.Payload, &h)
	return h.Lock
}

// reportOversized tells the sender about a frame dropped for its size.
func reportOversized(dec *wire.Decoder, w io.Writer) {
	if o := dec.Oversized; o.OK {
		dec.Oversized.OK = false
		w.Write(wire.ErrorFrame(o.ID, fmt.Sprintf("%s frame of %d bytes exceeds the maximum payload of %d bytes", o.Kind, o.Length, wire.MaxPayload)))
	}
}

// ServeConn serves one connection as one session until it closes or ctx
// ends. A hello that names another device's serial is refused.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) {
	serveConn(ctx, conn, s.HelloTimeout, s.IdleTimeout, func(h wire.HelloMsg) (*Server, func(), wire.RefuseCode, error) {
		if h.Serial != "" && h.Serial != s.serial() {
			return nil, nil, wire.RefuseSerial, fmt.Errorf("%w: this port serves device %s, not %s", ErrUnknownSerial, s.serial(), h.Serial)
		}
		return s, func() {}, "", nil
	})
}

// pickFunc chooses the device whose session a connection's hello opens
// and counts the connection against its limits; release counts it out.
// When it cannot, it says why, with a refusal code.
type pickFunc func(h wire.HelloMsg) (s *Server, release func(), code wire.RefuseCode, err error)

// serveConn serves one connection as one session of the device its hello
// picks, until it closes or ctx ends. hello and idle are the timeouts of
// Server.HelloTimeout and Server.IdleTimeout.
func serveConn(ctx context.Context, conn net.Conn, hello, idle time.Duration, pick pickFunc) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	w := newLockedWriter(conn)
	dec := wire.NewDecoder(0)
	var cur *session
	var srv *Server
	release := func() {}
	name := "tcp:" + conn.RemoteAddr().String()
	var why atomic.Pointer[error] // the first known reason the session ends
	setWhy := func(err error) { why.CompareAndSwap(nil, &err) }
	defer func() {
		if cur != nil {
			if ctx.Err() != nil {
				setWhy(ctx.Err())
			}
			setWhy(ErrStreamClosed)
			cur.end()
			srv.ended(name, *why.Load())
		}
		release()
	}()
	handle := func(f wire.Frame) {
		switch {
		case f.Kind == wire.Hello:
			h, ok := greet(w, f)
			if !ok {
				return
			}
			if cur == nil {
				s, rel, code, err := pick(h)
				if err != nil {
					refuse(w, f.ID, h.Session, code, err.Error())
					return
				}
				srv, release = s, rel
				cur = newSession(s, w, h.Session, name)
				cur.onBroken = func() { setWhy(ErrSlowConsumer); conn.Close() }
				cur.welcome = s.welcome(h.Session)
			}
			if h.Serial != "" && h.Serial != srv.serial() {
				refuse(w, f.ID, h.Session, wire.RefuseSerial, fmt.Sprintf("%v: this connection's session is with device %s, not %s", ErrUnknownSerial, srv.serial(), h.Serial))
				return
			}
			cur.send(cur.welcome)
		case cur == nil:
			noSession(w, f)
		case f.Kind == wire.Bye:
			setWhy(ErrBye)
			conn.Close()
		default:
			cur.handle(f)
		}
	}
	sr := silence(conn, func() bool { return cur != nil }, hello, idle)
	err := readFrames(sr, func(b []byte) {
		dec.Feed(b, handle)
		reportOversized(dec, w)
	})
	if sr.silent != nil {
		setWhy(sr.silent)
		sr.closeSilent(w)
	}
	if errors.Is(err, io.EOF) && cur != nil {
		// The client has sent all it will, and may read on (a half-closed
		// connection): what waits for the session's next write, the pong
		// to its last ping among it, leaves before the session ends. A
		// client that closed instead fails the write: the session ended
		// for the stream's close all the same.
		setWhy(ErrStreamClosed)
		cur.drain()
	}
}

// readBuffer is what a stream reads at a time. A device's clients send
// requests and pings, small frames; a large one takes more reads (the
// decoder keeps what a frame has so far), and every connection of a fleet
// keeps its buffer.
const readBuffer = 1024

// readFrames hands what a stream reads to feed until the stream fails,
// and returns why it did.
func readFrames(r io.Reader, feed func([]byte)) error {
	buf := make([]byte, readBuffer)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			feed(buf[:n])
		}
		if err != nil {
			return err
		}
	}
}

// Serve accepts connections on ln and serves each as a session until ctx
// ends; it returns after every session has ended.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.accept(ctx, ln, TCPConn, func(conn net.Conn) { s.ServeConn(ctx, conn) })
}

// errDeadline is a read that reached its deadline.
var errDeadline = os.ErrDeadlineExceeded
