// Package ble provides the BLE resources, /Comm/Ble/...: the device's
// address, advertising and its packets, the connected peer and its
// connection parameters, link security (static pass key, bond, bonding
// policy), and the optional heart-rate (HRS) and serial (NUS) services.
//
// It also simulates the radio link: a Central (a simulated phone) scans for
// the advertisement, connects, pairs, bonds, makes requests and
// subscriptions over the connection, writes NUS data and switches HRS
// notifications, always within the device's state: no connection while it
// does not advertise, one connection at a time, and the bonding policy.
//
// Advertising starts at every reset. A connection stops it; when the
// connection ends the device advertises again, unless a client stopped
// advertising in the meantime. AdvSettings.Timeout stops advertising after
// that many seconds (0: never).
package ble

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/noise"
	"senseboard/nvm"
	"senseboard/resource"
)

// Bonding policies of BondingSettings.
const (
	BondingEnabled  = 0
	BondingDisabled = 1
	BondingOnce     = 2
	BondingSameMac  = 3
)

var policyNames = [...]string{"BondingEnabled", "BondingDisabled", "BondingOnce", "BondingSameMac"}

// PolicyName returns the name of a bonding policy.
func PolicyName(p uint8) string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", p)
}

// Defaults of the advertising settings and connection parameters.
const (
	DefaultInterval = 800 // 500 ms in units of 0.625 ms
)

// DefaultConnParams are the preferred connection parameters after a reset.
var DefaultConnParams = ConnParams{MinConnInterval: 24, MaxConnInterval: 40, SlaveLatency: 0, SupTimeout: 400}

// stateFile is the state file of the non-volatile BLE settings.
const stateFile = "ble.json"

// AdvSettings is the advertising settings record.
type AdvSettings struct {
	AdvPacket      []int  `json:"AdvPacket"`
	ScanRespPacket []int  `json:"ScanRespPacket"`
	Interval       uint16 `json:"Interval"`
	Timeout        uint16 `json:"Timeout"`
}

// AdvState is the content of GET /Comm/Ble/Adv.
type AdvState struct {
	IsAdvertising bool    `json:"isAdvertising"`
	PeerAddr      *string `json:"PeerAddr"`
}

// ConnParams are connection parameters.
type ConnParams struct {
	MinConnInterval uint16 `json:"min_conn_interval"`
	MaxConnInterval uint16 `json:"max_conn_interval"`
	SlaveLatency    uint16 `json:"slave_latency"`
	SupTimeout      uint16 `json:"sup_timeout"`
}

// Peer is a connected central.
type Peer struct {
	Address string  `json:"Address"`
	Name    *string `json:"Name"`
	Handle  uint16  `json:"handle"`
}

// PeerList is the content of GET /Comm/Ble/Peers.
type PeerList struct {
	ConnectedPeers []Peer `json:"ConnectedPeers"`
}

// PeerChange is a notification of /Comm/Ble/Peers.
type PeerChange struct {
	Peer  Peer          `json:"Peer"`
	State resource.Pair `json:"State"`
}

// Peer states.
var (
	Connected    = resource.Pair{Value: 1, Name: "CONNECTED"}
	Disconnected = resource.Pair{Value: 0, Name: "DISCONNECTED"}
)

// BondedDevice is an entry of GET /Comm/Ble/Security/Bonds.
type BondedDevice struct {
	Address string `json:"Address"`
}

// BondList is the content of GET /Comm/Ble/Security/Bonds.
type BondList struct {
	BondedDevices []BondedDevice `json:"BondedDevices"`
}

// SecuritySettings is the read form of BondingSettings.
type SecuritySettings struct {
	Policy       resource.Pair `json:"Policy"`
	RecoveryTime uint32        `json:"RecoveryTime"`
}

// HRSData is a heart-rate update of the HRS module.
type HRSData struct {
	Average float32  `json:"average"`
	RRData  []uint16 `json:"rrData"`
}

// HRSState is a notification of /Comm/Ble/HRS.
type HRSState struct {
	Enabled bool `json:"enabled"`
}

// NUSData is data over the NUS module.
type NUSData struct {
	Data []int `json:"Data"`
}

// bond is a stored bond: the central's address and the long-term key.
type bond struct {
	Address string `json:"Address"`
	Key     string `json:"Key"`
}

type persisted struct {
	Adv          AdvSettings `json:"Adv"`
	PassKey      *string     `json:"PassKey"`
	Policy       uint8       `json:"Policy"`
	RecoveryTime uint32      `json:"RecoveryTime"`
	Bond         *bond       `json:"Bond"`
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
	ErrNoModule       = errors.New("the device does not run this service")
)

// PolicyError is a pairing refused by the bonding policy.
type PolicyError struct{ Policy uint8 }

func (e *PolicyError) Error() string {
	return "pairing refused by bonding policy " + PolicyName(e.Policy)
}

// Provider serves the BLE resources and simulates the radio.
type Provider struct {
	d     *device.Device
	store *nvm.Store
	seed  uint64
	addr  string
	hrs   bool
	nus   bool

	mu          sync.Mutex
	st          persisted
	advertising bool
	advWanted   bool // advertise again after the connection ends
	advTimer    clock.Timer
	conn        *Conn
	nextHandle  uint16
	preferred   ConnParams
	keys        uint64
	peers       *resource.Topic
	hrsTopic    *resource.Topic
	nusTopic    *resource.Topic
}

// New returns the BLE provider, reading the non-volatile settings from store.
func New(store *nvm.Store, seed uint64) (*Provider, error) {
	p := &Provider{store: store, seed: seed, st: persisted{Adv: AdvSettings{Interval: DefaultInterval}}}
	if _, err := store.ReadJSON(stateFile, &p.st); err != nil {
		return nil, err
	}
	if err := p.st.check(); err != nil {
		return nil, &nvm.CorruptError{Path: store.Path(stateFile), Reason: err.Error()}
	}
	return p, nil
}

// Address returns the device's BLE address, XX:XX:XX:XX:XX:XX.
func (p *Provider) Address() string { return p.addr }

// Serial returns the serial number of the device.
func (p *Provider) Serial() string { return p.d.Serial() }

// Register installs the resources and starts advertising.
func (p *Provider) Register(d *device.Device) error {
	p.d = d
	p.addr = d.Profile().BLE.Address
	p.hrs, p.nus = d.Profile().Modules.HRS, d.Profile().Modules.NUS
	p.preferred = DefaultConnParams
	p.mu.Lock()
	p.startAdvertising()
	p.mu.Unlock()

	d.HandleFunc("/Comm/Ble/Addr", resource.Get, func(*resource.Request) resource.Response { return resource.OK(p.addr) })
	d.HandleFunc("/Comm/Ble/Adv", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		s := &AdvState{IsAdvertising: p.advertising}
		if p.conn != nil {
			a := p.conn.central.Address
			s.PeerAddr = &a
		}
		return resource.OK(s)
	})
	d.HandleFunc("/Comm/Ble/Adv", resource.Post, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case p.advertising:
			return resource.Errorf(resource.StatusConflict, "already advertising")
		case p.conn != nil:
			return resource.Errorf(resource.StatusConflict, "a central is connected and the device supports one connection; it advertises again when the central disconnects")
		}
		p.startAdvertising()
		return resource.OK(nil)
	})
	d.HandleFunc("/Comm/Ble/Adv", resource.Delete, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.stopAdvertising()
		p.advWanted = false
		return resource.OK(nil)
	})
	d.HandleFunc("/Comm/Ble/Adv/Settings", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		s := p.st.Adv
		return resource.OK(&s)
	})
	d.HandleFunc("/Comm/Ble/Adv/Settings", resource.Put, p.putAdvSettings)
	d.HandleFunc("/Comm/Ble/Peers", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		l := &PeerList{ConnectedPeers: []Peer{}}
		if p.conn != nil {
			l.ConnectedPeers = append(l.ConnectedPeers, p.conn.peer())
		}
		return resource.OK(l)
	})
	d.HandleSource("/Comm/Ble/Peers", topicSource{p, &p.peers})
	d.HandleFunc("/Comm/Ble/Peers/{ConnHandle}", resource.Delete, func(req *resource.Request) resource.Response {
		c, resp := p.connOf(req)
		if c == nil {
			return resp
		}
		c.end(fmt.Errorf("%w: the device dropped the connection (DELETE /Comm/Ble/Peers/%d)", ErrDisconnected, c.handle))
		return resource.OK(nil)
	})
	d.HandleFunc("/Comm/Ble/Peers/{ConnHandle}/Params", resource.Get, func(req *resource.Request) resource.Response {
		c, resp := p.connOf(req)
		if c == nil {
			return resp
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		params := c.params
		return resource.OK(&params)
	})
	d.HandleFunc("/Comm/Ble/Peers/{ConnHandle}/Params", resource.Put, func(req *resource.Request) resource.Response {
		c, resp := p.connOf(req)
		if c == nil {
			return resp
		}
		cp, errResp := connParams(req.Arg(1))
		if errResp != nil {
			return *errResp
		}
		p.mu.Lock()
		c.params = cp
		p.mu.Unlock()
		return resource.OK(nil)
	})
	d.HandleFunc("/Comm/Ble/ConnParams", resource.Put, func(req *resource.Request) resource.Response {
		cp, errResp := connParams(req.Arg(0))
		if errResp != nil {
			return *errResp
		}
		p.mu.Lock()
		p.preferred = cp
		p.mu.Unlock()
		return resource.OK(nil)
	})
	d.HandleFunc("/Comm/Ble/Security/Bonds", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		l := &BondList{BondedDevices: []BondedDevice{}}
		if b := p.st.Bond; b != nil {
			l.BondedDevices = append(l.BondedDevices, BondedDevice{Address: b.Address})
		}
		return resource.OK(l)
	})
	d.HandleFunc("/Comm/Ble/Security/Bonds", resource.Delete, func(*resource.Request) resource.Response {
		return p.save(func(s *persisted) { s.Bond = nil })
	})
	d.HandleFunc("/Comm/Ble/Security/Pin", resource.Put, func(req *resource.Request) resource.Response {
		pin := req.Arg(0).Str()
		return p.save(func(s *persisted) { s.PassKey = &pin })
	})
	d.HandleFunc("/Comm/Ble/Security/Pin", resource.Delete, func(*resource.Request) resource.Response {
		return p.save(func(s *persisted) { s.PassKey = nil })
	})
	d.HandleFunc("/Comm/Ble/Security/Settings", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		return resource.OK(&SecuritySettings{Policy: resource.Pair{Value: int(p.st.Policy), Name: PolicyName(p.st.Policy)}, RecoveryTime: p.st.RecoveryTime})
	})
	d.HandleFunc("/Comm/Ble/Security/Settings", resource.Put, func(req *resource.Request) resource.Response {
		var in struct {
			Policy       uint8
			RecoveryTime *uint32
		}
		if err := req.Arg(0).Decode(&in); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "BondingSettings: %v", err)
		}
		return p.save(func(s *persisted) {
			s.Policy = in.Policy
			if in.RecoveryTime != nil {
				s.RecoveryTime = *in.RecoveryTime
			}
		})
	})
	if p.hrs {
		d.HandleFunc("/Comm/Ble/HRS", resource.Post, p.postHRS)
		d.HandleSource("/Comm/Ble/HRS", topicSource{p, &p.hrsTopic})
	}
	if p.nus {
		d.HandleFunc("/Comm/Ble/NUS", resource.Post, p.postNUS)
		d.HandleSource("/Comm/Ble/NUS", topicSource{p, &p.nusTopic})
	}
	return nil
}

// save changes the non-volatile settings durably, or not at all.
func (p *Provider) save(change func(*persisted)) resource.Response {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.saveLocked(change); err != nil {
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	return resource.OK(nil)
}

func (p *Provider) saveLocked(change func(*persisted)) error {
	next := p.st
	change(&next)
	if err := next.check(); err != nil {
		return err
	}
	if err := p.store.WriteJSON(stateFile, next); err != nil {
		return fmt.Errorf("the setting did not reach non-volatile memory: %w", err)
	}
	p.st = next
	return nil
}

func (p *Provider) putAdvSettings(req *resource.Request) resource.Response {
	var s AdvSettings
	if err := req.Arg(0).Decode(&s); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "AdvSettings: %v", err)
	}
	if s.AdvPacket != nil {
		if _, err := checkPacket("AdvPacket", s.AdvPacket); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "%v", err)
		}
	}
	if s.ScanRespPacket != nil {
		if _, err := checkPacket("ScanRespPacket", s.ScanRespPacket); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "%v", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.saveLocked(func(st *persisted) { st.Adv = s }); err != nil {
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	if p.advertising { // the new timeout counts from now
		p.stopAdvertising()
		p.startAdvertising()
	}
	return resource.OK(nil)
}

func connParams(v resource.Value) (ConnParams, *resource.Response) {
	var cp ConnParams
	if err := v.Decode(&cp); err != nil {
		r := resource.Errorf(resource.StatusBadRequest, "ConnParams: %v", err)
		return cp, &r
	}
	if cp.MinConnInterval > cp.MaxConnInterval {
		r := resource.Errorf(resource.StatusBadRequest, "min_conn_interval %d is above max_conn_interval %d", cp.MinConnInterval, cp.MaxConnInterval)
		return cp, &r
	}
	return cp, nil
}

func (p *Provider) connOf(req *resource.Request) (*Conn, resource.Response) {
	h := uint16(req.Arg(0).Uint())
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil || p.conn.handle != h {
		if p.conn == nil {
			return nil, resource.Errorf(resource.StatusNotFound, "no peer with handle %d; no central is connected", h)
		}
		return nil, resource.Errorf(resource.StatusNotFound, "no peer with handle %d; the connected peer has handle %d", h, p.conn.handle)
	}
	return p.conn, resource.Response{}
}

// startAdvertising starts advertising and its timeout; p.mu is held.
func (p *Provider) startAdvertising() {
	p.advertising, p.advWanted = true, true
	if p.advTimer != nil {
		p.advTimer.Stop()
		p.advTimer = nil
	}
	if t := p.st.Adv.Timeout; t > 0 {
		var timer clock.Timer
		timer = p.d.Clock().AfterFunc(time.Duration(t)*time.Second, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.advTimer == timer {
				p.stopAdvertising()
				p.advWanted = false
				p.d.Logf(device.LevelInfo, "BLE: advertising timed out after %d s", t)
			}
		})
		p.advTimer = timer
	}
}

// stopAdvertising stops advertising; p.mu is held.
func (p *Provider) stopAdvertising() {
	p.advertising = false
	if p.advTimer != nil {
		p.advTimer.Stop()
		p.advTimer = nil
	}
}

// Advertising returns the packets the device advertises, and false when it
// does not advertise.
func (p *Provider) Advertising() (Packets, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.advertising || p.d.Mode() != device.ModeApplication {
		return Packets{}, false
	}
	return p.packets(), true
}

// packets builds the advertisement and scan response; p.mu is held.
func (p *Provider) packets() Packets {
	var out Packets
	if p.st.Adv.AdvPacket != nil {
		out.Adv, _ = checkPacket("AdvPacket", p.st.Adv.AdvPacket)
	} else {
		var flags byte
		if p.st.PassKey != nil {
			flags |= FlagPassKey
		}
		if p.st.Bond != nil {
			flags |= FlagBonded
		}
		if p.hrs {
			flags |= FlagHRS
		}
		out.Adv = DefaultAdv(flags, p.hrs)
	}
	if p.st.Adv.ScanRespPacket != nil {
		out.ScanResp, _ = checkPacket("ScanRespPacket", p.st.Adv.ScanRespPacket)
	} else {
		out.ScanResp = DefaultScanResp(p.d.Profile().Product.Name, p.d.Serial())
	}
	return out
}

// Connected reports whether a central is connected.
func (p *Provider) Connected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn != nil
}

// Reset drops the connection and starts advertising; bonds, pass key,
// policy and advertising settings are non-volatile.
func (p *Provider) Reset() {
	p.dropConnection(fmt.Errorf("%w: the device reset", ErrDisconnected))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.preferred = DefaultConnParams
	p.startAdvertising()
}

// PowerOff drops the connection and stops the radio.
func (p *Provider) PowerOff() {
	p.dropConnection(fmt.Errorf("%w: the device turned off", ErrDisconnected))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopAdvertising()
	p.advWanted = false
}

func (p *Provider) dropConnection(reason error) {
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		c.end(reason)
	}
}

func (p *Provider) postHRS(req *resource.Request) resource.Response {
	var in HRSData
	if err := req.Arg(0).Decode(&in); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "HRSData: %v", err)
	}
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		c.sendHRS(in)
	}
	return resource.OK(nil)
}

func (p *Provider) postNUS(req *resource.Request) resource.Response {
	var in NUSData
	if err := req.Arg(0).Decode(&in); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "NUSData: %v", err)
	}
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c == nil {
		return resource.Errorf(resource.StatusServiceUnavailable, "no central is connected to receive NUS data")
	}
	b := make([]byte, len(in.Data))
	for i, v := range in.Data {
		b[i] = byte(v)
	}
	c.sendNUS(b)
	return resource.OK(nil)
}

// topicSource keeps the topic of a resource with one topic.
type topicSource struct {
	p     *Provider
	topic **resource.Topic
}

func (s topicSource) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	*s.topic = t
	return resource.OK(nil)
}

func (s topicSource) Unsubscribed(t *resource.Topic) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if t.Subscribers() == 0 && *s.topic == t {
		*s.topic = nil
	}
}

// newKey makes a long-term key from the device's seed; p.mu is held.
func (p *Provider) newKey() string {
	p.keys++
	var b [16]byte
	k := noise.Key(p.seed, 0x6B6579, p.keys)
	for i := range b {
		b[i] = byte(noise.Mix(k + uint64(i)))
	}
	return hex.EncodeToString(b[:])
}
