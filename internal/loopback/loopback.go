// Package loopback gives tests free loopback TCP addresses, for programs
// and servers a test starts on a port of its own, and listeners that fail
// as a system short of resources makes them.
package loopback

import (
	"net"
	"os"
	"sync"
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

// Failing returns a listener whose first accepts fail with errs, one each,
// as temporary errors of the system (EMFILE when a process is out of file
// descriptors, ECONNABORTED when a connection went away before it was
// accepted); then it accepts from ln.
func Failing(ln net.Listener, errs ...error) net.Listener {
	return &failing{Listener: ln, errs: errs}
}

type failing struct {
	net.Listener
	mu   sync.Mutex
	errs []error
}

func (l *failing) Accept() (net.Conn, error) {
	l.mu.Lock()
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", err)}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}
