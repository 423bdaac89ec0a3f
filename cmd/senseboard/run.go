package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"senseboard/bridge"
	"senseboard/host"
	"senseboard/profile"
	"senseboard/replay"
	"senseboard/wire"
	"senseboard/world"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func runDevice(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("senseboard run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		serialNo  = fs.String("serial", "", "device serial number (default from the profile: 000123)")
		state     = fs.String("state", "", "directory of the non-volatile memory (default "+wire.DefaultStateDir()+")")
		prof      = fs.String("profile", "", "device profile file (YAML build settings; optional)")
		seed      = fs.Int64("seed", 1, "seed of everything random: the same seed and scenario give the same data")
		pty       = fs.String("pty", "", "link to the device's pseudo-terminal (default <state>/<serial>/tty; none for no pty)")
		port      = fs.String("serial-port", "", "also serve on this real serial port, for example /dev/ttyUSB0")
		baud      = fs.Int("baud", 115200, "baud rate of --serial-port")
		listen    = fs.String("listen", wire.DefaultAddress, "TCP address to serve on (none for no TCP); beyond loopback only with --listen-beyond-loopback")
		beyond    = fs.Bool("listen-beyond-loopback", false, "let --listen serve beyond loopback: the TCP port has no authentication, and anyone who reaches it controls the device")
		devices   = fs.Int("devices", 1, "number of devices to run; serials, TCP ports and ptys count up")
		speed     = fs.String("speed", "1", "device time per second of real time: 1 real time, 10 ten times faster, max as fast as possible")
		scenario  = fs.String("scenario", "", "scenario file: the wearer's timeline (YAML)")
		verbose   = fs.Bool("v", false, "log sessions and events to stderr")
		recording listFlag
	)
	bf := addBridgeFlags(fs, "address of the phone bridge: dashboard at /, API under /api/ (none for no bridge)")
	fs.Var(&recording, "replay", "recording to play instead of the model (repeatable): senseboard CSV or JSON Lines, PC-simulator CSV, logbook JSON, ECG CSV, WFDB .hea")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: senseboard run [flags]

Runs simulated devices and serves their interface on a pseudo-terminal, on
TCP and over the local radio link, with the phone bridge on HTTP, until
interrupted.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return fail(stderr, err)
	}
	if err := checkListen(*listen, *beyond, stderr); err != nil {
		return fail(stderr, err)
	}
	cfg := host.Config{Serial: *serialNo, Devices: *devices, StateDir: *state, PTY: *pty, SerialPort: *port, Baud: *baud,
		Listen: *listen, Seed: *seed, Air: *bf.air}
	if *prof != "" {
		p, err := profile.Load(*prof)
		if err != nil {
			return fail(stderr, err)
		}
		cfg.Profile = p
	}
	var err error
	if cfg.Speed, err = parseSpeed(*speed); err != nil {
		return fail(stderr, err)
	}
	if *scenario != "" {
		if cfg.Scenario, err = world.LoadScenario(*scenario); err != nil {
			return fail(stderr, err)
		}
		if s := cfg.Scenario.Seed; s != nil && !flagSet(fs, "seed") {
			cfg.Seed = int64(*s)
		}
	}
	for _, f := range recording {
		r, err := replay.Load(f)
		if err != nil {
			return fail(stderr, err)
		}
		cfg.Replay = append(cfg.Replay, r)
	}
	if *verbose {
		cfg.Log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	ln, token, err := bf.listen(stderr, true)
	if err != nil {
		return fail(stderr, err)
	}
	h, err := host.New(cfg)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return fail(stderr, err)
	}
	var svc *bridgeService
	if ln != nil {
		var local []bridge.Peripheral
		for _, r := range h.Devices {
			local = append(local, bridge.Peripheral{Serial: r.Device.Serial(), Dial: r.DialRadio, Inject: r.Device.InjectJSON})
		}
		state := cfg.StateDir
		if state == "" {
			state = wire.DefaultStateDir()
		}
		log := cfg.Log
		if log == nil {
			log = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		if svc, err = bf.start(ln, token, filepath.Join(state, "bridge"), local, log); err != nil {
			h.Close()
			return fail(stderr, err)
		}
	}
	for _, r := range h.Devices {
		d := r.Device
		fmt.Fprintf(stdout, "senseboard: device %s (%s, sw %s) is running\n", d.Serial(), d.Profile().Product.Name, profile.Version)
		if r.PTY != "" {
			fmt.Fprintf(stdout, "  serial line  %s\n               wbcmd --port %s --path /Info\n", r.PTY, r.PTY)
		}
		if r.Port != "" {
			fmt.Fprintf(stdout, "  serial port  %s\n", r.Port)
		}
		if r.TCP != "" {
			fmt.Fprintf(stdout, "  TCP          %s\n               wbcmd --port TCP%s --path /Info\n", r.TCP, r.TCP)
		}
		fmt.Fprintf(stdout, "  state        %s\n", r.StateDir)
	}
	if svc != nil {
		fmt.Fprintf(stdout, "  bridge       %s (dashboard; API under %sapi/)\n               a phone with central address %s\n", svc.URL(), svc.URL(), svc.b.Address())
	}
	fmt.Fprintln(stdout, "Press Ctrl-C to stop.")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var berr error
	if svc != nil {
		wg.Go(func() { berr = svc.run(ctx) })
	}
	err = h.Run(ctx)
	cancel()
	wg.Wait()
	if err = errors.Join(err, berr); err != nil {
		return fail(stderr, err)
	}
	return 0
}

// checkListen refuses a device TCP address beyond loopback unless the
// user said so, and warns when they did: the port serves without
// authentication.
func checkListen(addr string, beyond bool, stderr io.Writer) error {
	if addr == "none" {
		return nil
	}
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w; give host:port, such as %s", addr, err, wire.DefaultAddress)
	}
	ip := net.ParseIP(h)
	if h == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	if !beyond {
		return fmt.Errorf("--listen %s serves beyond loopback, and the device's TCP port has no authentication: anyone who reaches it can read and change the device; give --listen-beyond-loopback to do it anyway, or a loopback address such as %s", addr, wire.DefaultAddress)
	}
	fmt.Fprintf(stderr, "senseboard: warning: the devices' TCP ports on %s serve without authentication: anyone who reaches them can read and change the devices\n", addr)
	return nil
}

func parseSpeed(s string) (float64, error) {
	if strings.EqualFold(s, "max") {
		return math.Inf(1), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("--speed %q: a positive factor such as 1, 10 or 0.5, or max", s)
	}
	return v, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
