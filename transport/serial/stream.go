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
	return &Stream{srv: s, conn: conn, w: &lockedWriter{w: conn}}
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
// session has no writer of its own: its caller writes the notifications
// that wait (AppendNotifications) when Ready receives, in the frames of
// its own stream, which a protocol like the radio link writes when its
// connection events carry them anyway. A write of the session's that
// fails closes the stream.
func (st *Stream) StartSession(q *resource.Queue, c *resource.Client, do func(*resource.Request) (resource.Envelope, error)) *Session {
	s := unwrittenSession(st.srv.log(), st.srv.Device, st.w, "", q, c, do, nil)
	s.onBroken = func() { st.conn.Close() }
	return &Session{s}
}

// Ready receives when notifications may wait to be written.
func (s *Session) Ready() <-chan struct{} { return s.s.queue.Ready() }

// AppendNotifications appends the frames of the notifications that wait
// to buf and returns it; after End it appends none. One goroutine at a
// time calls it, the one that writes them.
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
