package senseboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/air"
	"senseboard/clock"
	"senseboard/link"
	"senseboard/profile"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// FleetOptions says how many devices a fleet has, how their time runs and
// where NewFleet serves them. What each device is comes from the Config.
type FleetOptions struct {
	// Devices is how many devices to run; 1 when zero.
	Devices int
	// Speed is how the devices' time runs when Config.Clock is nil: 1 (or
	// 0) for real time, another positive factor for a virtual clock that
	// Run drives that many times faster than real time, +Inf for one that
	// Run drives as fast as possible. With Config.Clock set the devices
	// keep its time, and Speed must be 0.
	Speed float64
	// PTY is where the first device's pseudo-terminal link goes ("" for
	// <state>/<serial>/tty, "none" for no pseudo-terminal on any device);
	// further devices get <state>/<serial>/tty. A fleet of more than
	// DefaultPTYs devices has none when PTY is "": a pseudo-terminal costs
	// two file descriptors, and a system has a few thousand.
	PTY string
	// SerialPort is a real serial port for the first device, and Baud its
	// rate (wire.DefaultBaud when zero).
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
	// Air is the radio link between programs, where each device
	// advertises and takes the streams of centrals of any program on the
	// NATS network; nil keeps the devices off it. The fleet does not close it.
	Air *air.Link
	// MaxConns bounds the TCP connections and radio streams of all the
	// devices together (serial.ProgramMaxConns of Devices when zero: 1024,
	// or 4 per device for a larger fleet); MaxConnsPerDevice those of each
	// device (serial.DefaultMaxConns).
	MaxConns, MaxConnsPerDevice int
	// WriteInterval is the least time between two writes of
	// notifications to a device's TCP connection or line
	// (serial.Server.WriteInterval); zero writes them when the clock's pass
	// ends. The radio link's streams leave at its connection events.
	WriteInterval time.Duration
	// ClockQuantum is the least time between two wakes of the devices'
	// real clock (clock.NewRealQuantum): the calls that fall due within it
	// run together, up to that late. Zero is NewReal's millisecond; it
	// does nothing on a virtual clock or one the Config gives.
	ClockQuantum time.Duration
	// Log receives what happens; nil discards it.
	Log *slog.Logger
}

// Member is one device of a fleet and where it can be reached.
type Member struct {
	Device     *Device
	StateDir   string
	PTY        string // link to the pseudo-terminal, "" when none
	TCP        string // address, "" when none
	SerialPort string // real serial port, "" when none
	Air        string // the device's dial subject on the radio link, "" when none

	f     *Fleet
	srv   *serial.Server
	radio *link.Peripheral
}

// DialRadio opens a stream of the radio link to the device from within
// the program, as a central in range of it; as with net.Dial, ctx bounds
// the dialing only. The stream is served until it closes or the fleet stops.
func (m *Member) DialRadio(ctx context.Context) (net.Conn, error) {
	f := m.f
	f.radioMu.Lock()
	defer f.radioMu.Unlock()
	if f.stopped {
		return nil, fmt.Errorf("device %s: %w", m.Device.Serial(), net.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("device %s: %w", m.Device.Serial(), err)
	}
	device, central := net.Pipe()
	f.radios.Go(func() { m.radio.ServeConn(f.stopCtx, device) })
	return central, nil
}

// Scan returns what a scan of the device sees now, as its radio
// broadcasts it to the centrals in range (phone.Peripheral's Scan). It
// always can.
func (m *Member) Scan() (link.AdvertMsg, bool) { return m.radio.Scan(), true }

// Fleet is a set of devices served as a program serves them: each with its
// state directory, its pseudo-terminal, an optional real serial port, a
// TCP listener and the radio link between programs, until Run's context
// ends.
type Fleet struct {
	// Members are the devices, in the order of their serials.
	Members []*Member
	// Addr is the address of the fleet port, where every device is served
	// by serial number; "" when none.
	Addr string

	opts    FleetOptions
	vclk    *clock.Virtual // the clock Run drives, nil when none
	speed   float64        // Run's speed of vclk; 0 as fast as possible
	rclk    *clock.Real    // the real clock the fleet made, which close closes; nil when none
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

// NewFleet makes opts.Devices devices of cfg, as New makes one, and opens
// their transports; Run serves them. For a fleet, cfg.Profile is the first
// device's, and further devices count up from its serial number; device i
// takes the seed cfg.Seed+i; cfg.StateDir holds one directory per device,
// named by serial number (wire.DefaultStateDir() when empty); and the
// devices share one clock (see FleetOptions.Speed). When it fails, it has
// closed what it opened.
func NewFleet(cfg Config, opts FleetOptions) (f *Fleet, err error) {
	if opts.Devices <= 0 {
		opts.Devices = 1
	}
	if cfg.StateDir == "" {
		cfg.StateDir = wire.DefaultStateDir()
	}
	if opts.Listen == "" {
		opts.Listen = wire.DefaultAddress
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = serial.ProgramMaxConns(opts.Devices)
	}
	if opts.PTY == "" && opts.Devices > DefaultPTYs {
		opts.PTY = "none"
	}
	if err := opts.checkFiles(fileLimit()); err != nil {
		return nil, err
	}
	base := cfg.Profile
	if base == nil {
		base = profile.Default()
	}
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	f = &Fleet{opts: opts, conns: serial.NewConnLimit(opts.MaxConns)}
	switch speed := opts.Speed; {
	case cfg.Clock != nil && speed != 0:
		return nil, fmt.Errorf("speed %v: the devices keep the time of the clock they are given; give a speed without a clock", speed)
	case cfg.Clock != nil:
	case speed == 0 || speed == 1:
		f.rclk = clock.NewRealQuantum(opts.ClockQuantum)
		cfg.Clock = f.rclk
	case speed > 0: // Run drives it, as fast as possible at +Inf
		f.vclk = clock.NewVirtual()
		if !math.IsInf(speed, 1) {
			f.speed = speed
		}
		cfg.Clock = f.vclk
	default:
		return nil, fmt.Errorf("speed %v: a positive factor, or max", speed)
	}
	f.stopCtx, f.stop = context.WithCancel(context.Background())
	f.airCtx, f.airStop = context.WithCancel(context.Background())
	defer func(f *Fleet) {
		if err != nil {
			f.Close()
		}
	}(f)
	for i := range opts.Devices {
		dc := cfg
		dc.Seed = cfg.Seed + int64(i)
		dc.Profile = base
		if i > 0 {
			serialNo, err := nextSerial(base.Serial, i)
			if err != nil {
				return nil, err
			}
			dc.Profile = base.WithSerial(serialNo)
			if err := dc.Profile.Validate(); err != nil {
				return nil, err
			}
		}
		dc.StateDir = filepath.Join(cfg.StateDir, dc.Profile.Serial)
		m, err := f.start(i, dc)
		if err != nil {
			return nil, err
		}
		f.Members = append(f.Members, m)
	}
	if opts.ListenFleet != "" {
		if err := f.listenFleet(opts.ListenFleet); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// DefaultPTYs is the most devices that get a pseudo-terminal each unless
// FleetOptions.PTY says otherwise.
const DefaultPTYs = 256

// Files a fleet opens before any connection: the program's own (standard
// streams, the runtime's poller, the state lock file, the NATS connection,
// a bridge's listener), then per device.
const (
	programFiles = 32
	ptyFiles     = 2 // master and slave, kept open
)

// ErrFiles is a fleet that needs more file descriptors than the process
// may open.
var ErrFiles = errors.New("not enough file descriptors")

// files counts the file descriptors the fleet opens before any
// connection.
func (o FleetOptions) files() int {
	n := programFiles
	if o.PTY != "none" {
		n += ptyFiles * o.Devices
	}
	if o.Listen != "none" {
		n += o.Devices
	}
	if o.ListenFleet != "" {
		n++
	}
	if o.SerialPort != "" {
		n++
	}
	return n
}

// checkFiles refuses a fleet whose pseudo-terminals and listeners alone
// need more than limit file descriptors (fileLimit's; 0 for no limit).
func (o FleetOptions) checkFiles(limit int) error {
	need := o.files()
	if limit == 0 || need <= limit {
		return nil
	}
	var what, fix []string
	if o.Listen != "none" {
		what, fix = append(what, "a TCP port each"), append(fix, "--listen-fleet ADDR with --listen none to serve them all on one port")
	}
	if o.PTY != "none" {
		what, fix = append(what, "a pseudo-terminal each, two descriptors"), append(fix, "--pty none")
	}
	return fmt.Errorf("%w: %d devices need about %d before any connection (%s), and the process may open %d (its hard limit, ulimit -Hn): give %s, or raise the hard limit",
		ErrFiles, o.Devices, need, strings.Join(what, "; "), limit, strings.Join(fix, ", "))
}

// MaxConns returns the limits of the connections of all the devices
// together and of each.
func (f *Fleet) MaxConns() (program, perDevice int) {
	perDevice = f.opts.MaxConnsPerDevice
	if perDevice <= 0 {
		perDevice = serial.DefaultMaxConns
	}
	return f.opts.MaxConns, perDevice
}

// Files returns the file descriptors the fleet opened before any
// connection, about, and the most the process may open (0 when the
// system does not say): what is left bounds the TCP connections it can
// take.
func (f *Fleet) Files() (used, limit int) { return f.opts.files(), fileLimit() }

// listenFleet serves every device on one port.
func (f *Fleet) listenFleet(addr string) error {
	servers := make([]*serial.Server, len(f.Members))
	for i, m := range f.Members {
		servers[i] = m.srv
	}
	sf, err := serial.NewFleet(servers)
	if err != nil {
		return err
	}
	sf.Program, sf.Log = f.conns, f.opts.Log
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fleet: listen on %s: %w", addr, err)
	}
	f.closers = append(f.closers, ln)
	f.Addr = ln.Addr().String()
	f.serve = append(f.serve, func(ctx context.Context) error { return sf.Serve(ctx, ln) })
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

// start makes device i of the fleet and opens its transports.
func (f *Fleet) start(i int, cfg Config) (*Member, error) {
	opts, serialNo := f.opts, cfg.Profile.Serial
	d, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", serialNo, err)
	}
	if d.Logbook != nil {
		for _, w := range d.Logbook.Storage().Warnings() {
			opts.Log.Warn(w, "device", serialNo)
		}
	}
	f.closers = append(f.closers, d, closerFunc(d.Faults.LogTo(filepath.Join(cfg.StateDir, FaultLog))))
	srv := &serial.Server{Device: d.Core, Log: opts.Log.With("device", serialNo), MaxConns: opts.MaxConnsPerDevice, Program: f.conns,
		WriteInterval: opts.WriteInterval}
	m := &Member{Device: d, StateDir: cfg.StateDir, f: f, srv: srv, radio: &link.Peripheral{Server: srv, Radio: d.Radio}}

	tty := filepath.Join(cfg.StateDir, "tty")
	if opts.PTY == "none" || i == 0 && opts.PTY != "" {
		tty = opts.PTY // "none" means no device has one
	}
	if tty != "none" {
		pt, err := serial.OpenPTY(tty)
		if err != nil {
			return nil, err
		}
		f.closers = append(f.closers, pt)
		m.PTY = tty
		f.serve = append(f.serve, func(ctx context.Context) error { return srv.ServeLine(ctx, pt) })
	}
	if i == 0 && opts.SerialPort != "" {
		baud := opts.Baud
		if baud <= 0 {
			baud = wire.DefaultBaud
		}
		port, err := serial.OpenPort(opts.SerialPort, baud)
		if err != nil {
			return nil, err
		}
		f.closers = append(f.closers, port)
		m.SerialPort = opts.SerialPort
		f.serve = append(f.serve, func(ctx context.Context) error { return srv.ServeLine(ctx, port) })
	}
	if opts.Listen != "none" {
		addr, err := portAfter(opts.Listen, i)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("device %s: listen on %s: %w", serialNo, addr, err)
		}
		f.closers = append(f.closers, ln)
		m.TCP = ln.Addr().String()
		f.serve = append(f.serve, func(ctx context.Context) error { return srv.Serve(ctx, ln) })
	}
	if opts.Air != nil {
		ln, err := opts.Air.Listen(serialNo)
		if err != nil {
			return nil, err
		}
		var last link.AdvertMsg
		var lastJSON []byte
		ln.SetScan(func() []byte { // called once a second: its JSON again while it stays
			if s := m.radio.Scan(); lastJSON == nil || !sameScan(s, last) {
				last, lastJSON = s, nil
				lastJSON, _ = json.Marshal(s)
			}
			return lastJSON
		})
		f.closers = append(f.closers, ln)
		f.onAir = append(f.onAir, ln)
		m.Air = ln.Addr().String()
		ln.Handle(func(conn net.Conn) { // no goroutine per device waits for streams
			f.radioMu.Lock()
			defer f.radioMu.Unlock()
			if f.stopped {
				conn.Close()
				return
			}
			f.radios.Go(func() { m.radio.ServeAccepted(f.airCtx, conn) })
		})
	}
	return m, nil
}

// sameScan reports whether two scans of a device saw the same.
func sameScan(a, b link.AdvertMsg) bool {
	return a.Serial == b.Serial && a.Address == b.Address && a.Advertising == b.Advertising &&
		bytes.Equal(a.Adv, b.Adv) && bytes.Equal(a.ScanResp, b.ScanResp)
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

// Run serves every device until ctx ends, then closes them. It drives the
// fleet's virtual clock, when FleetOptions.Speed gave it one.
func (f *Fleet) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(f.serve)+1)
	if f.vclk != nil {
		wg.Go(func() { f.vclk.Run(ctx, f.speed) })
	}
	for _, s := range f.serve {
		wg.Go(func() {
			if err := s(ctx); err != nil {
				errs <- err
				cancel()
			}
		})
	}
	<-ctx.Done()
	f.leaveAir()
	// The devices' apps stop before the clock is waited for: their
	// contexts end and release the clock they hold, so that a virtual
	// clock's goroutine, which waits for held work, ends too.
	for _, m := range f.Members {
		m.Device.stopApps()
	}
	wg.Wait()
	f.radioMu.Lock()
	f.stopped = true
	f.radioMu.Unlock()
	f.stop()
	f.radios.Wait()
	err := f.close()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	return err
}

// leaveAir takes the devices off the radio link between programs before
// their streams end, so that centrals learn why first.
func (f *Fleet) leaveAir() {
	for _, ln := range f.onAir {
		ln.Leave("its program stopped")
	}
	f.airStop()
}

// close releases everything in reverse order of opening, then closes the
// real clock the fleet made for its devices.
func (f *Fleet) close() error {
	var errs []error
	for i := len(f.closers) - 1; i >= 0; i-- {
		if err := f.closers[i].Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	f.closers = nil
	if f.rclk != nil {
		f.rclk.Close()
	}
	return errors.Join(errs...)
}

// Close releases the devices of a fleet that is not to run.
func (f *Fleet) Close() error {
	f.leaveAir()
	f.stop()
	return f.close()
}
