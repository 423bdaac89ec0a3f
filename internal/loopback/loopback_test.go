package loopback_test

import (
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
