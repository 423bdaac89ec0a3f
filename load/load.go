// Package load puts a fleet of devices under a measured load: it connects to
// every device with the Go client, over TCP or as a central over the radio
// link between programs (NATS, package air), subscribes to the same
// streams on each, and counts what arrives, to tell what a machine (or a
// deployment) holds.
//
// For every stream it reports the share of the expected samples that were
// delivered, the samples lost in gaps between timestamps, and percentiles of
// how late notifications arrive; see Report.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/air"
	"senseboard/client"
	"senseboard/link"
	"senseboard/profile"
	"senseboard/radio"
)

// Config says what load to put on which devices.
type Config struct {
	// Addrs are the TCP addresses of the devices: host:port of a device's
	// own port, or host:port/serial of a device on a fleet's port.
	Addrs []string
	// Air is the radio link between programs, where the devices named by
	// Serials are reached instead of Addrs: the load opens a stream to
	// each and connects as a central. Run does not close it.
	Air *air.Link
	// Serials are the serial numbers of the devices on Air.
	Serials []string
	// ConnInterval is the connection interval the load asks for on Air
	// (7.5 ms to 4 s, a multiple of 1.25 ms); each device grants the
	// nearest within its connection parameters. Zero leaves the choice to
	// the device: its slowest (50 ms by default), which sends the fewest
	// messages.
	ConnInterval time.Duration
	// PassKey is the pass key to pair with on Air, for devices that ask
	// for one; "" pairs with none.
	PassKey string
	// Subscribe lists the paths to subscribe to on every device, such as
	// /Meas/IMU6/52, /Meas/ECG/125 and /Meas/HR.
	Subscribe []string
	// Duration is how long to measure after the subscriptions are made.
	Duration time.Duration
	// Interval is how often Progress is called; 5 s when zero.
	Interval time.Duration
	// MinDelivery is the least share of expected samples (0..1) every stream
	// must deliver; Run returns ErrBelowThreshold under it.
	MinDelivery float64
	// Connect is how many devices are connected at a time; 64 when zero.
	Connect int
	// Timeout bounds each device's handshake and subscriptions; 10 s when
	// zero (a busy fleet answers slowly while it starts).
	Timeout time.Duration
	// Progress receives a report every Interval; nil for none.
	Progress func(Report)
	// Faults, when set, makes the load a client that copes with field
	// faults and reports them (faults.go); nil leaves a connection that
	// ends ended.
	Faults *FaultOptions
	// PID is the process of the devices' program, on this computer, whose
	// CPU time and memory the reports give per device (Report.Process).
	// Zero finds it: the process that listens on the first device's TCP
	// address when that is this computer's, or the process the first
	// device's program names on the radio link when it runs on this
	// computer. Negative measures none.
	PID int
}

// Grace is how long ago a sample must have been due to be expected: a
// notification leaves when its last sample is taken, and takes a moment to
// arrive.
const Grace = 200 * time.Millisecond

// Errors of Run.
var (
	// ErrBelowThreshold is a stream that delivered less than MinDelivery.
	ErrBelowThreshold = errors.New("delivery below threshold")
	// ErrDevices is a device that could not be connected or subscribed to.
	ErrDevices = errors.New("devices not reached")
	// ErrPairing is a device on the radio link that asks for its pass key
	// before it answers, reached without Config.PassKey.
	ErrPairing = errors.New("the device asks to be paired with its pass key before it answers")
	// ErrConfig is a configuration Run, Addrs, Serials, FleetAddrs or
	// PathRate refuses before reaching any device; the error says which
	// setting and what is allowed.
	ErrConfig = errors.New("bad configuration")
)

// Report is what the load measured so far.
type Report struct {
	Elapsed  time.Duration // since the subscriptions were made
	Duration time.Duration // of the whole measurement
	Final    bool          // the summary at the end
	Devices  int           // asked for
	Reached  int           // connected and subscribed to every path
	Failed   int           // could not be connected or subscribed to
	Closed   int           // connections that ended during the measurement
	// Messages counts the data messages of the radio link received from
	// the devices since their subscriptions were made (a message carries
	// what one connection event carried); 0 over TCP.
	Messages int64
	// MessageRate is Messages per device-second.
	MessageRate float64
	Streams     []StreamReport
	// Faults is what the load saw of the devices' faults, and what was
	// injected; nil without Config.Faults.
	Faults *FaultReport
	// Process is what the devices' program cost, per device (of
	// Devices), when the load knows its process (Config.PID); nil
	// otherwise. Self is what the load's own process cost, likewise.
	Process, Self *ProcessReport
	// LoadAverage is the computer's load average over 1, 5 and 15
	// minutes, and Idle the share of its processors' time that went
	// unused since the subscriptions were made (-1 when not known): how
	// busy the machine was that these figures come from. A machine
	// without idle time gives each process less than it asks for.
	LoadAverage [3]float64
	Idle        float64
}

// StreamReport is the report of one path over all devices.
type StreamReport struct {
	Path          string
	Rate          float64 // samples per second, 0 for the heart rate
	Notifications int64
	Samples       int64   // delivered (for the heart rate: beats)
	Expected      float64 // samples (for the heart rate: ms of beats)
	Delivered     float64 // share of Expected, 0..1 (1 when nothing was expected)
	Lost          int64   // samples in gaps between timestamps
	Disorder      int64   // notifications whose timestamp went back or was missing
	Late50        time.Duration
	Late90        time.Duration
	Late99        time.Duration
	LateMax       time.Duration
}

// probe is one connected device under measure. Its notifications are
// counted on the goroutine that reads its connection, as they are read: no
// copy, queue or goroutine per subscription, so that the load costs little
// beside the fleet it measures.
type probe struct {
	name   string // for errors: "device at <address>" or "device <serial>"
	addr   string // TCP address, "" on the radio link
	serial string // serial number, "" when the address does not say
	// conn, air, subs and subscribed change when the load connects again
	// or subscribes again (Config.Faults), under mu
	conn       *client.Conn
	air        *air.Stream // nil over TCP
	subs       []*client.Subscription
	subscribed []time.Time // when each path was subscribed to last
	msgs0      uint64      // data messages of air received before the subscriptions were made
	msgsDone   int64       // data messages of streams that ended (Config.Faults)
	since      time.Time   // when its subscriptions were made
	mu         sync.Mutex
	tally      []tally // one per path
}

// Run connects to the devices, subscribes, measures for cfg.Duration (or
// until ctx ends) and returns the final report. The error is
// ErrBelowThreshold when a stream delivered less than cfg.MinDelivery, or
// ErrDevices when a device could not be reached; the report is complete
// either way.
func Run(ctx context.Context, cfg Config) (Report, error) {
	n := len(cfg.Addrs)
	switch {
	case cfg.Air != nil && n > 0:
		return Report{}, fmt.Errorf("load: %w: TCP addresses and the radio link both given; the devices are reached one way", ErrConfig)
	case cfg.Air != nil:
		n = len(cfg.Serials)
	case len(cfg.Serials) > 0:
		return Report{}, fmt.Errorf("load: %w: serial numbers without the radio link to reach them on", ErrConfig)
	}
	if n == 0 {
		return Report{}, fmt.Errorf("load: %w: no devices to connect to", ErrConfig)
	}
	if _, err := radio.IntervalUnits(cfg.ConnInterval); err != nil {
		return Report{}, fmt.Errorf("load: %w: connection interval %v: 7.5 ms to 4 s in steps of 1.25 ms, or 0 for the device's slowest", ErrConfig, cfg.ConnInterval)
	}
	if len(cfg.Subscribe) == 0 {
		return Report{}, fmt.Errorf("load: %w: no paths to subscribe to", ErrConfig)
	}
	if cfg.MinDelivery < 0 || cfg.MinDelivery > 1 {
		return Report{}, fmt.Errorf("load: %w: least delivery %v: a share from 0 to 1", ErrConfig, cfg.MinDelivery)
	}
	if cfg.Faults != nil {
		o := *cfg.Faults
		if err := o.check(); err != nil {
			return Report{}, err
		}
		cfg.Faults = &o
	}
	rates := make([]float64, len(cfg.Subscribe))
	for i, p := range cfg.Subscribe {
		r, err := PathRate(p)
		if err != nil {
			return Report{}, err
		}
		rates[i] = r
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Connect <= 0 {
		cfg.Connect = 64
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// the load's one phone, with the connection interval cfg asks for
	central := &link.Central{Address: Address, Name: Name, Interval: cfg.ConnInterval, Timeout: cfg.Timeout, ReadBuffer: readBuffer, Push: true}
	devs := make([]*probe, n)
	hists := make([]*histogram, len(cfg.Subscribe))
	for i := range hists {
		hists[i] = new(histogram)
	}
	var failed int
	var firstErr error
	var connectWG sync.WaitGroup
	var mu sync.Mutex
	add := func(i int, d *probe, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		devs[i] = d
	}
	// the first device alone, which tells where its program runs; the
	// program's memory then is that of idle devices
	dev, self, err := startMeters(cfg)
	if err != nil {
		return Report{}, err
	}
	d, err := connect(ctx, cfg, central, 0, rates, hists)
	add(0, d, err)
	if dev == nil && cfg.PID == 0 && d != nil && d.air != nil {
		if p := d.air.Process(); p.PID > 0 && p.Host == hostName {
			dev, _ = newMeter(p.PID)
		}
	}
	slots := make(chan struct{}, cfg.Connect)
	for i := 1; i < n; i++ {
		slots <- struct{}{}
		connectWG.Go(func() {
			defer func() { <-slots }()
			d, err := connect(ctx, cfg, central, i, rates, hists)
			add(i, d, err)
		})
	}
	connectWG.Wait()
	var live []*probe
	for _, d := range devs {
		if d != nil {
			live = append(live, d)
		}
	}
	var keep *keeper
	if cfg.Faults != nil {
		keep = newKeeper(cfg, central, live)
		kctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { keep.run(kctx); close(done) }()
		defer func() { stop(); <-done }()
	}
	defer func() {
		for _, d := range live {
			d.mu.Lock()
			c := d.conn
			d.mu.Unlock()
			c.Close()
		}
	}()

	start := time.Now()
	dev.begin(start)
	self.begin(start)
	busy0, idle0, cpuErr := MachineCPU()
	report := func(final bool) Report {
		now := time.Now()
		r := collect(cfg, live, rates, hists, now)
		r.Elapsed, r.Duration, r.Final = now.Sub(start), cfg.Duration, final
		r.Devices, r.Failed = n, failed
		if keep != nil {
			r.Faults = keep.report()
		}
		r.Process, r.Self = dev.report(n, now), self.report(n, now)
		r.LoadAverage, _ = LoadAverage()
		r.Idle = -1
		if busy, idle, err := MachineCPU(); err == nil && cpuErr == nil && busy+idle > busy0+idle0 {
			r.Idle = float64(idle-idle0) / float64(busy+idle-busy0-idle0)
		}
		return r
	}
	ticker := time.NewTicker(cfg.Interval)
	defer ticker.Stop()
	end := time.NewTimer(cfg.Duration)
	defer end.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end.C:
			break loop
		case <-ticker.C:
			if cfg.Progress != nil {
				cfg.Progress(report(false))
			}
		}
	}
	r := report(true)
	err = r.Check(cfg.MinDelivery)
	if failed > 0 {
		err = errors.Join(fmt.Errorf("%w: %d of %d (first: %w)", ErrDevices, failed, n, firstErr), err)
	}
	return r, err
}

// Check returns ErrBelowThreshold, naming the stream, for every stream that
// delivered less than the share least (0..1), and ErrDevices when a
// connection ended during the measurement.
func (r Report) Check(least float64) error {
	var err error
	for _, s := range r.Streams {
		if s.Delivered < least {
			err = errors.Join(err, fmt.Errorf("%w: %s delivered %.3f%%, the least allowed is %.3f%%",
				ErrBelowThreshold, s.Path, 100*s.Delivered, 100*least))
		}
	}
	if r.Closed > 0 && r.Faults == nil { // under faults, connections end and are made again
		err = errors.Join(err, fmt.Errorf("%w: %d connections ended during the measurement", ErrDevices, r.Closed))
	}
	return err
}

// readBuffer is the read buffer of a device's connection: room for ten
// notifications of IMU6 at 52 Hz, the largest of the usual streams.
const readBuffer = 4096

// connect reaches device i of cfg and subscribes to every path, counting
// the lateness of each path's notifications in its histogram.
func connect(ctx context.Context, cfg Config, central *link.Central, i int, rates []float64, hists []*histogram) (*probe, error) {
	var d *probe
	var err error
	if cfg.Air != nil {
		d, err = connectAir(ctx, cfg, central, cfg.Serials[i])
	} else {
		d, err = connectTCP(ctx, cfg, cfg.Addrs[i])
	}
	if err != nil {
		return nil, err
	}
	d.tally = make([]tally, len(cfg.Subscribe))
	d.subs = make([]*client.Subscription, len(cfg.Subscribe))
	for i, p := range cfg.Subscribe {
		d.tally[i] = newTally(p, rates[i], hists[i])
		sub, env, err := d.conn.SubscribeFunc(ctx, p, d.counter(i))
		d.subs[i] = sub
		if err != nil {
			err = fmt.Errorf("subscribe %s: %w", p, err) // the connection's errors name the device
		} else if !env.OK() {
			err = fmt.Errorf("%s: subscribe %s: %s", d.name, p, env.Refusal())
		}
		if err != nil {
			d.conn.Close()
			return nil, err
		}
	}
	d.since = time.Now()
	d.subscribed = slices.Repeat([]time.Time{d.since}, len(cfg.Subscribe))
	if d.air != nil {
		_, d.msgs0 = d.air.Messages()
	}
	return d, nil
}

// connectTCP dials a device over TCP.
func connectTCP(ctx context.Context, cfg Config, addr string) (*probe, error) {
	c, err := client.Dial(ctx, "TCP"+addr, &client.Options{Name: Name, Timeout: cfg.Timeout, ReadBuffer: readBuffer})
	if err != nil {
		return nil, fmt.Errorf("device at %s: %w", addr, err)
	}
	p := &probe{name: "device at " + addr, addr: addr, conn: c}
	if _, serial, ok := strings.Cut(addr, "/"); ok {
		p.serial = serial
	}
	return p, nil
}

// counter returns the function that counts the notifications of path i
// in the probe's tally.
func (d *probe) counter(i int) func(payload []byte, at time.Time) {
	return func(payload []byte, at time.Time) {
		d.mu.Lock()
		d.tally[i].add(payload, at)
		d.mu.Unlock()
	}
}

// dial connects again to the device of p, as connect does, without
// subscribing.
func dial(ctx context.Context, cfg Config, central *link.Central, p *probe) (*probe, error) {
	if cfg.Air != nil {
		return connectAir(ctx, cfg, central, p.serial)
	}
	return connectTCP(ctx, cfg, p.addr)
}

// Name names the load in its hello and as a BLE central.
const Name = "senseboard load"

// Address is the load's BLE address as a central on the radio link.
const Address = "C0:4C:4F:41:44:00"

// connectAir opens a stream of the radio link to a device, scans it, and
// connects as the load's central; it pairs with cfg's pass key when there
// is one, and refuses a device that asks for its pass key when there is
// none (ErrPairing).
func connectAir(ctx context.Context, cfg Config, central *link.Central, serial string) (*probe, error) {
	name := "device " + serial
	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	s, err := cfg.Air.Dial(dctx, serial)
	if err != nil {
		return nil, err // it names the device
	}
	c, err := central.Open(ctx, name, s, link.Handlers{})
	if err != nil {
		return nil, err // it names the device
	}
	d := &probe{name: name, serial: serial, conn: c.Conn, air: s}
	m, err := c.Scan(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("scan: %w", err) // the link names the device
	}
	if a, _ := radio.ParseAdvertisement(m.Adv, m.ScanResp); a.PassKey && cfg.PassKey == "" {
		c.Close()
		return nil, fmt.Errorf("%s: %w", name, ErrPairing)
	}
	_, err = c.Connect(ctx)
	if err == nil && cfg.PassKey != "" {
		_, err = c.Pair(ctx, cfg.PassKey, false)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("connect: %w", err) // the link names the device
	}
	return d, nil
}

// collect sums the tallies of every device per path, with the paths'
// lateness histograms.
func collect(cfg Config, devs []*probe, rates []float64, hists []*histogram, now time.Time) Report {
	var r Report
	var secs float64 // device-seconds on the radio link
	r.Streams = make([]StreamReport, len(cfg.Subscribe))
	for i, p := range cfg.Subscribe {
		r.Streams[i] = StreamReport{Path: p, Rate: rates[i]}
	}
	for _, d := range devs {
		d.mu.Lock()
		conn, stream, msgs0, done := d.conn, d.air, d.msgs0, d.msgsDone
		d.mu.Unlock()
		select {
		case <-conn.Done():
			r.Closed++
		default:
			r.Reached++
		}
		if stream != nil {
			_, got := stream.Messages()
			r.Messages += done + int64(got-msgs0)
			secs += now.Sub(d.since).Seconds()
		}
		d.mu.Lock()
		for i := range d.tally {
			t, s := &d.tally[i], &r.Streams[i]
			s.Notifications += t.notifications
			s.Samples += t.samples
			s.Lost += t.lost
			s.Disorder += t.disorder
			s.Expected += t.expected(d.since, now, Grace)
			s.Delivered += min(t.delivered(), t.expected(d.since, now, Grace))
		}
		d.mu.Unlock()
	}
	if secs > 0 {
		r.MessageRate = float64(r.Messages) / secs
	}
	for i := range r.Streams {
		s := &r.Streams[i]
		if s.Expected > 0 {
			s.Delivered /= s.Expected
		} else {
			s.Delivered = 1
		}
		h := hists[i]
		s.Late50, s.Late90, s.Late99, s.LateMax = h.quantile(0.5), h.quantile(0.9), h.quantile(0.99), time.Duration(h.max.Load())
	}
	return r
}

// PathRate returns the sample rate a path subscribes to: the number its
// path ends in (/Meas/ECG/125, /Meas/IMU6/52, /Meas/Acc/104/...), or 0 for
// the heart rate (/Meas/HR), which is counted by its RR intervals.
func PathRate(path string) (float64, error) {
	if !strings.HasPrefix(path, "/") {
		return 0, fmt.Errorf("load: %w: path %q: a resource path such as /Meas/ECG/125", ErrConfig, path)
	}
	if strings.EqualFold(strings.TrimSuffix(path, "/"), "/Meas/HR") {
		return 0, nil
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if r, err := strconv.Atoi(parts[i]); err == nil && r > 0 {
			return float64(r), nil
		}
	}
	return 0, fmt.Errorf("load: %w: path %q: no sample rate in it; streams with a rate (/Meas/ECG/125, /Meas/IMU6/52) and /Meas/HR can be measured", ErrConfig, path)
}

// Addrs returns n addresses on consecutive ports from first, the way
// `senseboard run --devices n` listens.
func Addrs(first string, n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("load: %w: %d devices: at least 1", ErrConfig, n)
	}
	host, port, err := net.SplitHostPort(first)
	if err != nil {
		return nil, fmt.Errorf("load: %w: address %q: %w", ErrConfig, first, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p+n-1 > math.MaxUint16 {
		return nil, fmt.Errorf("load: %w: address %q: %d devices need ports from %s to %d, within 1..65535", ErrConfig, first, n, port, p+n-1)
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = net.JoinHostPort(host, strconv.Itoa(p+i))
	}
	return addrs, nil
}

// Serials returns n serial numbers counting up from first and keeping its
// width, as senseboard run --devices n numbers its devices.
func Serials(first string, n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("load: %w: %d devices: at least 1", ErrConfig, n)
	}
	serials := make([]string, n)
	for i := range serials {
		s, err := profile.SerialAt(first, i)
		if err != nil {
			return nil, fmt.Errorf("load: %w: first serial %q: a number, such as 000123, to count up from: %w", ErrConfig, first, err)
		}
		serials[i] = s
	}
	return serials, nil
}

// FleetAddrs returns the addresses of n devices on one fleet port (senseboard
// run --listen-fleet), with serial numbers counting up from first and
// keeping its width, as senseboard run --devices n numbers them.
func FleetAddrs(fleet, first string, n int) ([]string, error) {
	if _, _, err := net.SplitHostPort(fleet); err != nil {
		return nil, fmt.Errorf("load: %w: fleet address %q: %w", ErrConfig, fleet, err)
	}
	addrs, err := Serials(first, n)
	if err != nil {
		return nil, err
	}
	for i := range addrs {
		addrs[i] = fleet + "/" + addrs[i]
	}
	return addrs, nil
}

// Print writes a report: one line per stream, under a progress line.
func Print(w io.Writer, r Report) {
	const width = 20
	done := width
	if r.Duration > 0 && !r.Final {
		done = int(math.Min(1, r.Elapsed.Seconds()/r.Duration.Seconds()) * width)
	}
	head := "summary"
	if !r.Final {
		head = "[" + strings.Repeat("#", done) + strings.Repeat(".", width-done) + "]"
	}
	fmt.Fprintf(w, "%s %s/%s  devices %d/%d", head, r.Elapsed.Round(time.Second), r.Duration, r.Reached, r.Devices)
	if r.Failed > 0 {
		fmt.Fprintf(w, "  not reached %d", r.Failed)
	}
	if r.Closed > 0 {
		fmt.Fprintf(w, "  closed %d", r.Closed)
	}
	if r.Messages > 0 {
		fmt.Fprintf(w, "  radio messages %d (%.1f per device-second)", r.Messages, r.MessageRate)
	}
	fmt.Fprintln(w)
	for _, s := range r.Streams {
		if s.Expected > 0 {
			fmt.Fprintf(w, "  %-16s delivered %7.3f%%  notifications %d", s.Path, 100*s.Delivered, s.Notifications)
		} else {
			fmt.Fprintf(w, "  %-16s nothing expected yet  notifications %d", s.Path, s.Notifications)
		}
		if s.Rate == 0 {
			fmt.Fprintf(w, "  beats %d\n", s.Samples)
			continue
		}
		fmt.Fprintf(w, "  lost %d  late p50 %s p90 %s p99 %s max %s", s.Lost, ms(s.Late50), ms(s.Late90), ms(s.Late99), ms(s.LateMax))
		if s.Disorder > 0 {
			fmt.Fprintf(w, "  out of order %d", s.Disorder)
		}
		fmt.Fprintln(w)
	}
	if r.Faults != nil {
		printFaults(w, r.Faults)
	}
	printProcesses(w, r)
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + "ms" }

// printProcesses writes what the devices' program and the load cost, per
// device, and the machine's load average.
func printProcesses(w io.Writer, r Report) {
	if p := r.Process; p != nil {
		fmt.Fprintf(w, "  device program (PID %d): CPU %.3f ms per device-second (%s in %s), memory %s, %s per device",
			p.PID, float64(p.PerDeviceSecond)/1e6, p.CPU.Round(10*time.Millisecond), r.Elapsed.Round(time.Second), size(p.RSS), size(p.PerDevice))
		if p.IdleRSS > 0 {
			fmt.Fprintf(w, " (%s before the load connected: %s per idle device)", size(p.IdleRSS), size(p.IdlePerDevice))
		}
		fmt.Fprintln(w)
	}
	var parts []string
	if p := r.Self; p != nil {
		parts = append(parts, fmt.Sprintf("load program: CPU %.3f ms per device-second, memory %s", float64(p.PerDeviceSecond)/1e6, size(p.RSS)))
	}
	if la := r.LoadAverage; la != [3]float64{} {
		parts = append(parts, fmt.Sprintf("machine load average %.2f %.2f %.2f", la[0], la[1], la[2]))
	}
	if r.Idle >= 0 && r.Elapsed > 0 {
		parts = append(parts, fmt.Sprintf("processors idle %.0f%%", 100*r.Idle))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  %s\n", strings.Join(parts, "; "))
	}
}

// size writes a number of bytes in KiB, MiB or GiB.
func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
}
