package radio

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"senseboard/resource"
)

// The link's faults (docs/faults.md): a connection lost as at a
// supervision timeout (Drop), a device that stays unreachable after it
// (Stick), connection events that carry nothing (SetInterference), and the
// bootloader's identity in firmware update mode (DFUAdvertisement).

// DFUName is the local name the family's bootloader advertises in
// firmware update mode.
const DFUName = "DfuTarg"

// DFUServiceUUID is the 16-bit UUID of the secure DFU service the
// bootloader advertises.
const DFUServiceUUID = 0xFE59

// DFUAdvertisement is what the bootloader advertises in firmware update
// mode: discoverable, the DFU service, and DFUName.
func DFUAdvertisement() Advertisement {
	return Advertisement{Flags: DiscoverableFlags, Services16: []uint16{DFUServiceUUID}, Name: DFUName}
}

// UpdateMode reports whether the packets are a bootloader's in firmware
// update mode: they list the DFU service.
func (a *Advertisement) UpdateMode() bool {
	for _, u := range a.Services16 {
		if u == DFUServiceUUID {
			return true
		}
	}
	return false
}

// DFUAddress returns the address the bootloader advertises with: the
// device's address (XX:XX:XX:XX:XX:XX) plus one, as the family's
// bootloaders take it.
func DFUAddress(addr string) (string, error) {
	var b [6]byte
	if _, err := fmt.Sscanf(addr, "%02X:%02X:%02X:%02X:%02X:%02X", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]); err != nil {
		return "", fmt.Errorf("BLE address %q: %w", addr, err)
	}
	for i := 5; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			break
		}
	}
	return fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X", b[0], b[1], b[2], b[3], b[4], b[5]), nil
}

// AdvAddress returns the address the device advertises with: its own, or
// the bootloader's (DFUAddress) in firmware update mode.
func (p *Peripheral) AdvAddress() string {
	if p.updateMode() {
		if dfu, err := DFUAddress(p.cfg.Address); err == nil {
			return dfu
		}
	}
	return p.cfg.Address
}

func (p *Peripheral) updateMode() bool {
	h := p.hosted()
	return h != nil && h.UpdateMode()
}

// Errors of the link's faults.
var (
	// ErrSupervisionTimeout is the end of a connection whose link was
	// lost: neither side heard the other for the supervision timeout.
	ErrSupervisionTimeout = errors.New("supervision timeout")
	// ErrLinkLost is a request over a connection whose link is lost and
	// whose supervision timeout has not passed: nothing gets through.
	ErrLinkLost = errors.New("the link is lost; the connection ends at its supervision timeout")
	// ErrConnFailed is a connection a stuck device refuses.
	ErrConnFailed = errors.New("connection failed to be established")
	// ErrUpdateMode is a connection to a device in firmware update mode.
	ErrUpdateMode = errors.New("is in firmware update mode (DfuTarg); its bootloader takes a firmware update client's connection only")
)

// Drop loses the link of the connection as at a supervision timeout: from
// now nothing gets through either way, and when the connection's
// supervision timeout has passed it ends (ErrSupervisionTimeout) and the
// device advertises again delay later. It reports false when no central
// is connected. advertising, when not nil, runs once the device advertises
// again, or when it will not (it was told to stop, reset, or is stuck);
// its argument says whether it does.
func (p *Peripheral) Drop(delay time.Duration, advertising func(bool)) bool {
	p.mu.Lock()
	c := p.conn
	if c == nil || c.lost.Load() {
		p.mu.Unlock()
		return false
	}
	c.lost.Store(true)
	c.lostDelay, c.lostDone = delay, advertising
	sup := time.Duration(c.params.SupTimeout) * 10 * time.Millisecond
	p.mu.Unlock()
	p.logf("BLE: the link to %s is lost", c.central.Address)
	p.clk.AfterFunc(sup, func() { c.end(fmt.Errorf("%w: %w", ErrDisconnected, ErrSupervisionTimeout)) })
	return true
}

// Lost reports whether the connection's link is lost (Drop) and its
// supervision timeout has not passed.
func (c *Conn) Lost() bool { return c.lost.Load() && c.Err() == nil }

// readvertise starts advertising after a lost link's delay, unless the
// device was told not to, is stuck or off, or a central connected; p.mu is
// not held.
func (p *Peripheral) readvertise(delay time.Duration, done func(bool)) {
	p.clk.AfterFunc(delay, func() {
		p.mu.Lock()
		ok := p.advWanted && p.conn == nil && p.onAir() && (p.stuck == nil || p.stuck.refuse)
		if ok && !p.advertising {
			p.startAdvertising()
		}
		p.mu.Unlock()
		if done != nil {
			done(ok)
		}
	})
}

// stuck is a device that stays unreachable: silent (it does not
// advertise) or refusing connections.
type stuck struct {
	refuse  bool
	central string // the central connected when it stuck, "" for none
	power   uint32 // that central's Bluetooth power cycles then
	ended   func() // runs when that central's Bluetooth restart ends it
}

// Stick drops the connection as Drop does (advertising after no delay)
// and makes the device unreachable until Unstick: it does not advertise,
// or with refuse it advertises but refuses every connection
// (ErrConnFailed). When the central that was connected turns its
// Bluetooth off and on (Central.Power grows) and scans or connects again,
// the device is reachable again and restarted runs.
func (p *Peripheral) Stick(refuse bool, restarted func()) {
	p.mu.Lock()
	st := &stuck{refuse: refuse, ended: restarted}
	if c := p.conn; c != nil {
		st.central, st.power = c.central.Address, c.central.Power
	}
	p.stuck = st
	if !refuse {
		p.advertising = false
		if p.advTimer != nil {
			p.advTimer.Stop()
			p.advTimer = nil
		}
	}
	p.mu.Unlock()
	p.Drop(0, nil)
}

// Unstick makes a stuck device reachable again: it advertises, unless it
// was told not to, or a central is connected.
func (p *Peripheral) Unstick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unstickLocked()
}

func (p *Peripheral) unstickLocked() {
	if p.stuck == nil {
		return
	}
	p.stuck = nil
	if p.advWanted && p.conn == nil && p.onAir() && !p.advertising {
		p.startAdvertising()
	}
}

// Heard tells the device of a central that scans or connects, with the
// count of its Bluetooth's power cycles: the central that a stuck device
// was connected to, heard after a power cycle, unsticks it.
func (p *Peripheral) Heard(address string, power uint32) {
	p.mu.Lock()
	st := p.stuck
	restarted := st != nil && st.central != "" && st.central == address && power > st.power
	if restarted {
		p.unstickLocked()
	}
	p.mu.Unlock()
	if restarted {
		p.logf("BLE: %s turned its Bluetooth off and on; the device is reachable again", address)
		if st.ended != nil {
			st.ended()
		}
	}
}

// Stuck reports whether the device is stuck (Stick).
func (p *Peripheral) Stuck() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stuck != nil
}

// interference is a share of connection events that carry nothing, from
// a time until another (0: until it ends).
type interference struct {
	share       float64
	hideGap     bool
	from, until time.Duration
}

// SetInterference makes a share (0..1) of the connection events of every
// connection carry nothing from now, until EndInterference: the
// throughput model's MissedEvents rises to it, so that a stream beyond
// what the rest carry loses notifications whole. With hideGap the
// timestamps of a subscription's notifications after a loss go on as if
// nothing was lost, as older firmware stamped them. It fails when the
// throughput model is off.
func (p *Peripheral) SetInterference(share float64, hideGap bool) error {
	if !p.cfg.Airtime.Enabled {
		return errors.New("interference needs the throughput model (profile ble.airtime), which is off")
	}
	p.interf.Store(&interference{share: share, hideGap: hideGap, from: p.airNow()})
	return nil
}

// EndInterference ends the interference from now: what waits for the air
// leaves at the next connection event.
func (p *Peripheral) EndInterference() {
	if in := p.interf.Load(); in != nil && in.until == 0 {
		end := *in
		end.until = max(p.airNow(), in.from+1)
		p.interf.Store(&end)
		if c := p.Current(); c != nil {
			c.rearm() // its timer is for an event past those the interference emptied
		}
	}
}

// at returns the share of empty events at time t under the interference,
// and whether it hides its gaps; base is the model's own share.
func (in *interference) at(t time.Duration, base float64) (float64, bool) {
	if in == nil || t < in.from || in.until != 0 && t >= in.until {
		return base, false
	}
	return max(base, in.share), in.hideGap
}

// Stamper reads and changes the timestamps of notifications' content, for
// interference that hides its gaps (content.Timestamp and
// content.WithTimestamp).
type Stamper interface {
	Timestamp(content any) (uint32, bool)
	WithTimestamp(content any, ts uint32) any
}

// restamp is a subscription's timestamps under interference that hides
// its gaps: after a loss, what its notifications go out with goes on from
// the last one by the usual step, the smallest seen between two of its
// notifications (sent or lost).
type restamp struct {
	prevIn, prevOut uint32 // of the last notification sent
	seen            uint32 // the last notification's, sent or lost
	step            uint32
	lost            bool // notifications were lost since the last one sent
}

// restampLocked returns the restamp state of sub under interference that
// hides its gaps (hide), noting the timestamp ts of its notification;
// nil when there is none to keep. c.airMu is held.
func (c *Conn) restampLocked(sub *resource.Subscription, content any, hide bool) (*restamp, uint32) {
	st := c.stamps[sub]
	if st == nil && !hide || c.p.cfg.Stamps == nil || sub == nil {
		return nil, 0
	}
	ts, ok := c.p.cfg.Stamps.Timestamp(content)
	if !ok {
		return nil, 0
	}
	if st == nil {
		if c.stamps == nil {
			c.stamps = map[*resource.Subscription]*restamp{}
		}
		st = &restamp{prevIn: ts, prevOut: ts, seen: ts}
		c.stamps[sub] = st
		return st, ts
	}
	if d := ts - st.seen; d > 0 && (st.step == 0 || d < st.step) {
		st.step = d
	}
	st.seen = ts
	return st, ts
}

// stampLocked returns content with the timestamp it goes out with under
// interference that hides its gaps; c.airMu is held.
func (c *Conn) stampLocked(sub *resource.Subscription, content any, hide bool) any {
	st, ts := c.restampLocked(sub, content, hide)
	if st == nil || ts == st.prevIn && st.prevOut == ts {
		return content
	}
	out := st.prevOut + (ts - st.prevIn)
	if st.lost && st.step > 0 {
		out = st.prevOut + st.step
	}
	st.prevIn, st.prevOut, st.lost = ts, out, false
	if out == ts {
		return content
	}
	return c.p.cfg.Stamps.WithTimestamp(content, out)
}

// lostLocked notes a subscription's notification lost under interference
// that hides its gaps; c.airMu is held.
func (c *Conn) lostLocked(sub *resource.Subscription, content any, hide bool) {
	if st, _ := c.restampLocked(sub, content, hide); st != nil {
		st.lost = true
	}
}

// interferencePtr is the peripheral's interference, which its
// connections' models read.
type interferencePtr = atomic.Pointer[interference]
