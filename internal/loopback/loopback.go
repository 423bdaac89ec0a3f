// Package loopback gives tests free loopback TCP addresses, for programs
// and servers a test starts on a port of its own.
package loopback

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address ("127.0.0.1:port") whose port
// nothing listens on at the moment of the call.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// FreePort returns the port of FreeAddr, for flags and settings that take
// a port alone.
func FreePort(tb testing.TB) string {
	tb.Helper()
	_, port, err := net.SplitHostPort(FreeAddr(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return port
}
