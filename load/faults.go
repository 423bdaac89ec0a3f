package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"senseboard/client"
	"senseboard/fault"
	"senseboard/link"
	"senseboard/resource"
)

// FaultOptions make the load a client that copes with the devices' field
// faults (docs/faults.md), as a backend's client must: it connects again
// to a device whose connection ended, subscribes again to a stream that
// went silent while its connection lasted (a stall), and resets a device
// that answers 429 to everything (an exhausted request pool); it counts
// what it saw, next to what was injected.
type FaultOptions struct {
	// StallAfter is how long a stream may be silent, while its connection
	// lasts, before the load takes it for stalled; 3 s when zero. The
	// silence is counted in the load's own running time: time its process
	// did not run (stopped, or starved of processor time) does not count,
	// so that a pause of the load is not taken for one of the device.
	StallAfter time.Duration
	// Truth reads the ground truth of a device's faults, by serial number
	// (the faults.jsonl that senseboard run --faults keeps in each
	// device's state directory); nil reports nothing injected.
	Truth func(serial string) ([]fault.Record, error)
	// PhoneOff is the load's own faults, on its phone: phoneoff entries
	// of a plan, timed from the start of the measurement (random ones
	// drawn from Seed), each turning the load's Bluetooth off (every
	// connection drops at once, nothing connects) and on again.
	PhoneOff fault.Plan
	Seed     uint64
}

// FaultReport is what the load saw of the devices' faults, and what was
// injected.
type FaultReport struct {
	// Stalls counts streams silent for StallAfter while their connection
	// lasted, each then subscribed to again; the device's answer to that
	// (any answer, 429 too) shows its link was up, so that a lost link,
	// silent until its supervision timeout ends the connection, is not
	// counted.
	Stalls int64
	// Reconnects counts connections made again after one ended, and
	// ReconnectP50 and ReconnectMax say how long the devices were out of
	// reach: from the end to the streams subscribed again.
	Reconnects                 int64
	ReconnectP50, ReconnectMax time.Duration
	// TooMany counts answers 429, and Resets the devices the load reset
	// for them (PUT /System/Mode 5).
	TooMany, Resets int64
	// PhoneOffs counts the times the load turned its Bluetooth off and on.
	PhoneOffs int64
	// Injected counts the faults of the devices' ground truth by name,
	// the load's phoneoffs included; nil without FaultOptions.Truth.
	Injected map[string]int
	// TruthErr says why a device's ground truth could not be read.
	TruthErr string
}

// checkPhoneOff refuses a plan of the load's phone with other faults
// than phoneoff.
func (o *FaultOptions) check() error {
	for _, e := range o.PhoneOff {
		if e.Fault.Kind != fault.PhoneOff {
			return fmt.Errorf("load: fault plan: %s is the device's; the load carries out phoneoff, on its own phone (give the others to senseboard run --faults)", e.Fault.Kind)
		}
	}
	if o.StallAfter <= 0 {
		o.StallAfter = 3 * time.Second
	}
	return nil
}

// errBluetoothOff ends the load's connections when its Bluetooth turns off.
var errBluetoothOff = errors.New("the load's Bluetooth turned off")

// keeper keeps the load's connections to the devices under faults.
type keeper struct {
	cfg     Config
	o       *FaultOptions
	central *link.Central
	probes  []*probe
	start   time.Time

	// run's goroutine's alone: the time of the last look, and the
	// silence of each probe's streams (silent)
	looked time.Time
	quiet  map[*probe][]time.Duration

	mu         sync.Mutex
	btOffUntil time.Time
	busy       map[*probe]bool // being connected again or resubscribed
	rep        FaultReport
	outages    []time.Duration
	wg         sync.WaitGroup
}

func newKeeper(cfg Config, central *link.Central, probes []*probe) *keeper {
	k := &keeper{cfg: cfg, o: cfg.Faults, central: central, probes: probes, start: time.Now(), busy: map[*probe]bool{}, quiet: map[*probe][]time.Duration{}}
	k.looked = k.start
	for _, p := range probes {
		k.quiet[p] = make([]time.Duration, len(cfg.Subscribe))
	}
	return k
}

// lookEvery is how often the keeper looks at the connections and the
// streams, and the most silence a look adds.
const lookEvery = 100 * time.Millisecond

// run watches the connections and the streams, and carries out the
// load's own phoneoffs, until ctx ends; it waits for the reconnections it
// started.
func (k *keeper) run(ctx context.Context) {
	defer k.wg.Wait()
	sched := k.o.PhoneOff.Schedule(k.o.Seed)
	next, more := sched.Next()
	t := time.NewTicker(lookEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			if more && now.Sub(k.start) >= next.At {
				k.phoneOff(next.Fault.For)
				next, more = sched.Next()
			}
			for _, p := range k.probes {
				k.look(ctx, p, now)
			}
			k.looked = now
		}
	}
}

// phoneOff turns the load's Bluetooth off for d: every connection drops.
func (k *keeper) phoneOff(d time.Duration) {
	k.mu.Lock()
	k.btOffUntil = time.Now().Add(d)
	k.rep.PhoneOffs++
	k.mu.Unlock()
	k.central.PowerCycle() // the devices hear of it at the next scan
	for _, p := range k.probes {
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		c.CloseFor(fmt.Errorf("%s: %w: %w", p.name, errBluetoothOff, client.ErrClosed))
	}
}

// look checks a device: a connection that ended is made again, a stream
// silent too long (silent) is subscribed to again. While the load's
// Bluetooth is off a device's streams' silence starts anew; while the
// device is being connected again or resubscribed, it is not counted, and
// each stream's counts on once it is done: a stream's silence starts anew
// when that stream is subscribed to again, not when another of the
// device's is.
func (k *keeper) look(ctx context.Context, p *probe, now time.Time) {
	k.mu.Lock()
	busy, off := k.busy[p], now.Before(k.btOffUntil)
	k.mu.Unlock()
	if off {
		clear(k.quiet[p])
	}
	if busy || off {
		return
	}
	silent := k.silent(p, now)
	p.mu.Lock()
	conn := p.conn
	p.mu.Unlock()
	ended := false
	select {
	case <-conn.Done():
		ended = true
	default:
	}
	if !ended && len(silent) == 0 {
		return
	}
	if ended {
		clear(k.quiet[p])
	}
	for _, i := range silent {
		k.quiet[p][i] = 0
	}
	k.mu.Lock()
	k.busy[p] = true
	k.mu.Unlock()
	k.wg.Go(func() {
		defer func() {
			k.mu.Lock()
			delete(k.busy, p)
			k.mu.Unlock()
		}()
		if ended {
			k.reconnect(ctx, p)
		} else {
			k.resubscribe(ctx, p, conn, silent)
		}
	})
}

// silent returns the streams of p silent for StallAfter, as a look at now
// finds them. A stream heard since the last look (k.looked) has been
// silent since it was heard; one not heard has been silent for as long
// again as since the last look, but at most lookEvery: a look that comes
// later is one the load's process was stopped or starved for, and the
// notifications of that time may still wait to be read. So a stream is
// silent for StallAfter only when the keeper looked for that long, and
// heard nothing.
func (k *keeper) silent(p *probe, now time.Time) []int {
	step := min(now.Sub(k.looked), lookEvery)
	quiet := k.quiet[p]
	p.mu.Lock()
	defer p.mu.Unlock()
	var silent []int
	for i := range p.tally {
		last := p.tally[i].last
		if last.Before(p.subscribed[i]) {
			last = p.subscribed[i]
		}
		if last.After(k.looked) {
			quiet[i] = max(min(now.Sub(last), step), 0) // 0: heard after now
		} else {
			quiet[i] += step
		}
		if quiet[i] > k.o.StallAfter {
			silent = append(silent, i)
		}
	}
	return silent
}

// reconnect connects to a device again, until it succeeds or ctx ends,
// and counts how long the device was out of reach.
func (k *keeper) reconnect(ctx context.Context, p *probe) {
	t0 := time.Now()
	for ctx.Err() == nil {
		k.mu.Lock()
		wait := time.Until(k.btOffUntil)
		k.mu.Unlock()
		if wait <= 0 {
			np, err := dial(ctx, k.cfg, k.central, p)
			if err == nil {
				if err = k.subscribeAll(ctx, p, np); err == nil {
					k.mu.Lock()
					k.rep.Reconnects++
					k.outages = append(k.outages, time.Since(t0))
					k.mu.Unlock()
					return
				}
				np.conn.Close()
			}
			wait = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// subscribeAll subscribes to every path over a new connection to p's
// device and makes it p's; a device that answers 429 is reset.
func (k *keeper) subscribeAll(ctx context.Context, p *probe, np *probe) error {
	subs := make([]*client.Subscription, len(k.cfg.Subscribe))
	for i, path := range k.cfg.Subscribe {
		s, err := k.subscribe(ctx, p, np.conn, i, path)
		if err != nil {
			return err
		}
		subs[i] = s
	}
	p.mu.Lock()
	if p.air != nil { // the radio link's messages of the stream that ended
		_, got := p.air.Messages()
		p.msgsDone += int64(got - p.msgs0)
		_, p.msgs0 = np.air.Messages()
	}
	p.conn, p.air, p.subs = np.conn, np.air, subs
	for i := range p.subscribed {
		p.subscribed[i] = time.Now()
	}
	p.mu.Unlock()
	return nil
}

// resubscribe subscribes again to the silent streams of p. An answer of
// the device, to an unsubscription or a subscription, counts them as
// stalled: its link was up while they were silent. A lost link answers
// nothing until the connection ends.
func (k *keeper) resubscribe(ctx context.Context, p *probe, conn *client.Conn, silent []int) {
	answered := false
	defer func() {
		if answered {
			k.mu.Lock()
			k.rep.Stalls += int64(len(silent))
			k.mu.Unlock()
		}
	}()
	for _, i := range silent {
		p.mu.Lock()
		old := p.subs[i]
		p.mu.Unlock()
		uctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
		_, uerr := old.Unsubscribe(uctx)
		cancel()
		s, err := k.subscribe(ctx, p, conn, i, k.cfg.Subscribe[i])
		answered = answered || uerr == nil || err == nil || errors.Is(err, errRefused)
		if err != nil {
			return // the connection ends, or the device resets: look sees to it
		}
		p.mu.Lock()
		p.subs[i], p.subscribed[i] = s, time.Now()
		p.mu.Unlock()
	}
}

// errRefused is a subscription the device answered with an error status.
var errRefused = errors.New("refused")

// subscribe subscribes to path i over conn, its notifications counted in
// p's tally; a device that answers 429 is reset, and the error says so.
// An error status is errRefused.
func (k *keeper) subscribe(ctx context.Context, p *probe, conn *client.Conn, i int, path string) (*client.Subscription, error) {
	sctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	s, env, err := conn.SubscribeFunc(sctx, path, p.counter(i))
	if err != nil {
		return nil, err
	}
	if env.Response == int(resource.StatusTooManyRequests) {
		k.mu.Lock()
		k.rep.TooMany++
		k.rep.Resets++
		k.mu.Unlock()
		conn.Do(sctx, resource.Put, "/System/Mode", resource.Uint8(5))
		return nil, fmt.Errorf("%s: subscribe %s: %w with 429; the device was reset", p.name, path, errRefused)
	}
	if !env.OK() {
		return nil, fmt.Errorf("%s: subscribe %s: %w with %s", p.name, path, errRefused, env.Refusal())
	}
	return s, nil
}

// report returns what the keeper saw, with the devices' ground truth.
func (k *keeper) report() *FaultReport {
	k.mu.Lock()
	r := k.rep
	out := slices.Clone(k.outages)
	k.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	if len(out) > 0 {
		r.ReconnectP50, r.ReconnectMax = out[len(out)/2], out[len(out)-1]
	}
	if k.o.Truth != nil {
		r.Injected = map[string]int{}
		for _, p := range k.probes {
			recs, err := k.o.Truth(p.serial)
			if err != nil && r.TruthErr == "" {
				r.TruthErr = err.Error()
			}
			for _, rec := range recs {
				r.Injected[rec.Fault.Kind.String()]++
			}
		}
		if r.PhoneOffs > 0 {
			r.Injected[fault.PhoneOff.String()] += int(r.PhoneOffs)
		}
	}
	return &r
}

// printFaults writes the fault report: what the load saw, and what was
// injected.
func printFaults(w io.Writer, f *FaultReport) {
	fmt.Fprintf(w, "  faults seen     stalls %d  reconnects %d", f.Stalls, f.Reconnects)
	if f.Reconnects > 0 {
		fmt.Fprintf(w, " (out of reach p50 %s max %s)", ms(f.ReconnectP50), ms(f.ReconnectMax))
	}
	fmt.Fprintf(w, "  429s %d  resets %d  phoneoffs %d\n", f.TooMany, f.Resets, f.PhoneOffs)
	if f.Injected == nil {
		return
	}
	var names []string
	for _, k := range fault.Kinds() {
		if n := f.Injected[k.String()]; n > 0 {
			names = append(names, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	fmt.Fprintf(w, "  faults injected %s", strings.Join(names, "  "))
	if f.TruthErr != "" {
		fmt.Fprintf(w, "  (%s)", f.TruthErr)
	}
	fmt.Fprintln(w)
}
