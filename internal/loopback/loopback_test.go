package loopback_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"senseboard/internal/loopback"
)

func TestFreeAddrCanBeListenedOn(t *testing.T) {
	addr := loopback.FreeAddr(t)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("FreeAddr = %q, want a 127.0.0.1 address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ln.Close()
	if port := loopback.FreePort(t); port == "" || port == "0" || strings.Contains(port, ":") {
		t.Errorf("FreePort = %q, want a port number", port)
	}
}

// FreePorts gives a block that can be listened on, below the system's
// ephemeral ports, where outgoing connections do not take ports.
func TestFreePortsBelowEphemeral(t *testing.T) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 21000 {
				low = v
			}
		}
	}
	for range 20 {
		const n = 5
		first := loopback.FreePorts(t, n)
		if first < 20000 || first+n > low {
			t.Fatalf("FreePorts = %d..%d, want within 20000..%d", first, first+n-1, low)
		}
		var held []net.Listener
		for p := first; p < first+n; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Fatalf("port %d of the block from %d: %v", p, first, err)
			}
			held = append(held, ln)
		}
		for _, ln := range held {
			ln.Close()
		}
	}
}

// TestStallingForwards: what a client writes through Stalling reaches the
// target, and the target's answer the client, in order, also what the
// client wrote while the proxy was stalled, once it resumes.
func TestStallingForwards(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	const size = 8 << 20 // more than the sockets' buffers hold
	echoed := make(chan error, 1)
	go func() { // echoes what it reads
		c, err := target.Accept()
		if err != nil {
			echoed <- err
			return
		}
		defer c.Close()
		_, err = io.CopyN(c, c, size)
		echoed <- err
	}()
	addr, stall, resume := loopback.Stalling(t, target.Addr().String())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i + i/251)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(c, size))
		got <- b
	}()
	if _, err := c.Write(want[:size/2]); err != nil {
		t.Fatal(err)
	}
	stall()
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(want[size/2:])
		wrote <- err
	}()
	resume()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-echoed; err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("%d bytes came back, not the %d written, in order", len(b), len(want))
	}
}
