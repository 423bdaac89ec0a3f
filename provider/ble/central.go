package ble

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"senseboard/device"
	"senseboard/resource"
)

// Central is a simulated central: a phone or a computer that reaches devices
// over the air. It keeps the keys of the devices it bonded with, as a phone does.
type Central struct {
	Address string // XX:XX:XX:XX:XX:XX
	Name    string

	mu   sync.Mutex
	keys map[string]string // device address -> long-term key
}

// NewCentral returns a central with an address and a name.
func NewCentral(address, name string) *Central {
	return &Central{Address: address, Name: name, keys: map[string]string{}}
}

// Bonded reports whether the central holds keys for the device address.
func (c *Central) Bonded(device string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.keys[device]
	return ok
}

// Key returns the long-term key the central keeps for a device address.
func (c *Central) Key(device string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.keys[device]
	return k, ok
}

// Remember stores a long-term key for a device address, as a central that
// keeps its bonds elsewhere (the phone bridge's key store) hands it back.
func (c *Central) Remember(device, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[device] = key
}

// Forget drops the central's keys for a device, as "forget this device" does on a phone.
func (c *Central) Forget(device string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keys, device)
}

// Conn is a connection between a central and the device.
type Conn struct {
	p       *Provider
	central *Central
	handle  uint16
	client  *resource.Client
	hrs     chan HRSData
	nus     chan []byte

	// guarded by p.mu
	params    ConnParams
	encrypted bool
	hrsOn     bool

	once   sync.Once
	done   chan struct{}
	reason error
}

// Connect connects central c to the device. Notifications of the
// subscriptions made over the connection go to sink. It fails with
// ErrNotAdvertising when the device does not advertise (or is off) and with
// ErrBusy while another central is connected.
func (p *Provider) Connect(c *Central, sink resource.Sink) (*Conn, error) {
	p.mu.Lock()
	switch {
	case !p.advertising || p.d.Mode() != device.ModeApplication:
		p.mu.Unlock()
		return nil, fmt.Errorf("device %s %w", p.d.Serial(), ErrNotAdvertising)
	case p.conn != nil:
		p.mu.Unlock()
		return nil, fmt.Errorf("device %s %w", p.d.Serial(), ErrBusy)
	}
	conn := &Conn{
		p:       p,
		central: c,
		handle:  p.nextHandle,
		client:  resource.NewClient("ble:"+c.Address, sink),
		hrs:     make(chan HRSData, 64),
		nus:     make(chan []byte, 64),
		params:  p.preferred,
		done:    make(chan struct{}),
	}
	p.nextHandle++
	p.conn = conn
	p.stopAdvertising()
	topic := p.peers
	peer := conn.peer()
	p.mu.Unlock()
	if topic != nil {
		topic.Publish(&PeerChange{Peer: peer, State: Connected})
	}
	p.d.Logf(device.LevelInfo, "BLE: %s connected (handle %d)", c.Address, conn.handle)
	return conn, nil
}

// peer describes the connection; p.mu is held.
func (c *Conn) peer() Peer {
	pr := Peer{Address: c.central.Address, Handle: c.handle}
	if c.central.Name != "" {
		n := c.central.Name
		pr.Name = &n
	}
	return pr
}

// Handle returns the connection handle.
func (c *Conn) Handle() uint16 { return c.handle }

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

// Encrypted reports whether the link is encrypted (paired or bonded).
func (c *Conn) Encrypted() bool {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return c.encrypted
}

// Disconnect ends the connection from the central's side.
func (c *Conn) Disconnect() { c.end(fmt.Errorf("%w: the central disconnected", ErrDisconnected)) }

// end closes the connection: subscriptions made over it end, the peer
// notification says DISCONNECTED, and the device advertises again unless
// told not to.
func (c *Conn) end(reason error) {
	c.once.Do(func() {
		p := c.p
		p.mu.Lock()
		if p.conn == c {
			p.conn = nil
			if p.advWanted && p.d.Mode() == device.ModeApplication {
				p.startAdvertising()
			}
		}
		topic := p.peers
		peer := c.peer()
		p.mu.Unlock()
		c.reason = reason
		close(c.done)
		c.client.Close()
		if topic != nil {
			topic.Publish(&PeerChange{Peer: peer, State: Disconnected})
		}
		if topic := c.p.hrsTopicIfOn(c); topic != nil {
			topic.Publish(&HRSState{Enabled: false})
		}
		p.d.Logf(device.LevelInfo, "BLE: %s disconnected (%v)", c.central.Address, reason)
	})
}

func (p *Provider) hrsTopicIfOn(c *Conn) *resource.Topic {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !c.hrsOn {
		return nil
	}
	c.hrsOn = false
	return p.hrsTopic
}

func (c *Conn) alive() error {
	select {
	case <-c.done:
		return c.reason
	default:
		return nil
	}
}

// Pair pairs over the connection, with the device's pass key when it has
// one, and bonds when bonding is set: the device then keeps the central's keys
// (one bond at a time, within the bonding policy) and so does the central.
// With policy BondingSameMac a central with another address than the bonded
// one sees a successful pairing while the device keeps its old keys.
func (c *Conn) Pair(passKey string, bonding bool) error {
	if err := c.alive(); err != nil {
		return err
	}
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if pin := p.st.PassKey; pin != nil {
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
	recovery := p.d.SinceReset() < time.Duration(p.st.RecoveryTime)*time.Second
	old := p.st.Bond
	same := old != nil && old.Address == c.central.Address
	store := true
	switch p.st.Policy {
	case BondingDisabled:
		if !recovery && !same {
			return &PolicyError{p.st.Policy}
		}
	case BondingOnce:
		if !recovery && old != nil {
			return &PolicyError{p.st.Policy}
		}
	case BondingSameMac:
		if !recovery && old != nil && !same {
			store = false // quiet: the central believes it bonded
		}
	}
	key := p.newKey()
	if store {
		if err := p.saveLocked(func(s *persisted) { s.Bond = &bond{Address: c.central.Address, Key: key} }); err != nil {
			return err
		}
	}
	c.central.mu.Lock()
	c.central.keys[p.addr] = key
	c.central.mu.Unlock()
	c.encrypted = true
	return nil
}

// Encrypt encrypts the link with the keys of an earlier bond, as a bonded
// phone does when it reconnects.
func (c *Conn) Encrypt() error {
	if err := c.alive(); err != nil {
		return err
	}
	p := c.p
	c.central.mu.Lock()
	key, ok := c.central.keys[p.addr]
	c.central.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok || p.st.Bond == nil || p.st.Bond.Address != c.central.Address || p.st.Bond.Key != key {
		return ErrUnknownKeys
	}
	c.encrypted = true
	return nil
}

// Do makes a request over the connection. Subscriptions made with it belong
// to the connection and end with it. With a pass key set the link must be
// encrypted first.
func (c *Conn) Do(req *resource.Request) (resource.Envelope, error) {
	if err := c.alive(); err != nil {
		return resource.Envelope{}, err
	}
	p := c.p
	p.mu.Lock()
	locked := p.st.PassKey != nil && !c.encrypted
	p.mu.Unlock()
	if locked {
		return resource.Envelope{}, ErrNotPaired
	}
	req.Client = c.client
	return p.d.Do(req)
}

// Client returns the device client of the connection, whose subscriptions
// end with it.
func (c *Conn) Client() *resource.Client { return c.client }

// SetHRSNotifications switches the central's heart-rate notifications, which
// the device's /Comm/Ble/HRS subscribers hear of.
func (c *Conn) SetHRSNotifications(on bool) error {
	if err := c.alive(); err != nil {
		return err
	}
	p := c.p
	if !p.hrs {
		return fmt.Errorf("HRS: %w", ErrNoModule)
	}
	p.mu.Lock()
	changed := c.hrsOn != on
	c.hrsOn = on
	topic := p.hrsTopic
	p.mu.Unlock()
	if changed && topic != nil {
		topic.Publish(&HRSState{Enabled: on})
	}
	return nil
}

// HRS receives the heart-rate updates the device sends while notifications are on.
func (c *Conn) HRS() <-chan HRSData { return c.hrs }

func (c *Conn) sendHRS(d HRSData) {
	c.p.mu.Lock()
	on := c.hrsOn
	c.p.mu.Unlock()
	if !on {
		return
	}
	select {
	case c.hrs <- d:
	default: // the central does not read: the update is lost, as over the air
	}
}

// WriteNUS writes data to the device's serial service; /Comm/Ble/NUS
// subscribers receive it.
func (c *Conn) WriteNUS(data []byte) error {
	if err := c.alive(); err != nil {
		return err
	}
	p := c.p
	if !p.nus {
		return fmt.Errorf("NUS: %w", ErrNoModule)
	}
	if len(data) == 0 || len(data) > 244 {
		return errors.New("NUS: a write carries 1 to 244 bytes")
	}
	p.mu.Lock()
	topic := p.nusTopic
	p.mu.Unlock()
	if topic != nil {
		ints := make([]int, len(data))
		for i, b := range data {
			ints[i] = int(b)
		}
		topic.Publish(&NUSData{Data: ints})
	}
	return nil
}

// NUS receives the data the device sends over its serial service.
func (c *Conn) NUS() <-chan []byte { return c.nus }

func (c *Conn) sendNUS(b []byte) {
	select {
	case c.nus <- b:
	default:
	}
}
