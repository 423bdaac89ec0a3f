// Package host runs devices as a program does: each device with its state
// directory, its pseudo-terminal, an optional real serial port and a TCP
// listener, on real, scaled or as-fast-as-possible time, until told to stop.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"sync"

	"senseboard"
	"senseboard/air"
	"senseboard/clock"
	"senseboard/link"
	"senseboard/profile"
	"senseboard/replay"
	"senseboard/transport/serial"
	"senseboard/wire"
	"senseboard/world"
)

// Config says what to run.
type Config struct {
	// Profile is the devices' build settings; nil means the defaults.
	Profile *profile.Profile
	// Serial is the first device's serial number ("" keeps the profile's);
	// further devices count up from it.
	Serial string
	// Devices is how many devices to run; 1 when zero.
	Devices int
	// StateDir holds one directory per device, named by serial number;
	// wire.DefaultStateDir() when empty.
	StateDir string
	// PTY is where the first device's pseudo-terminal link goes ("" for
	// <state>/<serial>/tty, "none" for no pseudo-terminal on any device);
	// further devices get <state>/<serial>/tty.
	PTY string
	// SerialPort is a real serial port for the first device, and Baud its rate.
	SerialPort string
	Baud       int
	// Listen is the first device's TCP address (wire.DefaultAddress when
	// empty, "none" for none); further devices take the ports that follow.
	Listen string
	// ListenFleet, when set, is a TCP address where all the devices are
	// served on one port, each connection naming its device by serial
	// number in its hello (TCP<host>:<port>/<serial> for the Go client and
	// wbcmd). A fleet port and Listen "none" keep the program at one file
	// descriptor per connection, whatever the number of devices.
	ListenFleet string
	// Seed makes the devices repeatable; device i uses Seed+i.
	Seed int64
	// Speed is 1 for real time, another positive factor for scaled time,
	// and +Inf to run as fast as possible.
	Speed float64
	// Scenario is the wearer's timeline, nil for the default.
	Scenario *world.Scenario
	// Replay lists recordings to play instead of the model.
	Replay []*replay.Recording
	// Air is the radio link between programs, where each device
	// advertises and takes the streams of centrals of any program on the
	// NATS network; nil keeps the devices off it. The host does not close it.
	Air *air.Link
	// MaxConns bounds the TCP connections and radio streams of all the
	// devices together (serial.DefaultProgramMaxConns when zero);
	// MaxConnsPerDevice those of each device (serial.DefaultMaxConns).
	MaxConns, MaxConnsPerDevice int
	// Log receives what happens; nil discards it.
	Log *slog.Logger
}

// Running is one running device and where it can be reached.
type Running struct {
	Device   *senseboard.Device
	StateDir string
	PTY      string // link to the pseudo-terminal, "" when none
	TCP      string // address, "" when none
	Port     string // real serial port, "" when none
	Air      string // the device's dial subject on the radio link, "" when none

	h     *Host
	srv   *serial.Server
	radio *link.Peripheral
}

// DialRadio opens a stream of the radio link to the device from within
// the program, as a central in range of it; as with net.Dial, ctx bounds
// the dialing only. The stream is served until it closes or the host stops.
func (r *Running) DialRadio(ctx context.Context) (net.Conn, error) {
	h := r.h
	h.radioMu.Lock()
	defer h.radioMu.Unlock()
	if h.stopped {
		return nil, fmt.Errorf("device %s: %w", r.Device.Serial(), net.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	device, central := net.Pipe()
	h.radios.Go(func() { r.radio.ServeConn(h.stopCtx, device) })
	return central, nil
}

// Host is a set of running devices.
type Host struct {
	// Devices are the running devices, in the order of their serials.
	Devices []*Running
	// Fleet is the address of the devices' shared port, "" when none.
	Fleet   string
	clk     clock.Clock
	vclk    *clock.Virtual
	speed   float64
	cfg     Config
	closers []io.Closer
	serve   []func(ctx context.Context) error
	conns   *serial.ConnLimit // the connections of all the devices

	stopCtx context.Context // ends when Run ends
	stop    context.CancelFunc
	onAir   []*air.Listener // the devices on the radio link between programs
	airCtx  context.Context // serves their streams; ends after they said goodbye
	airStop context.CancelFunc
	radioMu sync.Mutex
	stopped bool
	radios  sync.WaitGroup // streams of DialRadio
}

// New makes the devices and opens their transports; Run serves them.
func New(cfg Config) (h *Host, err error) {
	if cfg.Devices <= 0 {
		cfg.Devices = 1
	}
	if cfg.StateDir == "" {
		cfg.StateDir = wire.DefaultStateDir()
	}
	if cfg.Speed == 0 {
		cfg.Speed = 1
	}
	if cfg.Listen == "" {
		cfg.Listen = wire.DefaultAddress
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	base := cfg.Profile
	if base == nil {
		base = profile.Default()
	}
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if cfg.Serial != "" {
		base = base.WithSerial(cfg.Serial)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = serial.DefaultProgramMaxConns
	}
	h = &Host{cfg: cfg, speed: cfg.Speed, conns: serial.NewConnLimit(cfg.MaxConns)}
	switch {
	case cfg.Speed == 1:
		h.clk = clock.NewReal()
	case cfg.Speed > 0 && !math.IsInf(cfg.Speed, 1):
		h.vclk = clock.NewVirtual()
		h.clk = h.vclk
	case math.IsInf(cfg.Speed, 1):
		h.vclk = clock.NewVirtual()
		h.clk = h.vclk
	default:
		return nil, fmt.Errorf("speed %v: a positive factor, or max", cfg.Speed)
	}
	h.stopCtx, h.stop = context.WithCancel(context.Background())
	h.airCtx, h.airStop = context.WithCancel(context.Background())
	defer func(h *Host) {
		if err != nil {
			h.Close()
		}
	}(h)
	for i := range cfg.Devices {
		p := base
		if i > 0 {
			serialNo, err := nextSerial(base.Serial, i)
			if err != nil {
				return nil, err
			}
			p = base.WithSerial(serialNo)
			if err := p.Validate(); err != nil {
				return nil, err
			}
		}
		r, err := h.start(i, p)
		if err != nil {
			return nil, err
		}
		h.Devices = append(h.Devices, r)
	}
	if cfg.ListenFleet != "" {
		if err := h.listenFleet(cfg.ListenFleet); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// listenFleet serves every device on one port.
func (h *Host) listenFleet(addr string) error {
	servers := make([]*serial.Server, len(h.Devices))
	for i, r := range h.Devices {
		servers[i] = r.srv
	}
	f, err := serial.NewFleet(servers)
	if err != nil {
		return err
	}
	f.Program, f.Log = h.conns, h.cfg.Log
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fleet: listen on %s: %w", addr, err)
	}
	h.closers = append(h.closers, ln)
	h.Fleet = ln.Addr().String()
	h.serve = append(h.serve, func(ctx context.Context) error { return f.Serve(ctx, ln) })
	return nil
}

// nextSerial counts up from a numeric serial, keeping its width.
func nextSerial(first string, i int) (string, error) {
	serial, err := profile.SerialAt(first, i)
	if err != nil {
		return "", fmt.Errorf("serial %q: several devices need a numeric first serial to count up from", first)
	}
	return serial, nil
}

func (h *Host) start(i int, p *profile.Profile) (*Running, error) {
	cfg := h.cfg
	dir := filepath.Join(cfg.StateDir, p.Serial)
	d, err := senseboard.New(senseboard.Config{Profile: p, Clock: h.clk, Seed: cfg.Seed + int64(i), StateDir: dir,
		Scenario: cfg.Scenario, Replay: cfg.Replay})
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", p.Serial, err)
	}
	h.closers = append(h.closers, d)
	srv := &serial.Server{Device: d.Device, Log: cfg.Log.With("device", p.Serial), MaxConns: cfg.MaxConnsPerDevice, Program: h.conns}
	r := &Running{Device: d, StateDir: dir, h: h, srv: srv, radio: &link.Peripheral{Server: srv, Radio: d.BLE.Radio()}}

	link := filepath.Join(dir, "tty")
	if cfg.PTY == "none" || i == 0 && cfg.PTY != "" {
		link = cfg.PTY // "none" means no device has one
	}
	if link != "none" {
		pt, err := serial.OpenPTY(link)
		if err != nil {
			return nil, err
		}
		h.closers = append(h.closers, pt)
		r.PTY = link
		h.serve = append(h.serve, func(ctx context.Context) error { return srv.ServeLine(ctx, pt) })
	}
	if i == 0 && cfg.SerialPort != "" {
		baud := cfg.Baud
		if baud <= 0 {
			baud = wire.DefaultBaud
		}
		port, err := serial.OpenPort(cfg.SerialPort, baud)
		if err != nil {
			return nil, err
		}
		h.closers = append(h.closers, port)
		r.Port = cfg.SerialPort
		h.serve = append(h.serve, func(ctx context.Context) error { return srv.ServeLine(ctx, port) })
	}
	if cfg.Listen != "none" {
		addr, err := portAfter(cfg.Listen, i)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("device %s: listen on %s: %w", p.Serial, addr, err)
		}
		h.closers = append(h.closers, ln)
		r.TCP = ln.Addr().String()
		h.serve = append(h.serve, func(ctx context.Context) error { return srv.Serve(ctx, ln) })
	}
	if cfg.Air != nil {
		ln, err := cfg.Air.Listen(p.Serial)
		if err != nil {
			return nil, err
		}
		h.closers = append(h.closers, ln)
		h.onAir = append(h.onAir, ln)
		r.Air = ln.Addr().String()
		h.serve = append(h.serve, func(context.Context) error { return r.radio.Serve(h.airCtx, ln) })
	}
	return r, nil
}

// portAfter returns addr with its port advanced by i (port 0 stays 0).
func portAfter(addr string, i int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("listen address %q: port is not a number", addr)
	}
	if n == 0 {
		return addr, nil
	}
	return net.JoinHostPort(host, strconv.Itoa(n+i)), nil
}

// Run serves every device until ctx ends, then closes them.
func (h *Host) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(h.serve)+1)
	if h.vclk != nil {
		speed := h.speed
		if math.IsInf(speed, 1) {
			speed = 0
		}
		wg.Add(1)
		go func() { defer wg.Done(); h.vclk.Run(ctx, speed) }()
	}
	for _, s := range h.serve {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	<-ctx.Done()
	h.leaveAir()
	wg.Wait()
	h.radioMu.Lock()
	h.stopped = true
	h.radioMu.Unlock()
	h.stop()
	h.radios.Wait()
	err := h.close()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	return err
}

// leaveAir takes the devices off the radio link between programs before
// their streams end, so that centrals learn why first.
func (h *Host) leaveAir() {
	for _, ln := range h.onAir {
		ln.Leave("its program stopped")
	}
	h.airStop()
}

// close releases everything in reverse order of opening.
func (h *Host) close() error {
	var errs []error
	for i := len(h.closers) - 1; i >= 0; i-- {
		if err := h.closers[i].Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	h.closers = nil
	return errors.Join(errs...)
}

// Close releases the devices of a host that is not to run.
func (h *Host) Close() error {
	h.leaveAir()
	h.stop()
	return h.close()
}
