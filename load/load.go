// Package load puts a fleet of devices under a measured load: it connects to
// every device with the Go client, subscribes to the same streams on each,
// and counts what arrives, to tell what a machine (or a deployment) holds.
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
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/client"
)

// Config says what load to put on which devices.
type Config struct {
	// Addrs are the TCP addresses of the devices: host:port of a device's
	// own port, or host:port/serial of a device on a fleet's port.
	Addrs []string
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
	Streams  []StreamReport
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

// device is one connected device. Its notifications are counted on the
// goroutine that reads its connection, as they are read: no copy, queue
// or goroutine per subscription, so that the load costs little beside the
// fleet it measures.
type device struct {
	addr  string
	conn  *client.Conn
	since time.Time // when its subscriptions were made
	mu    sync.Mutex
	tally []tally // one per path
}

// Run connects to the devices, subscribes, measures for cfg.Duration (or
// until ctx ends) and returns the final report. The error is
// ErrBelowThreshold when a stream delivered less than cfg.MinDelivery, or
// ErrDevices when a device could not be reached; the report is complete
// either way.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if len(cfg.Addrs) == 0 {
		return Report{}, errors.New("load: no devices to connect to")
	}
	if len(cfg.Subscribe) == 0 {
		return Report{}, errors.New("load: no paths to subscribe to")
	}
	if cfg.MinDelivery < 0 || cfg.MinDelivery > 1 {
		return Report{}, fmt.Errorf("load: least delivery %v: a share from 0 to 1", cfg.MinDelivery)
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

	devs := make([]*device, len(cfg.Addrs))
	hists := make([]*histogram, len(cfg.Subscribe))
	for i := range hists {
		hists[i] = new(histogram)
	}
	var failed int
	var firstErr error
	var connectWG sync.WaitGroup
	var mu sync.Mutex
	slots := make(chan struct{}, cfg.Connect)
	for i, addr := range cfg.Addrs {
		slots <- struct{}{}
		connectWG.Go(func() {
			defer func() { <-slots }()
			d, err := connect(ctx, addr, cfg.Subscribe, rates, hists, cfg.Timeout)
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
		})
	}
	connectWG.Wait()
	var live []*device
	for _, d := range devs {
		if d != nil {
			live = append(live, d)
		}
	}
	defer func() {
		for _, d := range live {
			d.conn.Close()
		}
	}()

	start := time.Now()
	report := func(final bool) Report {
		r := collect(cfg, live, rates, hists, time.Now())
		r.Elapsed, r.Duration, r.Final = time.Since(start), cfg.Duration, final
		r.Devices, r.Failed = len(cfg.Addrs), failed
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
	err := r.Check(cfg.MinDelivery)
	if failed > 0 {
		err = errors.Join(fmt.Errorf("%w: %d of %d (first: %w)", ErrDevices, failed, len(cfg.Addrs), firstErr), err)
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
	if r.Closed > 0 {
		err = errors.Join(err, fmt.Errorf("%w: %d connections ended during the measurement", ErrDevices, r.Closed))
	}
	return err
}

// readBuffer is the read buffer of a device's connection: room for ten
// notifications of IMU6 at 52 Hz, the largest of the usual streams.
const readBuffer = 4096

// connect dials one device and subscribes to every path, counting the
// lateness of each path's notifications in its histogram.
func connect(ctx context.Context, addr string, paths []string, rates []float64, hists []*histogram, timeout time.Duration) (*device, error) {
	c, err := client.Dial(ctx, "TCP"+addr, &client.Options{Name: "senseboard load", Timeout: timeout, ReadBuffer: readBuffer})
	if err != nil {
		return nil, fmt.Errorf("device at %s: %w", addr, err)
	}
	d := &device{addr: addr, conn: c, tally: make([]tally, len(paths))}
	for i, p := range paths {
		d.tally[i].rate, d.tally[i].late = rates[i], hists[i]
		_, env, err := c.SubscribeFunc(ctx, p, func(payload []byte, at time.Time) {
			d.mu.Lock()
			d.tally[i].add(payload, at)
			d.mu.Unlock()
		})
		if err == nil && !env.OK() {
			err = fmt.Errorf("status %d %s", env.Response, env.Content)
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("device at %s: subscribe %s: %w", addr, p, err)
		}
	}
	d.since = time.Now()
	return d, nil
}

// collect sums the tallies of every device per path, with the paths'
// lateness histograms.
func collect(cfg Config, devs []*device, rates []float64, hists []*histogram, now time.Time) Report {
	var r Report
	r.Streams = make([]StreamReport, len(cfg.Subscribe))
	for i, p := range cfg.Subscribe {
		r.Streams[i] = StreamReport{Path: p, Rate: rates[i]}
	}
	for _, d := range devs {
		select {
		case <-d.conn.Done():
			r.Closed++
		default:
			r.Reached++
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
		return 0, fmt.Errorf("load: path %q: a resource path such as /Meas/ECG/125", path)
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
	return 0, fmt.Errorf("load: path %q: no sample rate in it; streams with a rate (/Meas/ECG/125, /Meas/IMU6/52) and /Meas/HR can be measured", path)
}

// Addrs returns n addresses on consecutive ports from first, the way
// `senseboard run --devices n` listens.
func Addrs(first string, n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("load: %d devices: at least 1", n)
	}
	host, port, err := net.SplitHostPort(first)
	if err != nil {
		return nil, fmt.Errorf("load: address %q: %w", first, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p+n-1 > math.MaxUint16 {
		return nil, fmt.Errorf("load: address %q: %d devices need ports from %s to %d, within 1..65535", first, n, port, p+n-1)
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = net.JoinHostPort(host, strconv.Itoa(p+i))
	}
	return addrs, nil
}

// FleetAddrs returns the addresses of n devices on one fleet port (senseboard
// run --listen-fleet), with serial numbers counting up from first and
// keeping its width, as senseboard run --devices n numbers them.
func FleetAddrs(fleet, first string, n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("load: %d devices: at least 1", n)
	}
	if _, _, err := net.SplitHostPort(fleet); err != nil {
		return nil, fmt.Errorf("load: fleet address %q: %w", fleet, err)
	}
	s, err := strconv.ParseUint(first, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("load: first serial %q: a number, such as 000123, to count up from: %w", first, err)
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("%s/%0*d", fleet, len(first), s+uint64(i))
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
	fmt.Fprintln(w)
	for _, s := range r.Streams {
		fmt.Fprintf(w, "  %-16s delivered %7.3f%%  notifications %d", s.Path, 100*s.Delivered, s.Notifications)
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
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + "ms" }
