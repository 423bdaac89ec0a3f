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
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/fault"
	"senseboard/nvm"
	"senseboard/phone"
	"senseboard/profile"
	"senseboard/replay"
	"senseboard/transport/serial"
	"senseboard/wire"
	"senseboard/world"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func runDevice(args []string, stdout, stderr io.Writer) int {
	o, err := parseRunFlags(args, stdout)
	if err != nil {
		return fail(stderr, err)
	}
	cfg, opts, err := o.config(stderr)
	if err != nil {
		return fail(stderr, err)
	}
	if err := o.run(cfg, opts, stdout, stderr); err != nil {
		return fail(stderr, err)
	}
	return 0
}

// runOptions are the flags of senseboard run, as given.
type runOptions struct {
	fs                          *flag.FlagSet
	serial, state, profile, pty string
	port                        string
	baud                        int
	listen, listenFleet         string
	beyond                      bool
	maxConns, perDevice         int
	writeInterval               time.Duration
	devices                     int
	seed                        int64
	speed, scenario, faults     string
	verbose                     bool
	cpuProfile, memProfile      string
	mutexProfile                string
	replay                      listFlag
	replayHRLeads               int
	bridge                      *bridgeFlags
}

// parseRunFlags reads the flags of senseboard run.
func parseRunFlags(args []string, stdout io.Writer) (*runOptions, error) {
	fs := flag.NewFlagSet("senseboard run", flag.ContinueOnError)
	o := &runOptions{fs: fs}
	fs.StringVar(&o.serial, "serial", "", "device serial number (default from the profile: 000123)")
	fs.StringVar(&o.state, "state", "", "directory of the non-volatile memory (default "+wire.DefaultStateDir()+")")
	fs.StringVar(&o.profile, "profile", "", "device profile: a built-in one by name ("+strings.Join(profile.Names(), ", ")+") or a file (YAML build settings and product data); optional")
	fs.Int64Var(&o.seed, "seed", 1, "seed of everything random: the same seed and scenario give the same data")
	fs.StringVar(&o.pty, "pty", "", "link to the device's pseudo-terminal (default <state>/<serial>/tty, for fleets of up to 256 devices; none for no pty)")
	fs.StringVar(&o.port, "serial-port", "", "also serve on this real serial port, for example /dev/ttyUSB0")
	fs.IntVar(&o.baud, "baud", wire.DefaultBaud, "baud rate of --serial-port")
	fs.StringVar(&o.listen, "listen", wire.DefaultAddress, "TCP address to serve on (none for no TCP); beyond loopback only with --listen-beyond-loopback")
	fs.StringVar(&o.listenFleet, "listen-fleet", "", "TCP address to serve every device on, one port for the fleet: a client names its device by serial (wbcmd --port TCP<host>:<port>/<serial>); the devices then have no ports of their own unless --listen is given")
	fs.IntVar(&o.maxConns, "max-conns", 0, fmt.Sprintf("TCP connections and radio streams of all the devices together; one more is refused (default %d, or %d per device for more devices)", serial.DefaultProgramMaxConns, serial.ProgramConnsPerDevice))
	fs.IntVar(&o.perDevice, "max-conns-per-device", serial.DefaultMaxConns, "TCP connections and radio streams of each device; one more is refused")
	fs.DurationVar(&o.writeInterval, "write-interval", 0, fmt.Sprintf("least time between two writes of notifications to a TCP connection or a line: what is published meanwhile leaves together in the next write, at the price of up to this much lateness; the devices' clock wakes once an interval too, running what fell due meanwhile together (default 0, writes at once, or %v for more than %d devices)", fleetWriteInterval, senseboard.DefaultPTYs))
	fs.BoolVar(&o.beyond, "listen-beyond-loopback", false, "let --listen and --listen-fleet serve beyond loopback: the TCP ports have no authentication, and anyone who reaches them controls the devices")
	fs.IntVar(&o.devices, "devices", 1, fmt.Sprintf("number of devices to run; serials, TCP ports and ptys count up (for more than %d devices, the Go collector runs at GOGC=%d unless $GOGC is set)", senseboard.DefaultPTYs, fleetGCPercent))
	fs.StringVar(&o.speed, "speed", "1", "device time per second of real time: 1 real time, 10 ten times faster, max as fast as possible")
	fs.StringVar(&o.scenario, "scenario", "", "scenario file: the wearer's timeline (YAML)")
	fs.StringVar(&o.faults, "faults", "", "fault plan file: field faults for every device, timed by each device's seed (YAML; docs/faults.md); each device's ground truth goes to <state>/<serial>/"+senseboard.FaultLog)
	fs.BoolVar(&o.verbose, "v", false, "log sessions and events to stderr, and list every device at start")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the program to this file until it ends (go tool pprof reads it)")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a profile of the program's memory in use to this file when it is asked to stop, before the devices stop (go tool pprof reads it)")
	fs.StringVar(&o.mutexProfile, "mutexprofile", "", "record where the program's goroutines wait for one another's locks, and write the profile to this file when it is asked to stop (go tool pprof reads it)")
	o.bridge = addBridgeFlags(fs, "address of the phone bridge: dashboard at /, API under /api/ (none for no bridge)")
	fs.Var(&o.replay, "replay", "recording to play instead of the model (repeatable): senseboard CSV or JSON Lines, PC-simulator CSV, logbook JSON, ECG CSV, WFDB .hea")
	fs.IntVar(&o.replayHRLeads, "replay-hr-leads", 1, "leads of a replayed WFDB record of two that /Meas/HR detects beats on: 1, the lead the ECG plays, as on the device; 2, both, through the two-lead detector: fewer false beats in noise on one lead, fewer beats found where the second lead is poor, a beat up to 1.5 s later")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: senseboard run [flags]

Runs simulated devices and serves their interface on a pseudo-terminal, on
TCP and over the radio link between programs (NATS), with the phone bridge
on HTTP, until interrupted. run is the default command; senseboard help
lists the others (bridge, load, version).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return nil, err
	}
	return o, nil
}

// config checks the options and loads the files they name into the
// devices' configuration and the fleet's options.
func (o *runOptions) config(stderr io.Writer) (senseboard.Config, senseboard.FleetOptions, error) {
	var cfg senseboard.Config
	var opts senseboard.FleetOptions
	if o.listenFleet == "none" {
		o.listenFleet = ""
	}
	if o.listenFleet != "" && !flagSet(o.fs, "listen") {
		o.listen = "none"
	}
	if err := checkListen("listen", o.listen, o.beyond, stderr); err != nil {
		return cfg, opts, err
	}
	if o.listenFleet != "" {
		if err := checkListen("listen-fleet", o.listenFleet, o.beyond, stderr); err != nil {
			return cfg, opts, err
		}
	}
	if o.devices < 1 {
		return cfg, opts, fmt.Errorf("--devices %d: give 1 or more devices", o.devices)
	}
	if o.maxConns < 0 || o.perDevice <= 0 || o.maxConns == 0 && flagSet(o.fs, "max-conns") {
		return cfg, opts, fmt.Errorf("--max-conns %d, --max-conns-per-device %d: give positive numbers of connections", o.maxConns, o.perDevice)
	}
	if o.writeInterval < 0 {
		return cfg, opts, fmt.Errorf("--write-interval %v: give 0 (write at once) or a positive duration such as 100ms", o.writeInterval)
	}
	cfg = senseboard.Config{StateDir: o.state, Seed: o.seed}
	opts = senseboard.FleetOptions{Devices: o.devices, PTY: o.pty, SerialPort: o.port, Baud: o.baud,
		Listen: o.listen, ListenFleet: o.listenFleet, MaxConns: o.maxConns, MaxConnsPerDevice: o.perDevice,
		WriteInterval: writeInterval(o.devices, o.writeInterval, flagSet(o.fs, "write-interval"))}
	// The devices' clock wakes once a write interval and runs the calls
	// that fell due since, and each session writes what its device
	// published in that pass when the pass ends (serial's pacer); NewReal's
	// millisecond when the connections are written at once. A wake costs
	// the program more CPU time than the calls it runs when they are few,
	// and a pass without writes between its calls finds more of their
	// state in the processor's caches.
	opts.ClockQuantum = opts.WriteInterval
	p := profile.Default()
	if o.profile != "" {
		var err error
		if p, err = profile.Lookup(o.profile); err != nil {
			return cfg, opts, err
		}
	}
	if o.serial != "" {
		p = p.WithSerial(o.serial)
	}
	cfg.Profile = p
	var err error
	if opts.Speed, err = parseSpeed(o.speed); err != nil {
		return cfg, opts, err
	}
	if o.scenario != "" {
		if cfg.Scenario, err = world.LoadScenario(o.scenario); err != nil {
			return cfg, opts, err
		}
		if s := cfg.Scenario.Seed; s != nil && !flagSet(o.fs, "seed") {
			cfg.Seed = int64(*s)
		}
	}
	if o.faults != "" {
		data, err := os.ReadFile(o.faults)
		if err != nil {
			return cfg, opts, fmt.Errorf("--faults: %w", err)
		}
		if cfg.Faults, err = fault.ParsePlan(data); err != nil {
			return cfg, opts, fmt.Errorf("--faults %s: %w", o.faults, err)
		}
	}
	if o.replayHRLeads != 1 && o.replayHRLeads != 2 {
		return cfg, opts, fmt.Errorf("--replay-hr-leads %d: give 1 (the lead the ECG plays) or 2 (both leads of a record of two)", o.replayHRLeads)
	}
	if flagSet(o.fs, "replay-hr-leads") && len(o.replay) == 0 {
		return cfg, opts, errors.New("--replay-hr-leads: give --replay too, a record whose leads the heart rate detects beats on")
	}
	cfg.ReplayHRLeads = o.replayHRLeads
	for _, f := range o.replay {
		r, err := replay.Load(f)
		if err != nil {
			return cfg, opts, err
		}
		if o.replayHRLeads == 1 {
			r.DropSecondLead() // nothing reads it
		}
		cfg.Replay = append(cfg.Replay, r)
	}
	if o.replayHRLeads == 2 {
		if err := twoECGLeads(o.replay, cfg.Replay); err != nil {
			return cfg, opts, err
		}
	}
	if o.verbose {
		opts.Log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	return cfg, opts, nil
}

// twoECGLeads refuses --replay-hr-leads 2 unless the ECG the replay plays
// (replay.Plays) has a second lead, with an error wrapping
// replay.ErrNoSecondLead, as senseboard.New's; files are the files recs
// were loaded from.
func twoECGLeads(files []string, recs []*replay.Recording) error {
	i := replay.Plays(replay.ECG, recs)
	switch {
	case i < 0:
		return fmt.Errorf("--replay-hr-leads 2: no file of --replay holds an ECG: %w; give 1, or a WFDB record of two leads", replay.ErrNoSecondLead)
	case len(recs[i].Series[replay.ECG].Axes) < 2:
		return fmt.Errorf("--replay-hr-leads 2: --replay %s: %w; give 1, or a WFDB record of two leads", files[i], replay.ErrNoSecondLead)
	}
	return nil
}

// run starts the devices and the bridge, says where they are, and serves
// until interrupted.
func (o *runOptions) run(cfg senseboard.Config, opts senseboard.FleetOptions, stdout, stderr io.Writer) error {
	if err := o.clearBridge(); err != nil {
		return err
	}
	ln, token, err := o.bridge.listen(stderr, true)
	if err != nil {
		return err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	link, err := o.bridge.joinAir(log, o.devices)
	if err == nil {
		opts.Air = link
		var f *senseboard.Fleet
		if f, err = senseboard.NewFleet(cfg, opts); err == nil {
			if percent, ok := fleetGC(o.devices, os.Getenv); ok {
				debug.SetGCPercent(percent) // once made: making the devices collects less
			}
			debug.FreeOSMemory() // what making the devices took and left goes back to the system
			err = o.serve(f, cfg, ln, token, link, log, stdout, stderr)
		} else {
			err = startAdvice(err)
		}
		if link != nil {
			link.Close()
		}
	}
	if err != nil && ln != nil {
		ln.Close()
	}
	return err
}

// fleetGCPercent is the Go collector's target for a large fleet: it
// collects when the heap has grown by a quarter since the last collection,
// not doubled as by default. Most of a large fleet's memory is its
// devices' live state, so the default's headroom would double it; the
// collections this costs are a few percent of the program's CPU time
// (docs/performance.md).
const fleetGCPercent = 25

// fleetGC returns the collector's target for a fleet of n devices, and
// false to leave the Go runtime's ($GOGC, or 100).
func fleetGC(n int, getenv func(string) string) (int, bool) {
	if n <= senseboard.DefaultPTYs || getenv("GOGC") != "" {
		return 0, false
	}
	return fleetGCPercent, true
}

// fleetWriteInterval is the least time between two writes of
// notifications to one connection in a large fleet. A streaming device
// publishes a notification every 45 ms or so; written as they come, a
// fleet of thousands makes tens of thousands of small writes a second,
// and each costs the device program and its client a system call
// (docs/performance.md).
const fleetWriteInterval = 100 * time.Millisecond

// writeInterval returns the write interval of a fleet of n devices: the
// one given by --write-interval when set, else none for a few devices and
// fleetWriteInterval for more.
func writeInterval(n int, given time.Duration, set bool) time.Duration {
	if set || n <= senseboard.DefaultPTYs {
		return given
	}
	return fleetWriteInterval
}

// clearBridge keeps the bridge's port out of the devices' TCP ports: a
// fleet on ports of its own from 7809 reaches the bridge's 8080 at its
// 272nd device. A bridge on its default address then takes the first
// port after the devices'; one given among them is an error.
func (o *runOptions) clearBridge() error {
	if *o.bridge.http == "none" || o.listen == "none" {
		return nil
	}
	dh, dp, err1 := net.SplitHostPort(o.listen)
	bh, bp, err2 := net.SplitHostPort(*o.bridge.http)
	first, err3 := strconv.Atoi(dp)
	port, err4 := strconv.Atoi(bp)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || first == 0 || port < first || port >= first+o.devices || !sameHost(dh, bh) {
		return nil // no clash, or an address listen will refuse
	}
	last := first + o.devices - 1
	if flagSet(o.fs, "http") {
		return fmt.Errorf("--http %s is among the devices' TCP ports, %d to %d: give the bridge another port, or the devices another --listen", *o.bridge.http, first, last)
	}
	*o.bridge.http = net.JoinHostPort(bh, strconv.Itoa(last+1))
	return nil
}

// sameHost reports whether two listening hosts may share ports: the same
// host, or either one every address.
func sameHost(a, b string) bool {
	unspecified := func(h string) bool { ip := net.ParseIP(h); return h == "" || ip != nil && ip.IsUnspecified() }
	named := func(h string) string {
		if h == "localhost" {
			return "127.0.0.1"
		}
		return h
	}
	return named(a) == named(b) || unspecified(a) || unspecified(b)
}

// startAdvice adds to an error of starting the devices what to do when
// another program holds what they need.
func startAdvice(err error) error {
	switch {
	case errors.Is(err, air.ErrOnAir):
		return fmt.Errorf("%w; stop that program, or give this one other serials (--serial), or a radio link of its own (--nats local:PORT or none)", err)
	case errors.Is(err, nvm.ErrInUse):
		return fmt.Errorf("%w; another program runs a device of that serial there: stop it, or give this one other serials (--serial) or another --state", err)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w; another program has the address: give --listen (or --listen-fleet) another address, or 127.0.0.1:0 to let the system pick ports", err)
	}
	return err
}

// serve runs the devices and the bridge until interrupted.
func (o *runOptions) serve(h *senseboard.Fleet, cfg senseboard.Config, ln net.Listener, token string, link *air.Link, log *slog.Logger, stdout, stderr io.Writer) error {
	var err error
	var svc *bridgeService
	if ln != nil {
		var local []phone.Peripheral
		for _, r := range h.Members {
			local = append(local, phone.Peripheral{Serial: r.Device.Serial(), Dial: r.DialRadio, Scan: r.Scan, Inject: r.Device.InjectJSON, Faults: r.Device.Faults})
		}
		state := cfg.StateDir
		if state == "" {
			state = wire.DefaultStateDir()
		}
		if svc, err = o.bridge.start(ln, token, filepath.Join(state, "bridge"), local, link, log); err != nil {
			h.Close()
			return err
		}
	}
	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			h.Close()
			return err
		}
		defer stopProfile()
	}
	// Ctrl-C is caught before the program says to press it: one pressed
	// at once still stops the devices in order.
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	printRunning(stdout, h, svc, link, o.verbose)
	warnFiles(stderr, h)
	if o.mutexProfile != "" {
		runtime.SetMutexProfileFraction(mutexFraction)
	}
	ctx, cancel := context.WithCancel(context.Background())
	context.AfterFunc(sig, func() {
		if o.memProfile != "" {
			if err := writeHeapProfile(o.memProfile); err != nil {
				fmt.Fprintf(stderr, "senseboard: %v\n", err)
			}
		}
		if o.mutexProfile != "" {
			if err := writeProfile("mutex", o.mutexProfile); err != nil {
				fmt.Fprintf(stderr, "senseboard: --mutexprofile: %v\n", err)
			}
		}
		cancel()
	})
	var wg sync.WaitGroup
	var berr error
	if svc != nil {
		wg.Go(func() { berr = svc.run(ctx) })
	}
	err = h.Run(ctx)
	cancel()
	wg.Wait()
	return errors.Join(err, berr)
}

// startCPUProfile profiles the program's CPU into the file path until
// the function it returns is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeapProfile writes a profile of the memory in use, after a
// collection, to the file path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile: %w", err)
	}
	return f.Close()
}

// mutexFraction is the share of the waits for a lock that --mutexprofile
// records, one in this many: enough for where a fleet waits, at little
// cost.
const mutexFraction = 20

// writeProfile writes the runtime's profile of a name to the file path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// listEach is the most devices printRunning lists one by one; beyond it
// (unless -v) it prints a summary of the first and the last.
const listEach = 8

// printRunning says where the devices and the bridge can be reached.
func printRunning(stdout io.Writer, h *senseboard.Fleet, svc *bridgeService, link *air.Link, all bool) {
	if len(h.Members) > listEach && !all {
		printSummary(stdout, h)
	} else {
		for _, r := range h.Members {
			printDevice(stdout, h, r)
		}
	}
	fmt.Fprintf(stdout, "  radio link   %s\n", airNote(link))
	if svc != nil {
		fmt.Fprintf(stdout, "  bridge       %s (dashboard; API under %sapi/)\n               a phone with central address %s\n", svc.URL(), svc.URL(), svc.b.Address())
	}
	fmt.Fprintln(stdout, "Press Ctrl-C to stop.")
}

// printDevice says where one device can be reached.
func printDevice(stdout io.Writer, h *senseboard.Fleet, r *senseboard.Member) {
	d := r.Device
	fmt.Fprintf(stdout, "senseboard: device %s (%s, sw %s) is running\n", d.Serial(), d.Profile().Product.Name, profile.Version)
	if r.PTY != "" {
		fmt.Fprintf(stdout, "  serial line  %s\n               wbcmd --port %s --path /Info\n", r.PTY, r.PTY)
	}
	if r.SerialPort != "" {
		fmt.Fprintf(stdout, "  serial port  %s\n", r.SerialPort)
	}
	if r.TCP != "" {
		fmt.Fprintf(stdout, "  TCP          %s\n               wbcmd --port TCP%s --path /Info\n", r.TCP, r.TCP)
	}
	if h.Addr != "" {
		fmt.Fprintf(stdout, "  fleet port   %s/%s\n               wbcmd --port TCP%s/%s --path /Info\n", h.Addr, d.Serial(), h.Addr, d.Serial())
	}
	fmt.Fprintf(stdout, "  state        %s\n", r.StateDir)
}

// printSummary says where the first and the last of many devices can be
// reached, and how many have each kind of link.
func printSummary(stdout io.Writer, h *senseboard.Fleet) {
	first, last := h.Members[0], h.Members[len(h.Members)-1]
	d := first.Device
	fmt.Fprintf(stdout, "senseboard: %d devices, %s to %s (%s, sw %s), are running (-v lists each)\n",
		len(h.Members), d.Serial(), last.Device.Serial(), d.Profile().Product.Name, profile.Version)
	if first.PTY != "" { // every device has one, or none has
		fmt.Fprintf(stdout, "  serial lines %d pseudo-terminals, %s to %s\n", len(h.Members), first.PTY, last.PTY)
	}
	if first.SerialPort != "" {
		fmt.Fprintf(stdout, "  serial port  %s (device %s)\n", first.SerialPort, d.Serial())
	}
	if first.TCP != "" {
		fmt.Fprintf(stdout, "  TCP          a port each: %s at %s … %s at %s\n", d.Serial(), first.TCP, last.Device.Serial(), last.TCP)
	}
	if h.Addr != "" {
		fmt.Fprintf(stdout, "  fleet port   %s/<serial>\n               wbcmd --port TCP%s/%s --path /Info\n", h.Addr, h.Addr, d.Serial())
	}
	fmt.Fprintf(stdout, "  state        %s to %s\n", first.StateDir, last.StateDir)
	program, each := h.MaxConns()
	fmt.Fprintf(stdout, "  limits       %d connections of the devices together (--max-conns), %d of each (--max-conns-per-device)\n", program, each)
}

// warnFiles warns when the process cannot open a TCP connection for every
// device besides its listeners and pseudo-terminals.
func warnFiles(stderr io.Writer, h *senseboard.Fleet) {
	used, limit := h.Files()
	if limit == 0 || h.Members[0].TCP == "" && h.Addr == "" {
		return
	}
	if room := limit - used; room < len(h.Members) {
		fmt.Fprintf(stderr, "senseboard: warning: the process may open %d file descriptors (its hard limit, ulimit -Hn) and its listeners and pseudo-terminals take about %d, which leaves room for %d TCP connections at once for %d devices; give --listen-fleet ADDR with --listen none, --pty none, or raise the hard limit\n",
			limit, used, max(room, 0), len(h.Members))
	}
}

// checkListen refuses a device TCP address beyond loopback unless the
// user said so, and warns when they did: the port serves without
// authentication.
func checkListen(flag, addr string, beyond bool, stderr io.Writer) error {
	if addr == "none" {
		return nil
	}
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q: %w; give host:port, such as %s", flag, addr, err, wire.DefaultAddress)
	}
	ip := net.ParseIP(h)
	if h == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	if !beyond {
		return fmt.Errorf("--%s %s serves beyond loopback, and the device's TCP port has no authentication: anyone who reaches it can read and change the device; give --listen-beyond-loopback to do it anyway, or a loopback address such as %s", flag, addr, wire.DefaultAddress)
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
