package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/fault"
	"senseboard/load"
	"senseboard/profile"
	"senseboard/wire"
)

func runLoad(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("senseboard load", flag.ContinueOnError)
	var (
		addr     = fs.String("addr", wire.DefaultAddress, "TCP address of the first device; the others listen on the ports that follow")
		fleet    = fs.String("fleet-addr", "", "TCP address of the fleet's port (senseboard run --listen-fleet), instead of --addr: the devices are named by serial there")
		nats     = fs.String("nats", "", "reach the devices over the radio link between programs instead of TCP: local (this computer's NATS server, as senseboard run joins it), local:PORT, or nats://[user:password@]host:port[,...]")
		creds    = fs.String("nats-creds", "", "NATS credentials file (user JWT and NKey seed) for a --nats nats://… server")
		natsID   = fs.String("nats-id", "", "with --nats: the load's id on the radio link, which names its inbox senseboard.air.in.<id>, for NATS permissions that name it (default: random)")
		interval = fs.Duration("conn-interval", 0, "with --nats: the BLE connection interval to ask each device for (7.5ms to 4s, in steps of 1.25ms); 0 takes the device's slowest (50ms by default), the fewest messages")
		passKey  = fs.String("pass-key", "", "with --nats: the pass key to pair with, for devices that ask for one")
		first    = fs.String("serial", profile.Default().Serial, "serial number of the first device on --fleet-addr or --nats; the others count up from it")
		devices  = fs.Int("devices", 1, "number of devices")
		paths    = fs.String("subscribe", "/Meas/IMU6/52,/Meas/ECG/125,/Meas/HR", "comma-separated paths to subscribe to on every device")
		duration = fs.Duration("duration", time.Minute, "how long to measure")
		every    = fs.Duration("every", 5*time.Second, "how often to print progress")
		least    = fs.Float64("min-delivery", 99.9, "the least share of expected samples, in percent, every stream must deliver; under it the exit status is 1")
		connect  = fs.Int("connect", 64, "devices connected at a time while starting")
		timeout  = fs.Duration("timeout", 10*time.Second, "how long a device may take to answer while connecting and subscribing")
		cpuProf  = fs.String("cpuprofile", "", "write a CPU profile of the load program to this file until it ends (go tool pprof reads it)")
		faults   = fs.String("faults", "", "fault plan of the load's own phone (phoneoff entries, timed from the start; docs/faults.md); makes the load a client that copes with faults")
		truth    = fs.String("truth", "", "state directory of the senseboard run that injects faults (its --state): the load reports the faults of each device's ground truth (<dir>/<serial>/"+senseboard.FaultLog+") next to what it saw; makes the load a client that copes with faults; needs --fleet-addr or --nats")
		stall    = fs.Duration("stall-after", 3*time.Second, "with --faults or --truth: how long a stream may be silent before the load takes it for stalled and subscribes again")
		pid      = fs.Int("pid", 0, "process id of the devices' program on this computer, whose CPU time and memory per device the reports give; 0 finds it when the devices' TCP port, or their program on the radio link, is on this computer; -1 for none")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: senseboard load [flags]

Connects to a fleet of devices over TCP (as senseboard run --devices N
serves them, each on its port or all on --listen-fleet), or with --nats
over the radio link between programs as a BLE central, subscribes to the
same streams on each and prints, every few seconds, the share of expected
samples delivered, samples lost in gaps of the timestamps and how late
notifications arrive; then a summary. The exit status is 1 when a stream
delivers less than --min-delivery or a device cannot be reached.

With --faults or --truth it is a client that copes with field faults
(docs/faults.md): it connects again when a connection ends, subscribes
again to a stream silent for --stall-after, and resets a device that
answers 429; it reports the stalls, reconnects (and how long the devices
were out of reach) and 429s it saw, next to the faults of the devices'
ground truth (--truth) and its own phone's (--faults).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return fail(stderr, err)
	}
	if *fleet != "" && flagSet(fs, "addr") {
		return fail(stderr, fmt.Errorf("--addr %s and --fleet-addr %s: give one of them (--addr for a port per device, --fleet-addr for the fleet's port)", *addr, *fleet))
	}
	if *nats != "" && (*fleet != "" || flagSet(fs, "addr")) {
		return fail(stderr, fmt.Errorf("--nats and --addr or --fleet-addr: give one of them (--nats for the radio link, the others for TCP)"))
	}
	if *fleet == "" && *nats == "" && flagSet(fs, "serial") {
		return fail(stderr, fmt.Errorf("--serial %s needs --fleet-addr or --nats: devices are named by serial only on the fleet's port and the radio link (with --addr each device has its own port)", *first))
	}
	if *nats == "" {
		for _, name := range []string{"nats-creds", "nats-id", "conn-interval", "pass-key"} {
			if flagSet(fs, name) {
				return fail(stderr, fmt.Errorf("--%s is for the radio link: give --nats too", name))
			}
		}
	}
	if *devices < 1 {
		return fail(stderr, fmt.Errorf("--devices %d: at least 1", *devices))
	}
	if *least < 0 || *least > 100 {
		return fail(stderr, fmt.Errorf("--min-delivery %v: a percentage from 0 to 100", *least))
	}
	if *duration <= 0 || *every <= 0 {
		return fail(stderr, fmt.Errorf("--duration and --every must be positive"))
	}
	if *truth != "" && *fleet == "" && *nats == "" {
		return fail(stderr, fmt.Errorf("--truth %s needs --fleet-addr or --nats: the load finds a device's ground truth by its serial number, which --addr does not give", *truth))
	}
	cfg := load.Config{Duration: *duration, Interval: *every, MinDelivery: *least / 100, Connect: *connect, Timeout: *timeout,
		ConnInterval: *interval, PassKey: *passKey, PID: *pid, Progress: func(r load.Report) { load.Print(stdout, r) }}
	var err error
	from := *addr
	switch {
	case *nats != "":
		cfg.Serials, err = load.Serials(*first, *devices)
		from = "device " + *first + " on the radio link"
	case *fleet != "":
		cfg.Addrs, err = load.FleetAddrs(*fleet, *first, *devices)
		from = *fleet + "/" + *first
	default:
		cfg.Addrs, err = load.Addrs(*addr, *devices)
	}
	if err != nil {
		return fail(stderr, err)
	}
	if *faults != "" || *truth != "" {
		cfg.Faults = &load.FaultOptions{StallAfter: *stall}
		if *faults != "" {
			data, err := os.ReadFile(*faults)
			if err == nil {
				cfg.Faults.PhoneOff, err = fault.ParsePlan(data)
			}
			if err != nil {
				return fail(stderr, fmt.Errorf("--faults: %w", err))
			}
		}
		if dir := *truth; dir != "" {
			cfg.Faults.Truth = func(serial string) ([]fault.Record, error) {
				f, err := os.Open(filepath.Join(dir, serial, senseboard.FaultLog))
				if errors.Is(err, os.ErrNotExist) {
					return nil, nil // no fault yet
				}
				if err != nil {
					return nil, err
				}
				defer f.Close()
				return fault.ReadJSONL(f)
			}
		}
	}
	for p := range strings.SplitSeq(*paths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.Subscribe = append(cfg.Subscribe, p)
		}
	}
	if *cpuProf != "" {
		stopProfile, err := startCPUProfile(*cpuProf)
		if err != nil {
			return fail(stderr, err)
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *nats != "" {
		link, err := openAir(*nats, air.Options{Name: load.Name, Creds: *creds, ID: *natsID, PendingMessages: air.PendingFor(*devices)}, "")
		if err != nil {
			return fail(stderr, err)
		}
		defer link.Close()
		cfg.Air = link
		from += " (NATS " + link.URL() + ")"
	}
	fmt.Fprintf(stdout, "senseboard load: %s from %s, %s for %s\n", devicesWord(*devices), from, strings.Join(cfg.Subscribe, ","), *duration)
	r, err := load.Run(ctx, cfg)
	if r.Streams != nil {
		load.Print(stdout, r)
	}
	switch {
	case errors.Is(err, air.ErrNotOnAir):
		err = fmt.Errorf("%w; are the devices on the air: does senseboard run serve these serials (--serial, --devices) on the same NATS (--nats)?", err)
	case errors.Is(err, load.ErrPairing):
		err = fmt.Errorf("%w; give their pass key with --pass-key", err)
	}
	if err != nil {
		return fail(stderr, err)
	}
	return 0
}

// devicesWord says how many devices: "1 device", "20 devices".
func devicesWord(n int) string {
	if n == 1 {
		return "1 device"
	}
	return fmt.Sprintf("%d devices", n)
}
