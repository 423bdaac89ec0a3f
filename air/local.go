package air

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultLocal is the address of the computer's own NATS server, NATS's
// well-known port on loopback.
const DefaultLocal = "127.0.0.1:4222"

// Local joins the computer's own NATS server at addr, a loopback address
// (DefaultLocal when empty). When none answers there, the program starts
// one itself, in process and on loopback only, and the programs started
// later join it. When the program that runs it stops, the others lose
// their connection: each tries to start the server on addr again, the
// first to take the port wins (the port is the lock), and the rest
// reconnect to it.
//
// The server asks for the token in Options.TokenFile, which every
// program of the user reads (and the first makes): other users'
// programs, and any process that cannot read the file, are refused. A
// server on addr that refuses this program's token gives ErrDenied.
func Local(addr string, o Options) (*Link, error) {
	if addr == "" {
		addr = DefaultLocal
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("air: local NATS address %q: %w; give host:port such as %s", addr, err, DefaultLocal)
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("air: local NATS address %q is not loopback; the server this program starts serves loopback only (join another with a nats:// URL)", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("air: local NATS address %q: the port is 1 to 65535", addr)
	}
	if o.TokenFile == "" {
		o.TokenFile = DefaultTokenFile()
	}
	if o.Creds != "" {
		return nil, fmt.Errorf("air: %w: a credentials file is for a NATS server elsewhere (nats:// URLs); the programs on this computer share the token in %s", ErrCredentials, o.TokenFile)
	}
	tok, err := loadToken(o.TokenFile)
	if err != nil {
		return nil, err
	}
	l, err := newLink("nats://"+addr, o)
	if err != nil {
		return nil, err
	}
	l.token, l.creds = tok, "the token in "+o.TokenFile+"; a program of another user, or with another XDG_STATE_HOME, runs the server on this port"
	l.local = &localServer{l: l, host: host, port: p, poke: make(chan struct{}, 1)}
	// Join a server that answers; else start one, unless another program
	// started one meanwhile, and join it.
	for range 3 {
		if err = l.connect(l.url, 1); err == nil || errors.Is(err, ErrDenied) {
			break
		}
		if serr := l.local.start(); serr != nil && !errors.Is(serr, errPortTaken) {
			return nil, serr
		}
	}
	if err == nil {
		if err = l.start(); err != nil {
			l.nc.Close()
		}
	}
	if err != nil {
		l.local.shutdown()
		return nil, err
	}
	l.wg.Go(l.local.keep)
	return l, nil
}

// errPortTaken is an embedded server whose port another program holds.
var errPortTaken = errors.New("the port is taken")

// localServer is the computer's NATS server when this program runs it.
type localServer struct {
	l    *Link
	host string
	port int
	poke chan struct{} // the connection was lost: try to take over

	mu  sync.Mutex
	srv *server.Server
}

func (s *localServer) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// start starts the server in the program; errPortTaken when another holds
// the port.
func (s *localServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.host, strconv.Itoa(s.port)))
	if err != nil {
		return fmt.Errorf("air: start the NATS server on %s:%d: %w", s.host, s.port, errPortTaken)
	}
	ln.Close() // free: the server takes it (a program racing for it wins instead)
	// Clients only, on loopback, with the token: no WebSocket, HTTP
	// monitoring, routes or leaf nodes (their ports stay 0, off).
	srv, err := server.NewServer(&server.Options{ServerName: "senseboard-" + s.l.id, Host: s.host, Port: s.port,
		Authorization: s.l.token, NoLog: true, NoSigs: true, MaxPayload: 1 << 20})
	if err != nil {
		return fmt.Errorf("air: start the NATS server: %w", err)
	}
	fatal := &fatalLogger{}
	srv.SetLogger(fatal, false, false)
	srv.Start()
	for i := 0; !srv.ReadyForConnections(50 * time.Millisecond); i++ {
		if fatal.failed() || i == 200 {
			srv.Shutdown()
			return fmt.Errorf("air: start the NATS server on %s:%d: %w", s.host, s.port, errPortTaken)
		}
	}
	s.srv = srv
	s.l.log.Info("nats: serving the computer's radio link", "addr", srv.Addr())
	return nil
}

// lost is called when the connection is lost: the keeper tries to take
// over.
func (s *localServer) lost() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// keep takes over the server when the connection is lost and nobody
// serves the port; it exits when the link closes.
func (s *localServer) keep() {
	for {
		select {
		case <-s.l.stop:
			return
		case <-s.poke:
		}
		for !s.l.nc.IsConnected() && !s.l.isClosed() {
			if err := s.start(); err == nil {
				break
			}
			select {
			case <-s.l.stop:
				return
			case <-time.After(s.l.opts.ReconnectWait):
			}
		}
	}
}

// shutdown stops a server this program runs.
func (s *localServer) shutdown() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// fatalLogger notes the server's fatal errors (a port it cannot take)
// instead of ending the program.
type fatalLogger struct {
	mu  sync.Mutex
	err bool
}

func (f *fatalLogger) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fatalLogger) Noticef(string, ...any) {}
func (f *fatalLogger) Warnf(string, ...any)   {}
func (f *fatalLogger) Fatalf(string, ...any) {
	f.mu.Lock()
	f.err = true
	f.mu.Unlock()
}
func (f *fatalLogger) Errorf(string, ...any) {}
func (f *fatalLogger) Debugf(string, ...any) {}
func (f *fatalLogger) Tracef(string, ...any) {}

// Open joins the radio link where names: "local" for the computer's own
// server on DefaultLocal, "local:PORT" for one on another loopback port
// (both started in this program when none runs; see Local), or the URLs
// of a NATS server or cluster, nats://[user:password@]host:port or
// tls://..., separated by commas (see Join).
func Open(where string, o Options) (*Link, error) {
	if where == "local" {
		return Local(DefaultLocal, o)
	}
	if port, ok := strings.CutPrefix(where, "local:"); ok {
		return Local(net.JoinHostPort("127.0.0.1", port), o)
	}
	for _, u := range strings.Split(where, ",") {
		scheme, _, ok := strings.Cut(strings.TrimSpace(u), "://")
		if !ok || scheme != "nats" && scheme != "tls" {
			return nil, fmt.Errorf("air: NATS %q: give local, local:PORT, or URLs nats://host:port (user:password@ or token@ before the host when the server asks; several separated by commas)", Redact(where))
		}
	}
	return Join(where, o)
}
