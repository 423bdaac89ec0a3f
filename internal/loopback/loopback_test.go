package loopback_test

import (
	"net"
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
