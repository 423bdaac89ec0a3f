package serial

import (
	"context"
	"net"
	"sync/atomic"

	"senseboard/resource"
	"senseboard/wire"
)

// Stream is one stream of a protocol carried on the line protocol's
// frames, such as the radio link (package link), which handles the
// stream's frames itself: the stream answers its hello, bounds how long
// its client may stay silent, and carries a session of the line protocol
// once the protocol starts one.
type Stream struct {
	srv  *Server
	conn net.Conn
	w    *lockedWriter
	open atomic.Bool // the client said hello
}

// NewStream returns a stream of conn, served for the server's device.
func (s *Server) NewStream(conn net.Conn) *Stream {
	return &Stream{srv: s, conn: conn, w: newLockedWriter(conn)}
}

// Read reads the stream and hands what it reads to feed until the stream
// fails, its client has not said hello within the server's HelloTimeout,
// or it has been silent for the IdleTimeout after; a client that ran out
// of time is told why.
func (st *Stream) Read(feed func([]byte)) {
	sr := silence(st.conn, st.open.Load, st.srv.HelloTimeout, st.srv.IdleTimeout)
	readFrames(sr, feed)
	sr.closeSilent(st.w)
}

// Write writes whole frames, one write at a time, each bounded by
// WriteTimeout.
func (st *Stream) Write(b []byte) (int, error) { return st.w.Write(b) }

// Close closes the stream.
func (st *Stream) Close() error { return st.conn.Close() }

// Hello answers a Hello frame with a Welcome, or with a Refuse to a client
// the device cannot serve; it reports whether it welcomed the client.
func (st *Stream) Hello(f wire.Frame) bool {
	h, ok := greet(st.w, f)
	if ok {
		st.open.Store(true)
		st.w.Write(st.srv.welcome(h.Session))
	}
	return ok
}

// Open reports whether the client has said hello.
func (st *Stream) Open() bool { return st.open.Load() }

// NoSession answers a frame that comes before the client's hello.
func (st *Stream) NoSession(f wire.Frame) { noSession(st.w, f) }

// Session is the session of the line protocol on a Stream.
type Session struct{ s *session }

// StartSession starts the session of the line protocol on the stream: its
// requests go to do, and its client c's notifications wait in q. The
// session has no writer of its own: its owner calls Flush when something
// may wait to be written, and what gather appends to the buffer it is
// given goes out in one write (the frames of the protocol's own, such as
// what a connection event of the radio link carries, and the session's
// notifications, AppendNotifications). When a Flush came while a write
// of the session's waited for the reader, the goroutine that wrote calls
// again once done, which calls Flush in the protocol's order: under the
// lock that orders its gathering with the protocol's own writes, say; nil
// calls Flush. A write of the session's that fails closes the stream.
func (st *Stream) StartSession(q *resource.Queue, c *resource.Client, do func(*resource.Request) (resource.Envelope, error),
	gather func(buf []byte) []byte, again func()) *Session {
	s := unwrittenSession(st.srv.log(), st.srv.Device, st.w, "", q, c, do, nil)
	s.gather = gather
	if again != nil {
		s.again = again
	}
	s.onBroken = func() { st.conn.Close() }
	return &Session{s}
}

// Flush writes what waits to be written (StartSession's gather), without
// waiting, on the goroutine that calls it: on a connection that writes
// without waiting (a NowWriter) it writes what the connection takes at
// once. What is left, what waits for a response being written or for a
// connection whose writes wait for the reader, and what comes while Flush
// writes a second time, a goroutine of the session's writes, as long as
// it takes; a Flush meanwhile leaves what waits to that goroutine, which
// gathers again once done (StartSession's again). So one write is under
// way at a time, in order, and what waits while a reader is slow stays
// where it waits, and counts against its limits. Flush never waits for a
// write, and does nothing after End.
func (s *Session) Flush() { s.s.flush() }

// WriteLast writes, after every write of the session's before it, what
// waits to be written (StartSession's gather) and then tail, in one
// write, and waits for it: the last words of a protocol's connection,
// before it closes the stream.
func (s *Session) WriteLast(tail []byte) error {
	ss := s.s
	ss.flushMu.Lock()
	defer ss.flushMu.Unlock()
	ss.buf = append(ss.gather(ss.buf[:0]), tail...)
	_, err := ss.w.Write(ss.buf)
	ss.buf = nil
	return err
}

// AppendNotifications appends the frames of the notifications that wait
// to buf and returns it; after End it appends none. It is called by
// StartSession's gather, which a Flush calls.
func (s *Session) AppendNotifications(buf []byte) []byte {
	select {
	case <-s.s.done:
		return buf
	default:
		return s.s.encode(buf)
	}
}

// Handle acts on a frame of the line protocol: a request, a ping, a
// repeated hello; other kinds are refused.
func (s *Session) Handle(f wire.Frame) { s.s.handle(f) }

// End ends the session's subscriptions.
func (s *Session) End() { s.s.end() }

// Accept serves each connection of ln with serve, on a goroutine of its
// own and counted against the device's and the program's connection
// limits as a StreamConn, until ctx ends; it returns after every serve has returned. A
// connection over a limit is refused.
func (s *Server) Accept(ctx context.Context, ln net.Listener, serve func(net.Conn)) error {
	return s.accept(ctx, ln, StreamConn, serve)
}
