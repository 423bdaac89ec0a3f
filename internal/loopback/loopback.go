// Package loopback gives tests free loopback TCP addresses, for programs
// and servers a test starts on a port of its own, and listeners that fail
// as a system short of resources makes them.
package loopback

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
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
// on ports that count up from one (senseboard run --devices n). The ports
// lie below the system's range of ephemeral ports, so that no outgoing
// connection takes one of them as its own before the program listens.
func FreePorts(tb testing.TB, n int) int {
	tb.Helper()
	low := ephemeralLow()
	for range 100 {
		first := rand.IntN(low-n-minPort) + minPort
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
	tb.Fatalf("no %d consecutive free loopback ports from %d to %d", n, minPort, low)
	return 0
}

// minPort is the lowest port FreePorts gives, above the well-known and
// commonly registered ones.
const minPort = 20000

// ephemeralLow is the first port of the system's ephemeral range (Linux's
// ip_local_port_range), 32768 where it cannot be read or leaves no room.
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return fallback
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < minPort+1000 {
		return fallback
	}
	return low
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
