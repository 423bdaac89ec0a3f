package serial_test

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	"senseboard/resource"
	"senseboard/transport/serial"
)

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
	})
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
