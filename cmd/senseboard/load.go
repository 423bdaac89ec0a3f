package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"senseboard/load"
	"senseboard/profile"
	"senseboard/wire"
)

func runLoad(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("senseboard load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr     = fs.String("addr", wire.DefaultAddress, "TCP address of the first device; the others listen on the ports that follow")
		fleet    = fs.String("fleet-addr", "", "TCP address of the fleet's port (senseboard run --listen-fleet), instead of --addr: the devices are named by serial there")
		first    = fs.String("serial", profile.Default().Serial, "serial number of the first device on --fleet-addr; the others count up from it")
		devices  = fs.Int("devices", 1, "number of devices")
		paths    = fs.String("subscribe", "/Meas/IMU6/52,/Meas/ECG/125,/Meas/HR", "comma-separated paths to subscribe to on every device")
		duration = fs.Duration("duration", time.Minute, "how long to measure")
		every    = fs.Duration("every", 5*time.Second, "how often to print progress")
		least    = fs.Float64("min-delivery", 99.9, "the least share of expected samples, in percent, every stream must deliver; under it the exit status is 1")
		connect  = fs.Int("connect", 64, "devices connected at a time while starting")
		timeout  = fs.Duration("timeout", 10*time.Second, "how long a device may take to answer while connecting and subscribing")
		cpuProf  = fs.String("cpuprofile", "", "write a CPU profile of the load program to this file until it ends (go tool pprof reads it)")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: senseboard load [flags]

Connects to a fleet of devices over TCP (as senseboard run --devices N
serves them, each on its port or all on --listen-fleet), subscribes to the
same streams on each and prints, every few seconds, the share of expected
samples delivered, samples lost in gaps of the timestamps and how late
notifications arrive; then a summary. The exit status is 1 when a stream
delivers less than --min-delivery or a device cannot be reached.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return fail(stderr, err)
	}
	if *fleet != "" && flagSet(fs, "addr") {
		return fail(stderr, fmt.Errorf("--addr %s and --fleet-addr %s: give one of them (--addr for a port per device, --fleet-addr for the fleet's port)", *addr, *fleet))
	}
	if *fleet == "" && flagSet(fs, "serial") {
		return fail(stderr, fmt.Errorf("--serial %s needs --fleet-addr: devices are named by serial only on the fleet's port (with --addr each device has its own port)", *first))
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
	addrs, err := load.Addrs(*addr, *devices)
	from := *addr
	if *fleet != "" {
		addrs, err = load.FleetAddrs(*fleet, *first, *devices)
		from = *fleet + "/" + *first
	}
	if err != nil {
		return fail(stderr, err)
	}
	cfg := load.Config{Addrs: addrs, Duration: *duration, Interval: *every, MinDelivery: *least / 100, Connect: *connect, Timeout: *timeout,
		Progress: func(r load.Report) { load.Print(stdout, r) }}
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
	fmt.Fprintf(stdout, "senseboard load: %d devices from %s, %s for %s\n", len(addrs), from, strings.Join(cfg.Subscribe, ","), *duration)
	r, err := load.Run(ctx, cfg)
	if r.Streams != nil {
		load.Print(stdout, r)
	}
	if err != nil {
		return fail(stderr, err)
	}
	return 0
}
