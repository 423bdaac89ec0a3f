// Package loopback gives tests free loopback TCP addresses, for programs
// and servers a test starts on a port of its own, listeners that fail
// as a system short of resources makes them, and a proxy that stops
// reading, as a server that stalls.
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

// Stalling forwards the TCP connections it takes at addr to target, both
// ways; between stall and resume it reads nothing from its clients, as a
// server that stopped reading: their writes fill the sockets' buffers and
// then wait. It starts reading. The test's cleanup resumes it, and closes
// it and its connections.
func Stalling(tb testing.TB, target string) (addr string, stall, resume func()) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu    sync.Mutex
		gate  = make(chan struct{}) // closed while the proxy reads from its clients
		conns []net.Conn
		wg    sync.WaitGroup
	)
	close(gate)
	done := make(chan struct{})
	tb.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	forward := func(dst, src net.Conn, gated bool) {
		defer dst.Close()
		buf := make([]byte, 32<<10)
		for {
			if gated {
				mu.Lock()
				g := gate
				mu.Unlock()
				select {
				case <-g:
				case <-done:
					return
				}
			}
			n, err := src.Read(buf)
			if n > 0 {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Go(func() { forward(s, c, true) })
			wg.Go(func() { forward(c, s, false) })
		}
	})
	stall = func() {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-gate:
			gate = make(chan struct{})
		default:
		}
	}
	resume = func() {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-gate:
		default:
			close(gate)
		}
	}
	tb.Cleanup(resume) // first: what waits to be read goes, and nothing waits on the gate
	return ln.Addr().String(), stall, resume
}
