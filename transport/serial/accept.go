package serial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"senseboard/wire"
)

// Connection limits, when a Server leaves them out.
const (
	// DefaultMaxConns bounds the connections of one device at once: TCP
	// sessions and Streams, each counted.
	DefaultMaxConns = 64
	// DefaultProgramMaxConns is the least limit of a program's ConnLimit
	// in senseboard run; ProgramMaxConns gives it for a fleet.
	DefaultProgramMaxConns = 1024
	// ProgramConnsPerDevice is what ProgramMaxConns gives each device of
	// a fleet of more than DefaultProgramMaxConns/ProgramConnsPerDevice.
	ProgramConnsPerDevice = 4
	// HelloTimeout closes a connection that has not said hello.
	HelloTimeout = 10 * time.Second
	// MaxRefusing bounds the refused connections of a program that wait
	// for their hello at once, to be answered why (see Server.Admit); one
	// more is closed at once, unanswered, so that a flood of connections
	// over a limit holds no more than this many goroutines and file
	// descriptors for a HelloTimeout.
	MaxRefusing = 16
)

// ProgramMaxConns is the default limit of the connections of a program
// of a number of devices, all together: DefaultProgramMaxConns, or
// ProgramConnsPerDevice for each device when that is more, so that every
// device of a fleet can take a client, a bridge and a tool at once.
func ProgramMaxConns(devices int) int {
	return max(DefaultProgramMaxConns, ProgramConnsPerDevice*devices)
}

// Backoff of an accept loop after a temporary error (the process is out of
// file descriptors, a connection was aborted before it was accepted), as
// net/http's Server.Serve does.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// ConnKind is a kind of connection a ConnLimit counts; a refusal says how
// many of each kind it holds.
type ConnKind int

// The kinds of connection.
const (
	// TCPConn is a TCP connection, on a device's port or a fleet's (there
	// counted from its accept, before its hello names a device).
	TCPConn ConnKind = iota
	// StreamConn is a Stream of a protocol carried on the line's frames:
	// a stream of the radio link between programs.
	StreamConn
)

// ConnLimit bounds the connections of several servers together: the
// devices of one program. Its zero value is no limit on connections; the
// refused connections that wait for their hello are bounded by
// MaxRefusing all the same.
type ConnLimit struct {
	max   int64
	n     atomic.Int64
	kinds [2]atomic.Int64 // by ConnKind

	maxRefusing int64 // MaxRefusing when 0
	refusing    atomic.Int64

	// the refused connections closed unanswered past maxRefusing, warned
	// of at most once every unansweredWarnEvery (unansweredWarning)
	unanswered atomic.Int64     // since the last warning
	warned     atomic.Int64     // when the last warning went, in Unix nanoseconds; 0 for never
	now        func() time.Time // time.Now when nil
}

// unansweredWarnEvery is how often at most a program warns of the refused
// connections it closed unanswered.
const unansweredWarnEvery = time.Minute

// NewConnLimit returns a limit of max connections at once.
func NewConnLimit(max int) *ConnLimit { return &ConnLimit{max: int64(max)} }

// Max returns the limit.
func (l *ConnLimit) Max() int { return int(l.max) }

// Count returns how many connections of a kind the limit counts now.
func (l *ConnLimit) Count(kind ConnKind) int {
	if l == nil {
		return 0
	}
	return int(l.kinds[kind].Load())
}

// take counts a connection of a kind in, or reports that there is no
// room.
func (l *ConnLimit) take(kind ConnKind) bool {
	if l == nil {
		return true
	}
	if l.max > 0 && l.n.Add(1) > l.max {
		l.n.Add(-1)
		return false
	} else if l.max <= 0 {
		l.n.Add(1)
	}
	l.kinds[kind].Add(1)
	return true
}

// put counts a connection of a kind out.
func (l *ConnLimit) put(kind ConnKind) {
	if l != nil {
		l.kinds[kind].Add(-1)
		l.n.Add(-1)
	}
}

// takeRefusing counts in a refused connection that waits for its hello,
// or reports that MaxRefusing of them wait already. A nil limit has room
// for any number.
func (l *ConnLimit) takeRefusing() bool {
	if l == nil {
		return true
	}
	max := l.maxRefusing
	if max <= 0 {
		max = MaxRefusing
	}
	if l.refusing.Add(1) > max {
		l.refusing.Add(-1)
		return false
	}
	return true
}

// unansweredWarning counts a refused connection closed unanswered and,
// when a warning of it is due (the first, and then at most one every
// unansweredWarnEvery), reports how many were since the last one.
func (l *ConnLimit) unansweredWarning() (closed int64, warn bool) {
	l.unanswered.Add(1)
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	t, last := now().UnixNano(), l.warned.Load()
	if last != 0 && t-last < int64(unansweredWarnEvery) || !l.warned.CompareAndSwap(last, t) {
		return 0, false
	}
	return l.unanswered.Swap(0), true
}

// putRefusing counts a refused connection out once it is answered or
// closed.
func (l *ConnLimit) putRefusing() {
	if l != nil {
		l.refusing.Add(-1)
	}
}

// ErrTooManyConns is a connection refused because a device or the program
// serves as many as it may.
var ErrTooManyConns = errors.New("too many connections")

// admit counts a new connection of a kind against the device's and the
// program's limits; the release it returns counts it out. It returns an
// error that says which limit is reached instead when there is no room.
func (s *Server) admit(kind ConnKind) (release func(), err error) {
	releaseDevice, err := s.admitDevice()
	if err != nil {
		return nil, err
	}
	if !s.Program.take(kind) {
		releaseDevice()
		return nil, programFull(s.Program)
	}
	return func() { s.Program.put(kind); releaseDevice() }, nil
}

// admitDevice counts a new connection against the device's limit alone.
func (s *Server) admitDevice() (release func(), err error) {
	s.connsOnce.Do(func() {
		max := s.MaxConns
		if max <= 0 {
			max = DefaultMaxConns
		}
		s.conns = NewConnLimit(max)
	})
	if !s.conns.take(TCPConn) {
		return nil, fmt.Errorf("%w: device %s serves %d connections at once and has no room for another; close one, or raise the limit with --max-conns-per-device",
			ErrTooManyConns, s.serial(), s.conns.Max())
	}
	return func() { s.conns.put(TCPConn) }, nil
}

// programFull is the refusal of a connection over a program's limit: it
// says what the program holds.
func programFull(l *ConnLimit) error {
	return fmt.Errorf("%w: the program serves %d connections at once, its devices' together (TCP connections %d, streams of the radio link %d), and has no room for another; close one, or raise the limit with --max-conns",
		ErrTooManyConns, l.Max(), l.Count(TCPConn), l.Count(StreamConn))
}

// serial names the server's device for messages.
func (s *Server) serial() string {
	if s.Device == nil {
		return "?"
	}
	return s.Device.Serial()
}

// temporary reports whether an accept error passes: the process or the
// system is out of file descriptors or buffers, or a connection went away
// before it was accepted.
func temporary(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// accept serves each connection of ln, of a kind, on a goroutine of its
// own, counted against the device's and the program's limits, until ctx
// ends; it returns after every serve has returned. A connection over a
// limit is refused.
func (s *Server) accept(ctx context.Context, ln net.Listener, kind ConnKind, serve func(net.Conn)) error {
	return acceptLoop(ctx, ln, s.log(), func(conn net.Conn) { s.Admit(ctx, conn, kind, serve) })
}

// Admit serves a connection of a kind that the caller took itself as
// Accept serves each of a listener's: counted against the device's and
// the program's limits while serve serves it, or refused with a frame
// that says which limit is reached. A refused connection waits up to
// HelloTimeout for its hello to be answered; at most MaxRefusing of the
// program's (of the device's, without a Program limit) wait at once, and
// one more is closed at once, unanswered. It returns when serve does, or
// when the refused connection is closed.
func (s *Server) Admit(ctx context.Context, conn net.Conn, kind ConnKind, serve func(net.Conn)) {
	release, err := s.admit(kind)
	if err != nil {
		waiting := s.Program
		if waiting == nil {
			waiting = s.conns // set by admit
		}
		refuseConn(ctx, conn, err, s.HelloTimeout, waiting, s.log())
		return
	}
	defer release()
	serve(conn)
}

// acceptLoop hands each connection of ln to handle on a goroutine of its
// own until ctx ends; it returns after every handle has returned. It
// retries temporary errors with a backoff of 5 ms doubling to 1 s.
func acceptLoop(ctx context.Context, ln net.Listener, log *slog.Logger, handle func(net.Conn)) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !temporary(err) {
				return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
			}
			delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
			log.Warn("accept failed; trying again", "addr", ln.Addr().String(), "err", err, "in", delay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		delay = 0
		wg.Go(func() { handle(conn) })
	}
}

// refuseConn answers the first frame of a connection with why it is
// refused, a Refuse to a hello and an Error to anything else, and closes it.
// The client has as long to say hello as an admitted one (hello, the
// HelloTimeout constant when zero): one whose hello comes late, behind
// what a busy radio link between programs carries, still learns why.
// The connections that wait so are counted in waiting, which bounds them
// (MaxRefusing); past it the connection is closed at once, unanswered,
// and logged at debug level, as a flood would be logged at length, and
// in a warning once a minute at most, with how many were since the last.
func refuseConn(ctx context.Context, conn net.Conn, why error, hello time.Duration, waiting *ConnLimit, log *slog.Logger) {
	defer conn.Close()
	if !waiting.takeRefusing() {
		const msg = "connection closed unanswered: too many refused connections wait for their hello"
		log.Debug(msg, "addr", conn.RemoteAddr().String(), "err", why)
		if n, warn := waiting.unansweredWarning(); warn {
			log.Warn(msg, "closed", n, "err", why) // closed: since the last warning
		}
		return
	}
	defer waiting.putRefusing()
	log.Warn("connection refused", "addr", conn.RemoteAddr().String(), "err", why)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if hello <= 0 {
		hello = HelloTimeout
	}
	conn.SetDeadline(time.Now().Add(hello))
	dec := wire.NewDecoder(0)
	answered := false
	readFrames(&stopAfter{r: conn, done: &answered}, func(b []byte) {
		dec.Feed(b, func(f wire.Frame) {
			if answered {
				return
			}
			answered = true
			if f.Kind == wire.Hello {
				var h wire.HelloMsg
				json.Unmarshal(f.Payload, &h)
				refuse(conn, f.ID, h.Session, wire.RefuseLimit, why.Error())
				return
			}
			conn.Write(wire.ErrorFrame(f.ID, why.Error()))
		})
	})
}

// stopAfter reads from r until done is set.
type stopAfter struct {
	r    net.Conn
	done *bool
}

func (s *stopAfter) Read(p []byte) (int, error) {
	if *s.done {
		return 0, net.ErrClosed
	}
	return s.r.Read(p)
}

// silentReader reads a stream whose client must speak: its session must
// open within the server's hello timeout of the stream's start, and then
// each read waits at most the idle timeout (clients ping every
// wire.PingInterval while idle). A read that waits longer fails, and
// silent says which wait ran out.
type silentReader struct {
	conn        net.Conn
	open        func() bool // the client said hello
	start       time.Time
	hello, idle time.Duration
	silent      error // ErrNoHello or ErrSilent, once a wait ran out
}

// ErrNoHello: a connection did not say hello within the hello timeout.
var ErrNoHello = errors.New("the client did not say hello")

// silence wraps conn with a server's timeouts (HelloTimeout and
// IdleTimeout, the defaults when zero); open reports whether the client
// has said hello.
func silence(conn net.Conn, open func() bool, hello, idle time.Duration) *silentReader {
	r := &silentReader{conn: conn, open: open, start: time.Now(), hello: hello, idle: idle}
	if r.hello <= 0 {
		r.hello = HelloTimeout
	}
	if r.idle <= 0 {
		r.idle = wire.SessionTimeout
	}
	return r
}

func (r *silentReader) Read(p []byte) (int, error) {
	wait, why, deadline := r.hello, ErrNoHello, r.start.Add(r.hello)
	if r.open() {
		wait, why, deadline = r.idle, ErrSilent, time.Now().Add(r.idle)
	}
	r.conn.SetReadDeadline(deadline)
	n, err := r.conn.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		r.silent = fmt.Errorf("%w for %v", why, wait)
	}
	return n, err
}

// closeSilent tells a client that ran out of time why its stream closes.
func (r *silentReader) closeSilent(w io.Writer) {
	if r.silent != nil {
		w.Write(wire.ErrorFrame(0, "closing the connection: "+r.silent.Error()))
	}
}
