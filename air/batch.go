package air

import (
	"net"
	"sync"
	"time"
)

// batchDialer dials the NATS server with connections that gather what the
// link sends for a moment (Options.WriteDelay) and send it in one write:
// the messages of many streams then cost the program, the server and the
// peer one system call and one wake-up together instead of one each.
// Without a delay its connections close on a write that fails
// (closingConn), as a batchConn does.
type batchDialer struct {
	delay time.Duration
	d     net.Dialer
	wrap  func(net.Conn) net.Conn // the tests' (testHooks.wrapConn); nil: none
}

// Dial dials the server; NATS calls it for every connection it makes.
func (b *batchDialer) Dial(network, address string) (net.Conn, error) {
	c, err := b.d.Dial(network, address)
	if err != nil {
		return nil, err
	}
	if b.wrap != nil {
		c = b.wrap(c)
	}
	if b.delay <= 0 {
		return &closingConn{Conn: c}, nil
	}
	return newBatchConn(c, b.delay), nil
}

// closingConn is a connection to the NATS server that closes on a write
// that fails, whatever it wrote. A write that times out
// (nats.FlusherTimeout, a minute) on a server that stopped reading fails
// NATS's flusher or a publish that writes NATS's full buffer itself; NATS
// then drops the bytes and closes the connection only when the write had
// sent part of them, so one that sent nothing, on a socket that had no
// room left, kept the link on a server that took nothing, its messages
// lost, until pings failed minutes later. nats.ReconnectOnFlusherError
// does it for the flusher's writes alone. Once a write failed, the
// connection's reads fail with the write's error: NATS reconnects saying
// why, and the link's streams end (Link.disconnected).
type closingConn struct {
	net.Conn
	mu  sync.Mutex
	err error // of the write that failed
}

// Write writes p; when it fails, the connection closes.
func (c *closingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
		c.Conn.Close()
	}
	return n, err
}

// Read reads from the connection; once a write failed, a read that fails
// gives the write's error.
func (c *closingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.mu.Lock()
		if c.err != nil {
			err = c.err
		}
		c.mu.Unlock()
	}
	return n, err
}

// newBatchConn gathers the writes to c for up to delay.
func newBatchConn(c net.Conn, delay time.Duration) *batchConn {
	bc := &batchConn{Conn: c, delay: delay}
	bc.timer = time.AfterFunc(time.Hour, func() { bc.flush() })
	bc.timer.Stop()
	return bc
}

// batchMax is what a batchConn gathers before it writes without waiting
// for the delay.
const batchMax = 64 << 10

// batchWriteTimeout bounds a write of what a batchConn gathered; a write
// that does not end in time closes the connection, and NATS reconnects.
const batchWriteTimeout = 10 * time.Second

// batchConn is a connection to the NATS server whose writes wait in a
// buffer for up to delay, or until batchMax bytes wait, and then go in one
// write. A write that fails fails the next ones and closes the connection.
// Write deadlines are its own (batchWriteTimeout): the writes of its user
// never block on the network.
type batchConn struct {
	net.Conn
	delay time.Duration
	timer *time.Timer // flushes delay after the first byte that waits

	wmu sync.Mutex // held by the write to Conn: one at a time, in order

	mu    sync.Mutex
	buf   []byte // waits to be written
	spare []byte // the buffer the last write took, for reuse
	armed bool   // the timer will flush
	err   error  // of a write that failed; every later write fails with it
}

// Write gathers p; it fails only when an earlier write failed.
func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, err
	}
	c.buf = append(c.buf, p...)
	full := len(c.buf) >= batchMax
	if !full && !c.armed {
		c.armed = true
		c.timer.Reset(c.delay)
	}
	c.mu.Unlock()
	if full {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// flush writes what waits.
func (c *batchConn) flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	b := c.buf
	c.buf, c.spare = c.spare[:0], nil
	c.armed = false
	err := c.err
	c.mu.Unlock()
	if err != nil || len(b) == 0 {
		c.mu.Lock()
		c.spare = b[:0]
		c.mu.Unlock()
		return err
	}
	c.Conn.SetWriteDeadline(time.Now().Add(batchWriteTimeout))
	_, err = c.Conn.Write(b)
	c.mu.Lock()
	c.spare = b[:0]
	if err != nil && c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	if err != nil {
		c.Conn.Close() // the reader learns at once, and NATS reconnects
	}
	return err
}

// SetWriteDeadline does nothing: writes do not block, and the writes to
// the network have deadlines of their own.
func (c *batchConn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets the read deadline only (see SetWriteDeadline).
func (c *batchConn) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }

// Close writes what waits, then closes the connection.
func (c *batchConn) Close() error {
	c.timer.Stop()
	c.flush()
	c.mu.Lock()
	if c.err == nil {
		c.err = net.ErrClosed
	}
	c.mu.Unlock()
	return c.Conn.Close()
}
