// Package loopback gives tests free loopback TCP addresses, for programs
// and servers a test starts on a port of its own, and listeners that fail
// as a system short of resources makes them.
package loopback

import (
	"net"
	"os"
	"strconv"
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

// FreePorts returns the first of n consecutive loopback ports that
// nothing listens on at the moment of the call, for programs that listen
// on ports that count up from one (senseboard run --devices n).
func FreePorts(tb testing.TB, n int) int {
	tb.Helper()
	for range 100 {
		first, err := strconv.Atoi(FreePort(tb))
		if err != nil || first+n > 65535 {
			continue
		}
		free := true
		var held []net.Listener
		for p := first; p < first+n && free; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				free = false
				break
			}
			held = append(held, ln)
		}
		for _, ln := range held {
			ln.Close()
		}
		if free {
			return first
		}
	}
	tb.Fatalf("no %d consecutive free loopback ports", n)
	return 0
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
