package radio

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/clock"
	"senseboard/resource"
)

// HRSData is a heart-rate measurement of the heart-rate service.
type HRSData struct {
	Average float32  `json:"average"`
	RRData  []uint16 `json:"rrData"`
}

// MaxNUSWrite is the most bytes one write to the serial service carries.
const MaxNUSWrite = 244

// Conn is the connection between a central and the device. It lasts until
// Done is closed; Err then says why it ended.
//
// Requests from the central go to the device only when Admit allows them;
// whoever serves the link makes them with Client, so that the
// subscriptions they make end with the connection.
type Conn struct {
	p       *Peripheral
	central *Central
	handle  uint16
	client  *resource.Client
	out     outbox // what the device sends the central over its services

	// GATT: set by attach before attached is closed
	services []*Service
	handlers []Handler // by service
	attached chan struct{}

	// guarded by p.mu
	params    ConnParams
	mtu       int
	notifying map[UUID]bool // characteristics with notifications on
	encrypted bool
	ended     bool   // out is closed
	slab      []byte // notification data is carved from it
	lostPart  bool   // a part of the stream notification being handed out was lost: its later parts go with it

	// the throughput model, guarded by airMu (taken after p.mu); outMu
	// orders the hand-out of what connection events carry (taken before
	// p.mu and airMu)
	sink      resource.Sink // the transport's, for the subscriptions' notifications
	sinkHolds bool          // sink releases the Recyclable content it takes (a resource.HoldingSink, such as a Queue)
	airMu     sync.Mutex
	air       airQueue
	airMTU    int
	waiters   []func()   // WhenRoom callbacks
	ev        clock.Call // the next connection event (event), kept for reuse
	evOn      bool       // ev is armed, for evAt: something waits
	evAt      time.Duration
	airEnd    bool // the connection ended: nothing more is admitted or armed
	outMu     sync.Mutex
	spare     []airItem // the hand-out's buffer

	// a lost link (Drop): nothing gets through until the supervision
	// timeout ends the connection; then the device advertises again
	// lostDelay later and lostDone hears of it
	lost      atomic.Bool
	lostDelay time.Duration
	lostDone  func(bool)
	stamps    map[*resource.Subscription]*restamp // under airMu: interference that hides its gaps

	once   sync.Once
	done   chan struct{}
	reason error
}

// Central returns the central at the other end.
func (c *Conn) Central() *Central { return c.central }

// Handle returns the connection handle.
func (c *Conn) Handle() uint16 { return c.handle }

// Client returns the device client of the connection, whose subscriptions
// end with it.
func (c *Conn) Client() *resource.Client { return c.client }

// Done is closed when the connection ends.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, or nil while it lasts.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.reason
	default:
		return nil
	}
}

// Params returns the connection's parameters.
func (c *Conn) Params() ConnParams {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return c.params
}

// SetParams changes the connection's parameters.
func (c *Conn) SetParams(cp ConnParams) error {
	if err := cp.Validate(); err != nil {
		return err
	}
	now := c.p.airNow()
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.params = cp
	c.airMu.Lock()
	c.air.run(now)
	c.air.start(now, Duration(Grant(cp, c.central.Interval)))
	c.stopEventLocked()
	c.armLocked(now)
	c.airMu.Unlock()
	return nil
}

// Encrypted reports whether the link is encrypted (paired or bonded).
func (c *Conn) Encrypted() bool {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return c.encrypted
}

// Admit reports whether the central's requests may go to the device: the
// connection lasts, and with a pass key set the link is encrypted
// (ErrNotPaired otherwise).
func (c *Conn) Admit() error {
	if err := c.Err(); err != nil {
		return err
	}
	if c.lost.Load() {
		return ErrLinkLost
	}
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st.Get().PassKey != nil && !c.encrypted {
		return ErrNotPaired
	}
	return nil
}

// Disconnect ends the connection from the central's side.
func (c *Conn) Disconnect() { c.end(fmt.Errorf("%w: the central disconnected", ErrDisconnected)) }

// Drop ends the connection from the device's side; why says why.
func (c *Conn) Drop(why string) { c.end(fmt.Errorf("%w: %s", ErrDisconnected, why)) }

// end closes the connection: subscriptions made over it end, what the
// device sends the central closes (the reader is woken, see WakeWith),
// the services and the peripheral hear of it, and the device advertises
// again unless told not to.
func (c *Conn) end(reason error) {
	c.once.Do(func() {
		p := c.p
		p.mu.Lock()
		lost := c.lost.Load()
		if p.conn == c {
			p.conn = nil
			if p.advWanted && p.onAir() && !lost {
				p.startAdvertising()
			}
		}
		hrsWasOn := c.notifying[HeartRateMeasurement]
		clear(c.notifying)
		c.ended = true
		c.out.close()
		c.airMu.Lock()
		c.airEnd = true
		waiters := c.waiters
		c.waiters = nil
		c.stopEventLocked()
		c.releaseWaitingLocked()
		c.airMu.Unlock()
		p.mu.Unlock()
		c.reason = reason
		close(c.done)
		for _, f := range waiters {
			f()
		}
		c.client.Close()
		c.out.handed() // the reader hears of the end, now that Err tells it
		c.out.wakeReader()
		<-c.attached
		c.detach()
		if h := p.hosted(); h != nil {
			h.Disconnected(c)
			if hrsWasOn {
				h.HRSNotifications(false)
			}
		}
		p.logf("BLE: %s disconnected (%v)", c.central.Address, reason)
		if lost {
			p.readvertise(c.lostDelay, c.lostDone)
		}
	})
}

// Pair pairs over the connection, with the device's pass key when it has
// one, and bonds when bonding is set: the device then keeps the central's
// keys (one bond at a time, within the bonding policy) and so does the
// central. With policy BondingSameMac a central with another address than
// the bonded one sees a successful pairing while the device keeps its old
// keys.
func (c *Conn) Pair(passKey string, bonding bool) error {
	if err := c.Err(); err != nil {
		return err
	}
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st.Get()
	if pin := st.PassKey; pin != nil {
		switch {
		case passKey == "":
			return ErrNoPassKey
		case passKey != *pin:
			return ErrPassKey
		}
	}
	if !bonding {
		c.encrypted = true
		return nil
	}
	recovery := p.sinceReset() < time.Duration(st.RecoveryTime)*time.Second
	old := st.Bond
	same := old != nil && old.Address == c.central.Address
	store := true
	switch st.Policy {
	case BondingDisabled:
		if !recovery && !same {
			return &PolicyError{st.Policy}
		}
	case BondingOnce:
		if !recovery && old != nil {
			return &PolicyError{st.Policy}
		}
	case BondingSameMac:
		if !recovery && old != nil && !same {
			store = false // quiet: the central believes it bonded
		}
	}
	key := p.newKey()
	if store {
		if err := p.saveLocked(func(s *Settings) { s.Bond = &Bond{Address: c.central.Address, Key: key} }); err != nil {
			return err
		}
	}
	c.central.Remember(p.cfg.Address, key)
	c.encrypted = true
	return nil
}

// Encrypt encrypts the link with the keys of an earlier bond, as a bonded
// central does when it reconnects.
func (c *Conn) Encrypt() error {
	if err := c.Err(); err != nil {
		return err
	}
	p := c.p
	key, ok := c.central.Key(p.cfg.Address)
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.st.Get().Bond
	if !ok || b == nil || b.Address != c.central.Address || b.Key != key {
		return ErrUnknownKeys
	}
	c.encrypted = true
	return nil
}

// SetHRSNotifications switches the central's heart-rate notifications.
func (c *Conn) SetHRSNotifications(on bool) error {
	if err := c.Err(); err != nil {
		return err
	}
	if !c.p.cfg.HRS {
		return fmt.Errorf("HRS: %w", ErrNoService)
	}
	return c.SetNotify(HeartRateMeasurement, on)
}

// SendHRS sends a heart-rate measurement to the central when it has
// notifications on: it takes it (Take) as it is, among the heart-rate
// measurements, and as the service's Heart Rate Measurement among the
// notifications. Up to 64 measurements wait. A central that does not read
// loses it, as over the air, and so does one whose connection has no room
// for it (see Airtime).
func (c *Conn) SendHRS(d HRSData) {
	m := AppendHeartRateMeasurement(nil, d)
	now := c.p.airNow()
	defer c.out.wakeReader() // after the unlock
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if !c.notifying[HeartRateMeasurement] || c.ended || c.lost.Load() {
		return
	}
	c.send(now, airItem{kind: outHRS, hrs: d, data: m, note: len(m) <= c.mtu-3})
}

// WriteNUS writes data from the central to the device's serial service.
func (c *Conn) WriteNUS(data []byte) error {
	if err := c.Err(); err != nil {
		return err
	}
	p := c.p
	if !p.cfg.NUS {
		return fmt.Errorf("NUS: %w", ErrNoService)
	}
	if len(data) == 0 || len(data) > MaxNUSWrite {
		return fmt.Errorf("NUS: a write carries 1 to %d bytes", MaxNUSWrite)
	}
	return c.Write(NUSRX, data)
}

// SendNUS sends data of the serial service to the central: it takes it
// (Take) among the serial data, up to 64 packets waiting, and as a
// notification of TX when the central has them on. A central that does
// not read loses it, and so does one whose connection has no room for it
// (see Airtime).
func (c *Conn) SendNUS(b []byte) {
	now := c.p.airNow()
	defer c.out.wakeReader() // after the unlock
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.ended || c.lost.Load() {
		return
	}
	c.send(now, airItem{kind: outNUS, data: b, note: c.notifying[NUSTX] && len(b) <= c.mtu-3})
}

// Errors a central meets.
var (
	ErrNotAdvertising = errors.New("is not advertising")
	ErrBusy           = errors.New("is connected to another central (one connection at a time)")
	ErrPassKey        = errors.New("pairing failed: the pass key does not match")
	ErrNoPassKey      = errors.New("pairing failed: the device requires its 6-digit pass key")
	ErrNotPaired      = errors.New("the device requires an encrypted link (pair with its pass key first)")
	ErrUnknownKeys    = errors.New("encryption failed: the device does not hold this central's keys; pair again")
	ErrDisconnected   = errors.New("disconnected")
	ErrNoService      = errors.New("the device does not run this service")
	ErrInterval       = errors.New("the central asked for a connection interval the link layer does not have")
)

// PolicyError is a pairing refused by the bonding policy.
type PolicyError struct{ Policy Policy }

func (e *PolicyError) Error() string {
	return "pairing refused by bonding policy " + e.Policy.String()
}
