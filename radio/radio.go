// Package radio owns the device's BLE link layer: the advertising data
// (built and parsed into an Advertisement), the peripheral's link state
// (advertising with its timeout, the one connection and its handle,
// connection parameters), pairing and bonding under the bonding policy with
// the static pass key and the one bond, the non-volatile settings of all
// this (ble.json), the central side (Central), and the GATT layer: the
// device's services with their characteristics, which a central writes to
// and gets notifications of, within its connection's ATT MTU. The
// heart-rate and serial services are built in (Config.HRS, Config.NUS);
// modules add theirs with AddService.
//
// A Central connects to the Peripheral and gets a Conn. The radio does not
// reach into the device: whoever serves the link (an in-process central,
// the transport's radio session) asks the Conn whether a request may pass
// (Admit: "pair first") and then makes it with the Conn's resource client,
// so that its subscriptions end with the connection.
//
// What the radio knows of its device when it is made (its clock, its
// names, its services, its throughput model) comes in through Config; what
// it asks of the running device (whether it runs its application, the
// time since the reset) and what happens on the link go through the Host
// that the /Comm/Ble resources (package provider/ble) attach, which turn
// what happens into notifications.
//
// Advertising starts with the peripheral and at every reset. A connection
// stops it; when the connection ends the device advertises again, unless
// advertising was stopped in the meantime. AdvSettings.Timeout stops
// advertising after that many seconds (0: never).
package radio

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/clock"
	"senseboard/noise"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/resource"
)

// Config is what the radio knows of its device when it is made.
type Config struct {
	// Address is the device's BLE address, XX:XX:XX:XX:XX:XX.
	Address string
	// Serial and Product name the device in the default scan response and
	// in errors.
	Serial, Product string
	// HRS and NUS say the device runs the heart-rate and serial services.
	HRS, NUS bool
	// Advertisement is the layout of the default advertisement:
	// profile.AdvertisementMovesense for FamilyAdvertisement, anything
	// else for DefaultAdvertisement.
	Advertisement string
	// Seed makes the long-term keys repeatable.
	Seed uint64
	// Clock runs the advertising timeout and the connection events; nil
	// means real time, on a clock of the peripheral's own, which Close
	// closes.
	Clock clock.Clock
	// Airtime is the throughput model of the connections (see
	// airtime.go); its zero value is off (every notification leaves at
	// once). Enabled, it must pass its Validate (New refuses it
	// otherwise). Each connection keeps a copy from its start.
	Airtime profile.Airtime
	// NotificationSize returns the bytes a notification's content takes
	// over the air, for the subscriptions made over a connection; -1 (or a
	// nil function) counts it as one notification of the connection's
	// full MTU.
	NotificationSize func(content any) int
	// Stamps reads and changes notifications' timestamps, for
	// interference that hides its gaps (SetInterference); nil leaves them.
	Stamps Stamper
}

// Host is the running device as its radio sees it: what the radio asks of
// it, and what it hears of the link. Connected, Disconnected,
// HRSNotifications and NUSWritten run without the radio's lock held and
// may call the radio; OnAir, SinceReset and Logf may run with it held and
// must not.
type Host interface {
	// OnAir reports whether the device runs its application: only then
	// does it advertise and accept connections.
	OnAir() bool
	// UpdateMode reports whether the device is in firmware update mode:
	// it advertises as its bootloader then (DFUAdvertisement).
	UpdateMode() bool
	// SinceReset returns the time since the device's last reset, for the
	// bonding recovery time.
	SinceReset() time.Duration
	// Logf logs what happens on the link.
	Logf(format string, a ...any)
	// Connected and Disconnected hear of each connection's start and end.
	Connected(*Conn)
	Disconnected(*Conn)
	// HRSNotifications hears the central switch heart-rate notifications,
	// and their end with the connection.
	HRSNotifications(on bool)
	// NUSWritten receives what the central writes to the serial service.
	NUSWritten(data []byte)
}

// Peripheral is the device's side of the link.
type Peripheral struct {
	cfg  Config
	host atomic.Pointer[attached] // nil until Attach
	st   *nvm.Var[Settings]       // changed under mu
	clk  clock.Clock              // cfg.Clock, or the wall clock
	own  *clock.Real              // clk when the peripheral made it, for Close to close

	mu          sync.Mutex
	advertising bool
	advWanted   bool // advertise again after the connection ends
	advTimer    clock.Timer
	conn        *Conn
	nextHandle  uint16
	preferred   ConnParams
	keys        uint64     // long-term keys made so far
	services    []*Service // GATT
	stuck       *stuck     // unreachable (Stick), nil when not

	interf interferencePtr // connection events that carry nothing
}

// New returns the peripheral with its non-volatile settings (see
// OpenSettings) and starts advertising. A throughput model whose settings
// break their limits is refused with an error wrapping
// profile.ErrAirtime.
func New(cfg Config, st *nvm.Var[Settings]) (*Peripheral, error) {
	if err := cfg.Airtime.Validate(); err != nil {
		return nil, fmt.Errorf("radio of device %s: %w", cfg.Serial, err)
	}
	p := &Peripheral{cfg: cfg, st: st, clk: cfg.Clock, preferred: DefaultConnParams}
	if p.clk == nil {
		p.own = clock.NewReal()
		p.clk = p.own
	}
	if cfg.HRS {
		p.services = append(p.services, p.hrsService())
	}
	if cfg.NUS {
		p.services = append(p.services, p.nusService())
	}
	p.mu.Lock()
	p.startAdvertising()
	p.mu.Unlock()
	return p, nil
}

// attached holds the Host of Attach.
type attached struct{ Host }

// Attach makes h the peripheral's host, in place of the one it had. Until
// a host is attached the peripheral is always on the air, a long time
// past its last reset, and tells nobody what happens on the link.
func (p *Peripheral) Attach(h Host) { p.host.Store(&attached{h}) }

// hosted returns the attached host, or nil.
func (p *Peripheral) hosted() Host {
	if a := p.host.Load(); a != nil {
		return a.Host
	}
	return nil
}

// Address returns the device's BLE address.
func (p *Peripheral) Address() string { return p.cfg.Address }

// Serial returns the device's serial number.
func (p *Peripheral) Serial() string { return p.cfg.Serial }

func (p *Peripheral) onAir() bool {
	h := p.hosted()
	return h == nil || h.OnAir()
}

func (p *Peripheral) sinceReset() time.Duration {
	h := p.hosted()
	if h == nil {
		return time.Duration(1<<63 - 1)
	}
	return h.SinceReset()
}

func (p *Peripheral) logf(format string, a ...any) {
	if h := p.hosted(); h != nil {
		h.Logf(format, a...)
	}
}

// Connect connects central c to the device. Notifications of the
// subscriptions made with the connection's client go to sink, as far as
// the throughput model lets them (Config.Airtime). It fails
// with ErrNotAdvertising when the device does not advertise (or is off)
// and with ErrBusy while another central is connected; a central that asks
// for an interval outside the link layer's range is refused with
// ErrInterval.
func (p *Peripheral) Connect(c *Central, sink resource.Sink) (*Conn, error) {
	if i := c.Interval; i != 0 && (i < ConnIntervalMin || i > ConnIntervalMax) {
		return nil, fmt.Errorf("%w: %d is outside %d..%d (units of 1.25 ms)", ErrInterval, i, ConnIntervalMin, ConnIntervalMax)
	}
	p.mu.Lock()
	switch {
	case p.updateMode():
		p.mu.Unlock()
		return nil, fmt.Errorf("device %s %w", p.cfg.Serial, ErrUpdateMode)
	case !p.advertising || !p.onAir():
		p.mu.Unlock()
		return nil, fmt.Errorf("device %s %w", p.cfg.Serial, ErrNotAdvertising)
	case p.stuck != nil:
		p.mu.Unlock()
		return nil, fmt.Errorf("device %s: %w", p.cfg.Serial, ErrConnFailed)
	case p.conn != nil:
		p.mu.Unlock()
		return nil, fmt.Errorf("device %s %w", p.cfg.Serial, ErrBusy)
	}
	conn := &Conn{
		p:         p,
		central:   c,
		handle:    p.nextHandle,
		attached:  make(chan struct{}),
		params:    p.preferred,
		mtu:       DefaultMTU,
		notifying: map[UUID]bool{},
		done:      make(chan struct{}),
		airMTU:    DefaultMTU,
	}
	conn.out.init()
	conn.ev.Init(p.clk, conn.event)
	conn.air.cfg = p.cfg.Airtime
	conn.air.interf = &p.interf
	conn.air.key = noise.Key(p.cfg.Seed, streamAir, uint64(conn.handle))
	conn.air.start(p.airNow(), Duration(Grant(conn.params, c.Interval)))
	conn.sink = sink
	_, conn.sinkHolds = sink.(resource.HoldingSink)
	if conn.air.cfg.Enabled {
		sink = airSink{conn}
	} else {
		sink = lostSink{conn}
	}
	conn.client = resource.NewClient("ble:"+c.Address, sink)
	p.nextHandle++
	p.conn = conn
	p.stopAdvertising()
	services := append([]*Service(nil), p.services...)
	p.mu.Unlock()
	conn.attach(services)
	close(conn.attached)
	if h := p.hosted(); h != nil {
		h.Connected(conn)
	}
	p.logf("BLE: %s connected (handle %d)", c.Address, conn.handle)
	return conn, nil
}

// Current returns the connection, or nil when no central is connected.
func (p *Peripheral) Current() *Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn
}

// Connected reports whether a central is connected.
func (p *Peripheral) Connected() bool { return p.Current() != nil }

// IsAdvertising reports whether the device advertises.
func (p *Peripheral) IsAdvertising() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.advertising
}

// Errors of StartAdvertising.
var (
	ErrAdvertising = errors.New("already advertising")
	ErrConnected   = errors.New("a central is connected and the device supports one connection; it advertises again when the central disconnects")
)

// StartAdvertising starts advertising, with the timeout of the settings.
func (p *Peripheral) StartAdvertising() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.advertising:
		return ErrAdvertising
	case p.conn != nil:
		return ErrConnected
	}
	p.startAdvertising()
	return nil
}

// Close closes the peripheral's own clock, when its Config gave none: its
// advertising timeout and connection events run no more. It waits for the
// clock's call under way, and must not be called from one. A peripheral
// on a clock it was given has nothing to close.
func (p *Peripheral) Close() {
	if p.own != nil {
		p.own.Close()
	}
}

// StopAdvertising stops advertising, also after the connection ends.
func (p *Peripheral) StopAdvertising() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopAdvertising()
	p.advWanted = false
}

// startAdvertising starts advertising and its timeout; p.mu is held. A
// silent stuck device only notes that it wants to.
func (p *Peripheral) startAdvertising() {
	p.advWanted = true
	if p.stuck != nil && !p.stuck.refuse {
		return
	}
	p.advertising = true
	if p.advTimer != nil {
		p.advTimer.Stop()
		p.advTimer = nil
	}
	if t := p.st.Get().Adv.Timeout; t > 0 {
		var timer clock.Timer
		timer = p.clk.AfterFunc(time.Duration(t)*time.Second, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.advTimer == timer {
				p.stopAdvertising()
				p.advWanted = false
				p.logf("BLE: advertising timed out after %d s", t)
			}
		})
		p.advTimer = timer
	}
}

// stopAdvertising stops advertising; p.mu is held.
func (p *Peripheral) stopAdvertising() {
	p.advertising = false
	if p.advTimer != nil {
		p.advTimer.Stop()
		p.advTimer = nil
	}
}

// Advertising returns the packets the device advertises, and false when it
// does not advertise.
func (p *Peripheral) Advertising() (Packets, bool) {
	if p.updateMode() {
		a := DFUAdvertisement()
		return a.Packets(), true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.advertising || !p.onAir() {
		return Packets{}, false
	}
	st := p.st.Get()
	layout := DefaultAdvertisement
	if p.cfg.Advertisement == profile.AdvertisementMovesense {
		layout = FamilyAdvertisement
	}
	a := layout(p.cfg.Product, p.cfg.Serial, st.PassKey != nil, st.Bond != nil, p.cfg.HRS)
	out := a.Packets()
	if st.Adv.AdvPacket != nil {
		out.Adv, _ = checkPacket("AdvPacket", st.Adv.AdvPacket)
	}
	if st.Adv.ScanRespPacket != nil {
		out.ScanResp, _ = checkPacket("ScanRespPacket", st.Adv.ScanRespPacket)
	}
	return out, true
}

// AdvSettings returns the advertising settings.
func (p *Peripheral) AdvSettings() AdvSettings {
	return p.st.Get().Adv
}

// SetAdvSettings validates the advertising settings and keeps them; while
// the device advertises, the new timeout counts from now.
func (p *Peripheral) SetAdvSettings(s AdvSettings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.saveLocked(func(st *Settings) { st.Adv = s }); err != nil {
		return err
	}
	if p.advertising {
		p.stopAdvertising()
		p.startAdvertising()
	}
	return nil
}

// SetPreferredParams sets the connection parameters of later connections.
func (p *Peripheral) SetPreferredParams(cp ConnParams) error {
	if err := cp.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.preferred = cp
	return nil
}

// Bond returns the bond the device keeps.
func (p *Peripheral) Bond() (Bond, bool) {
	if b := p.st.Get().Bond; b != nil {
		return *b, true
	}
	return Bond{}, false
}

// DeleteBond forgets the bond.
func (p *Peripheral) DeleteBond() error {
	return p.save(func(s *Settings) { s.Bond = nil })
}

// SetPassKey sets the static pass key that pairing then requires.
func (p *Peripheral) SetPassKey(pin string) error {
	if err := CheckPassKey(pin); err != nil {
		return err
	}
	return p.save(func(s *Settings) { s.PassKey = &pin })
}

// ClearPassKey removes the pass key: pairing is just-works again.
func (p *Peripheral) ClearPassKey() error {
	return p.save(func(s *Settings) { s.PassKey = nil })
}

// Security returns the bonding policy and the recovery time in seconds.
func (p *Peripheral) Security() (Policy, uint32) {
	st := p.st.Get()
	return st.Policy, st.RecoveryTime
}

// SetSecurity sets the bonding policy, and the recovery time when it is
// not nil.
func (p *Peripheral) SetSecurity(policy Policy, recovery *uint32) error {
	if !policy.Valid() {
		return fmt.Errorf("bonding policy %d is not a policy (0..3)", policy)
	}
	return p.save(func(s *Settings) {
		s.Policy = policy
		if recovery != nil {
			s.RecoveryTime = *recovery
		}
	})
}

// save changes the non-volatile settings durably, or not at all.
func (p *Peripheral) save(change func(*Settings)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.saveLocked(change)
}

// saveLocked changes the settings durably, or not at all; p.mu is held.
// Settings that fail Validate are refused with its error; a write that
// fails wraps nvm.ErrNotStored.
func (p *Peripheral) saveLocked(change func(*Settings)) error {
	return p.st.Update(func(s *Settings) error { change(s); return nil })
}

// Reset drops the connection, after what waits for the air has gone out
// (the device switches after its answer), restores the preferred
// connection parameters and starts advertising; the settings are
// non-volatile.
func (p *Peripheral) Reset() {
	p.drop(fmt.Errorf("%w: the device reset", ErrDisconnected))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.preferred = DefaultConnParams
	p.startAdvertising()
}

// lostSink is the sink of a connection's subscriptions without the
// throughput model: what a lost link (Drop) would carry is lost.
type lostSink struct{ c *Conn }

func (s lostSink) Notify(n resource.Notification) bool {
	if s.c.lost.Load() || !s.c.sink.Notify(n) {
		return false
	}
	s.c.out.handed()
	s.c.out.wakeReader()
	return true
}

func (s lostSink) Ended(sub *resource.Subscription, reason resource.EndReason) {
	s.c.subEnded(sub, reason)
}

// subEnded hands the end of a subscription made over the connection to the
// transport's sink, and wakes the reader. It is called under none of the
// connection's locks.
func (c *Conn) subEnded(sub *resource.Subscription, reason resource.EndReason) {
	c.sink.Ended(sub, reason)
	c.out.handed()
	c.out.wakeReader()
}

// PowerOff drops the connection, after what waits for the air has gone
// out, and stops the radio.
func (p *Peripheral) PowerOff() {
	p.drop(fmt.Errorf("%w: the device turned off", ErrDisconnected))
	p.StopAdvertising()
}

func (p *Peripheral) drop(reason error) {
	if c := p.Current(); c != nil {
		c.flush()
		c.end(reason)
	}
}

// newKey makes a long-term key from the device's seed; p.mu is held.
func (p *Peripheral) newKey() string {
	p.keys++
	var b [16]byte
	k := noise.Key(p.cfg.Seed, 0x6B6579, p.keys)
	for i := range b {
		b[i] = byte(noise.Mix(k + uint64(i)))
	}
	return hex.EncodeToString(b[:])
}
