package serial_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"senseboard/resource"
	"senseboard/transport/serial"
)

// nowConn is a connection that writes without waiting (serial.NowWriter),
// and whose other writes wait for a reader that never comes.
type nowConn struct {
	net.Conn
	mu  sync.Mutex
	now []string // what WriteNow wrote
}

func (c *nowConn) WriteNow(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = append(c.now, string(p))
	return len(p), nil
}

// A session's Flush on a stream whose connection writes without waiting
// (a NowWriter, as a radio stream over NATS) writes what gather appends on
// the goroutine that calls it, before it returns, each Flush its own
// write; after End it writes nothing.
func TestFlushWritesAtOnceOnANowWriter(t *testing.T) {
	dev, central := net.Pipe() // nobody reads central: a write that waited would never end
	defer central.Close()
	conn := &nowConn{Conn: dev}
	st := (&serial.Server{}).NewStream(conn)
	q := resource.NewQueue(4)
	next := []string{"first", "second", "after the end"}
	s := st.StartSession(q, resource.NewClient("test", q), nil, func(buf []byte) []byte {
		buf = append(buf, next[0]...)
		next = next[1:]
		return buf
	}, nil)
	for _, want := range []string{"first", "second"} {
		s.Flush()
		conn.mu.Lock()
		got := conn.now
		conn.mu.Unlock()
		if len(got) == 0 || got[len(got)-1] != want {
			t.Fatalf("written at once %q; want %q last", got, want)
		}
	}
	s.End()
	s.Flush()
	if len(conn.now) != 2 || len(next) != 1 {
		t.Errorf("after the end: written %q, gathered %d times; want 2 writes and 2 gathers", conn.now, 3-len(next))
	}
}

// A stream's session on a connection whose writes wait for the reader (a
// pipe) writes what its gather appends from a goroutine of its own: Flush
// does not wait for the reader, and what it gathers arrives in order.
func TestStreamSessionFlushOnAPipe(t *testing.T) {
	dev, central := net.Pipe()
	defer central.Close()
	msgs := []string{"one", "two", "three"}
	var next atomic.Int32
	q := resource.NewQueue(4)
	s := (&serial.Server{}).NewStream(dev).StartSession(q, resource.NewClient("pipe", q), nil, func(buf []byte) []byte {
		if i := int(next.Add(1)) - 1; i < len(msgs) {
			return append(buf, msgs[i]...)
		}
		return buf
	}, nil)
	defer dev.Close()
	defer s.End()
	for _, want := range msgs {
		s.Flush() // returns before central reads
		got := make([]byte, len(want))
		if _, err := io.ReadFull(central, got); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
}
