package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"senseboard/air"
	"senseboard/bridge"
	"senseboard/nvm"
	"senseboard/phone"
	"senseboard/record"
	"senseboard/wire"
)

// bridgeFlags are the flags of the phone bridge, in run and in bridge.
type bridgeFlags struct {
	fs        *flag.FlagSet
	http      *string
	token     *string
	nats      *string
	natsCreds *string
	natsID    *string
	reconnect *bool
	manual    *bool
	central   *string
	all       *bool
	idle      *time.Duration
	allowHost listFlag
	// allowOrigin are the origins of web pages the API answers, as given;
	// origins are them as browsers send them, once listen has read them
	allowOrigin listFlag
	origins     []string
	maxConns    *int
}

func addBridgeFlags(fs *flag.FlagSet, httpHelp string) *bridgeFlags {
	f := &bridgeFlags{
		fs:        fs,
		http:      fs.String("http", defaultHTTP(), httpHelp+"; $SENSEBOARD_HTTP, when set, is the default"),
		token:     fs.String("token", "", "access token of the bridge's API, needed beyond loopback (default $SENSEBOARD_TOKEN)"),
		nats:      fs.String("nats", defaultNATS(), "NATS of the radio link between senseboard programs: local (this computer's, on "+air.DefaultLocal+", started here when none runs), local:PORT, nats://[user:password@]host:port[,...] to join a server or cluster elsewhere, or none; $SENSEBOARD_NATS, when set, is the default"),
		natsCreds: fs.String("nats-creds", "", "NATS credentials file (user JWT and NKey seed) for a --nats nats://… server"),
		natsID:    fs.String("nats-id", "", "the program's id on the radio link, which names its inbox senseboard.air.in.<id>, for NATS permissions that name it (default: random)"),
		reconnect: fs.Bool("reconnect", false, "bridge: connect again when a device's connection ends (by default only when asked)"),
		manual:    fs.Bool("manual", false, "bridge: connect only when asked, not to every device found"),
		all:       fs.Bool("connect-all", false, "bridge: connect to every device found and keep the connections (by default it connects when a client uses a device)"),
		idle:      fs.Duration("idle", phone.DefaultIdle, "bridge: release a connection made on demand after this long unused (0: never)"),
		central:   fs.String("central-address", "", "bridge: its address as a BLE central, XX:XX:XX:XX:XX:XX (default: derived from its state directory once and kept there)"),
		maxConns:  fs.Int("http-max-conns", bridge.DefaultMaxConns, "bridge: HTTP connections served at once, WebSockets and streams included; more are answered 503"),
	}
	fs.Lookup("nats").DefValue = air.Redact(defaultNATS()) // help shows no password of $SENSEBOARD_NATS
	fs.Var(&f.allowHost, "allow-host", "bridge: a Host name the bridge answers on loopback besides localhost, 127.0.0.1 and [::1] (repeatable)")
	fs.Var(&f.allowOrigin, "allow-origin", "bridge: the origin of web pages, scheme://host:port, whose calls the API answers besides its own dashboard's, such as an app's dev server http://localhost:5173 (repeatable; docs/security.md)")
	return f
}

// defaultHTTP is the bridge's address when --http is left out:
// $SENSEBOARD_HTTP, or bridge.DefaultHTTP.
func defaultHTTP() string {
	if a := os.Getenv("SENSEBOARD_HTTP"); a != "" {
		return a
	}
	return bridge.DefaultHTTP
}

// defaultNATS is --nats when left out: $SENSEBOARD_NATS, or local.
func defaultNATS() string {
	if a := os.Getenv("SENSEBOARD_NATS"); a != "" {
		return a
	}
	return "local"
}

// joinAir joins the radio link between programs that --nats names; nil
// for none.
func (f *bridgeFlags) joinAir(log *slog.Logger, devices int) (*air.Link, error) {
	if *f.nats == "none" {
		return nil, nil
	}
	return openAir(*f.nats, air.Options{Creds: *f.natsCreds, ID: *f.natsID, Log: log, PendingMessages: air.PendingFor(devices)}, ", or none to keep the devices to this program")
}

// openAir joins the radio link where --nats says, with what to try next
// when it cannot; orElse ends the list of what to give instead.
func openAir(where string, o air.Options, orElse string) (*air.Link, error) {
	l, err := air.Open(where, o)
	if errors.Is(err, air.ErrNoServer) {
		return nil, fmt.Errorf("%w; give --nats local:PORT for a server of this computer on another port, nats://host:port to join one elsewhere%s", err, orElse)
	}
	if errors.Is(err, air.ErrDenied) && strings.HasPrefix(where, "local") {
		return nil, fmt.Errorf("%w; give --nats local:PORT for a server of your own on another port", err)
	}
	return l, err
}

// airNote says where the radio link between programs is.
func airNote(l *air.Link) string {
	switch {
	case l == nil:
		return "none (--nats none)"
	case l.Embedded():
		return "NATS " + l.URL() + " (its server runs in this program; others on this computer join it)"
	}
	return "NATS " + l.URL()
}

// bridgeService is a bridge and its HTTP server, ready to run.
type bridgeService struct {
	b   *phone.Phone
	srv *bridge.Server
	ln  net.Listener
}

// listen opens the bridge's HTTP listener. With optional set, an address
// in use on embedded defaults is not an error: the bridge does not start.
func (f *bridgeFlags) listen(stderr io.Writer, optional bool) (net.Listener, string, error) {
	if *f.http == "none" {
		return nil, "", nil
	}
	token, given := *f.token, flagSet(f.fs, "token")
	if !given {
		token = os.Getenv("SENSEBOARD_TOKEN")
		given = token != ""
	}
	if given {
		if err := bridge.CheckToken(token); err != nil {
			return nil, "", fmt.Errorf("bridge: %w", err)
		}
	}
	if *f.maxConns <= 0 {
		return nil, "", fmt.Errorf("--http-max-conns %d: give a positive number of connections", *f.maxConns)
	}
	if *f.idle < 0 {
		return nil, "", fmt.Errorf("--idle %v: give a duration such as 60s, or 0 to keep connections", *f.idle)
	}
	f.origins = nil
	for _, o := range f.allowOrigin {
		origin, err := bridge.CheckOrigin(o)
		if err != nil {
			return nil, "", fmt.Errorf("--allow-origin: %w", err)
		}
		f.origins = append(f.origins, origin)
	}
	if err := bridge.CheckAddr(*f.http, token); err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", *f.http)
	if err != nil {
		if optional && !flagSet(f.fs, "http") && errors.Is(err, syscall.EADDRINUSE) {
			fmt.Fprintf(stderr, "senseboard: the phone bridge did not start: %s is in use (another senseboard bridge reaches these devices over the air; give --http ADDR for one of this program's own)\n", *f.http)
			return nil, "", nil
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, "", fmt.Errorf("bridge: %w; another program (another senseboard bridge?) has the address: give --http another address, 127.0.0.1:0 to let the system pick a port, or none", err)
		}
		return nil, "", fmt.Errorf("bridge: %w", err)
	}
	return ln, token, nil
}

// start makes the bridge on an open listener.
func (f *bridgeFlags) start(ln net.Listener, token, stateDir string, local []phone.Peripheral, link *air.Link, log *slog.Logger) (*bridgeService, error) {
	b, err := phone.New(phone.Config{Local: local, Air: link, StateDir: stateDir, Reconnect: *f.reconnect,
		Manual: *f.manual, Address: *f.central, ConnectAll: *f.all, Idle: idleOf(*f.idle), Log: log})
	if err != nil {
		ln.Close()
		if errors.Is(err, nvm.ErrInUse) {
			err = fmt.Errorf("%w; another bridge keeps its bonds there: stop it, or give this one a directory of its own with --state", err)
		}
		return nil, err
	}
	return &bridgeService{b: b, srv: &bridge.Server{Phone: b, Recordings: record.NewLibrary(filepath.Join(stateDir, "recordings")),
		Log: log, Token: token, AllowHosts: f.allowHost, AllowOrigins: f.origins, Limits: bridge.Limits{MaxConns: *f.maxConns}}, ln: ln}, nil
}

// idleOf maps --idle to Config.Idle: 0 keeps connections (a negative Idle).
func idleOf(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// URL is where the dashboard is.
func (s *bridgeService) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// run scans and serves until ctx ends; the recordings stop before the
// phone lets its devices go.
func (s *bridgeService) run(ctx context.Context) error {
	var wg sync.WaitGroup
	var serr error
	wg.Go(func() { serr = s.srv.Serve(ctx, s.ln) })
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, func() { s.srv.Recordings.Close(); stop() })
	berr := s.b.Run(pctx)
	wg.Wait()
	return errors.Join(serr, berr)
}

func runBridge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("senseboard bridge", flag.ContinueOnError)
	bf := addBridgeFlags(fs, "address of the bridge's HTTP server: dashboard at /, API under /api/")
	state := fs.String("state", "", "directory of the bridge's bonds and recordings (default "+filepath.Join(wire.DefaultStateDir(), "bridge")+")")
	verbose := fs.Bool("v", false, "log connections and clients to stderr")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: senseboard bridge [flags]

Runs the phone bridge alone: it reaches the devices of senseboard programs
over the radio link between programs (NATS, --nats), connects to them as a phone does, and
serves them over HTTP and WebSocket with a dashboard. senseboard run starts
one too, for its own devices and the others.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return fail(stderr, err)
	}
	if *bf.http == "none" {
		return fail(stderr, errors.New("--http none: the bridge needs an address to serve on"))
	}
	if *state == "" {
		*state = filepath.Join(wire.DefaultStateDir(), "bridge")
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	ln, token, err := bf.listen(stderr, false)
	if err != nil {
		return fail(stderr, err)
	}
	if *bf.nats == "none" {
		ln.Close()
		return fail(stderr, errors.New("--nats none: the bridge alone reaches devices only over the radio link between programs"))
	}
	link, err := bf.joinAir(log, 0)
	if err != nil {
		ln.Close()
		return fail(stderr, err)
	}
	defer link.Close()
	svc, err := bf.start(ln, token, *state, nil, link, log)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "senseboard: phone bridge at %s\n  central      %s\n  radio link   %s\nPress Ctrl-C to stop.\n", svc.URL(), svc.b.Address(), airNote(link))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := svc.run(ctx); err != nil {
		return fail(stderr, err)
	}
	return 0
}
