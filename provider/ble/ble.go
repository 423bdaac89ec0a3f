// Package ble provides the BLE resources, /Comm/Ble/...: the device's
// address, advertising and its packets, the connected peer and its
// connection parameters, link security (static pass key, bond, bonding
// policy), and the optional heart-rate (HRS) and serial (NUS) services.
//
// The link itself (advertising, the connection, pairing and bonding, the
// non-volatile settings) is package radio's; the resources read and change
// it, and turn what happens on it into notifications.
package ble

import (
	"fmt"
	"sync"
	"time"

	"senseboard/device"
	"senseboard/radio"
	"senseboard/resource"
)

// AdvState is the content of GET /Comm/Ble/Adv.
type AdvState struct {
	IsAdvertising bool    `json:"isAdvertising"`
	PeerAddr      *string `json:"PeerAddr"`
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

// HRSState is a notification of /Comm/Ble/HRS.
type HRSState struct {
	Enabled bool `json:"enabled"`
}

// NUSData is data over the NUS module.
type NUSData struct {
	Data []int `json:"Data"`
}

// Provider serves the BLE resources on the device's radio.
type Provider struct {
	radio *radio.Peripheral

	mu       sync.Mutex // guards the topics
	peers    *resource.Topic
	hrsTopic *resource.Topic
	nusTopic *resource.Topic
}

// New returns the BLE provider of the device's radio, which the device's
// assembly makes (its settings from radio.OpenSettings).
func New(r *radio.Peripheral) *Provider { return &Provider{radio: r} }

// Address returns the device's BLE address, XX:XX:XX:XX:XX:XX.
func (p *Provider) Address() string { return p.radio.Address() }

// Connected reports whether a central is connected.
func (p *Provider) Connected() bool { return p.radio.Connected() }

// Register attaches the device to its radio, which tells the resources
// what happens on the link, and installs the resources.
func (p *Provider) Register(d *device.Core) error {
	prof := d.Profile()
	p.radio.Attach(host{p, d})

	d.HandleFunc("/Comm/Ble/Addr", resource.Get, p.getAddr)
	d.HandleFunc("/Comm/Ble/Adv", resource.Get, p.getAdv)
	d.HandleFunc("/Comm/Ble/Adv", resource.Post, p.postAdv)
	d.HandleFunc("/Comm/Ble/Adv", resource.Delete, p.deleteAdv)
	d.HandleFunc("/Comm/Ble/Adv/Settings", resource.Get, p.getAdvSettings)
	d.HandleFunc("/Comm/Ble/Adv/Settings", resource.Put, p.putAdvSettings)
	d.HandleFunc("/Comm/Ble/Peers", resource.Get, p.getPeers)
	d.HandleSource("/Comm/Ble/Peers", topicSource{p, &p.peers})
	d.HandleFunc("/Comm/Ble/Peers/{ConnHandle}", resource.Delete, p.deletePeer)
	d.HandleFunc("/Comm/Ble/Peers/{ConnHandle}/Params", resource.Get, p.getPeerParams)
	d.HandleFunc("/Comm/Ble/Peers/{ConnHandle}/Params", resource.Put, p.putPeerParams)
	d.HandleFunc("/Comm/Ble/ConnParams", resource.Put, p.putConnParams)
	d.HandleFunc("/Comm/Ble/Security/Bonds", resource.Get, p.getBonds)
	d.HandleFunc("/Comm/Ble/Security/Bonds", resource.Delete, p.deleteBonds)
	d.HandleFunc("/Comm/Ble/Security/Pin", resource.Put, p.putPin)
	d.HandleFunc("/Comm/Ble/Security/Pin", resource.Delete, p.deletePin)
	d.HandleFunc("/Comm/Ble/Security/Settings", resource.Get, p.getSecurity)
	d.HandleFunc("/Comm/Ble/Security/Settings", resource.Put, p.putSecurity)
	if prof.Modules.HRS {
		d.HandleFunc("/Comm/Ble/HRS", resource.Post, p.postHRS)
		d.HandleSource("/Comm/Ble/HRS", topicSource{p, &p.hrsTopic})
	}
	if prof.Modules.NUS {
		d.HandleFunc("/Comm/Ble/NUS", resource.Post, p.postNUS)
		d.HandleSource("/Comm/Ble/NUS", topicSource{p, &p.nusTopic})
	}
	return nil
}

// Reset drops the connection and starts advertising; bonds, pass key,
// policy and advertising settings are non-volatile.
func (p *Provider) Reset() { p.radio.Reset() }

// PowerOff drops the connection and stops the radio.
func (p *Provider) PowerOff() { p.radio.PowerOff() }

// host is the device as its radio sees it: it runs its application in
// Application mode only, and what happens on the link becomes the
// resources' notifications.
type host struct {
	p *Provider
	d *device.Core
}

func (h host) OnAir() bool                  { return h.d.Mode() == device.ModeApplication }
func (h host) UpdateMode() bool             { return h.d.Mode() == device.ModeFwUpdate }
func (h host) SinceReset() time.Duration    { return h.d.SinceReset() }
func (h host) Logf(format string, a ...any) { h.d.Logf(device.LevelInfo, format, a...) }
func (h host) Connected(c *radio.Conn) {
	h.p.publish(&h.p.peers, &PeerChange{Peer: peer(c), State: Connected})
}
func (h host) Disconnected(c *radio.Conn) {
	h.p.publish(&h.p.peers, &PeerChange{Peer: peer(c), State: Disconnected})
}
func (h host) HRSNotifications(on bool) { h.p.publish(&h.p.hrsTopic, &HRSState{Enabled: on}) }
func (h host) NUSWritten(data []byte)   { h.p.nusWritten(data) }

// peer describes a connection as /Comm/Ble/Peers does.
func peer(c *radio.Conn) Peer {
	pr := Peer{Address: c.Central().Address, Handle: c.Handle()}
	if n := c.Central().Name; n != "" {
		pr.Name = &n
	}
	return pr
}

// publish sends a notification to the subscribers of a topic, if any.
func (p *Provider) publish(topic **resource.Topic, content any) {
	p.mu.Lock()
	t := *topic
	p.mu.Unlock()
	if t != nil {
		t.Publish(content)
	}
}

func (p *Provider) getAddr(*resource.Request) resource.Response {
	return resource.OK(p.radio.Address())
}

func (p *Provider) getAdv(*resource.Request) resource.Response {
	s := &AdvState{IsAdvertising: p.radio.IsAdvertising()}
	if c := p.radio.Current(); c != nil {
		a := c.Central().Address
		s.PeerAddr = &a
	}
	return resource.OK(s)
}

func (p *Provider) postAdv(*resource.Request) resource.Response {
	if err := p.radio.StartAdvertising(); err != nil {
		return resource.Errorf(resource.StatusConflict, "%v", err)
	}
	return resource.OK(nil)
}

func (p *Provider) deleteAdv(*resource.Request) resource.Response {
	p.radio.StopAdvertising()
	return resource.OK(nil)
}

func (p *Provider) getAdvSettings(*resource.Request) resource.Response {
	s := p.radio.AdvSettings()
	return resource.OK(&s)
}

func (p *Provider) putAdvSettings(req *resource.Request) resource.Response {
	var s radio.AdvSettings
	if err := req.Arg(0).Decode(&s); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "AdvSettings: %v", err)
	}
	if err := s.Validate(); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	return stored(p.radio.SetAdvSettings(s))
}

// stored answers a change of the non-volatile settings.
func stored(err error) resource.Response {
	if err != nil {
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	return resource.OK(nil)
}

func (p *Provider) getPeers(*resource.Request) resource.Response {
	l := &PeerList{ConnectedPeers: []Peer{}}
	if c := p.radio.Current(); c != nil {
		l.ConnectedPeers = append(l.ConnectedPeers, peer(c))
	}
	return resource.OK(l)
}

// connOf returns the connection a request's handle names.
func (p *Provider) connOf(req *resource.Request) (*radio.Conn, resource.Response) {
	h := uint16(req.Arg(0).Uint())
	c := p.radio.Current()
	switch {
	case c == nil:
		return nil, resource.Errorf(resource.StatusNotFound, "no peer with handle %d; no central is connected", h)
	case c.Handle() != h:
		return nil, resource.Errorf(resource.StatusNotFound, "no peer with handle %d; the connected peer has handle %d", h, c.Handle())
	}
	return c, resource.Response{}
}

func (p *Provider) deletePeer(req *resource.Request) resource.Response {
	c, resp := p.connOf(req)
	if c == nil {
		return resp
	}
	c.Drop(fmt.Sprintf("the device dropped the connection (DELETE /Comm/Ble/Peers/%d)", c.Handle()))
	return resource.OK(nil)
}

func (p *Provider) getPeerParams(req *resource.Request) resource.Response {
	c, resp := p.connOf(req)
	if c == nil {
		return resp
	}
	params := c.Granted() // min = max: the interval the link runs, as the family's API reports it
	return resource.OK(&params)
}

func (p *Provider) putPeerParams(req *resource.Request) resource.Response {
	c, resp := p.connOf(req)
	if c == nil {
		return resp
	}
	cp, errResp := connParams(req.Arg(1))
	if errResp != nil {
		return *errResp
	}
	if err := c.SetParams(cp); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	return resource.OK(nil)
}

func (p *Provider) putConnParams(req *resource.Request) resource.Response {
	cp, errResp := connParams(req.Arg(0))
	if errResp != nil {
		return *errResp
	}
	if err := p.radio.SetPreferredParams(cp); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	return resource.OK(nil)
}

func connParams(v resource.Value) (radio.ConnParams, *resource.Response) {
	var cp radio.ConnParams
	if err := v.Decode(&cp); err != nil {
		r := resource.Errorf(resource.StatusBadRequest, "ConnParams: %v", err)
		return cp, &r
	}
	if err := cp.Validate(); err != nil {
		r := resource.Errorf(resource.StatusBadRequest, "%v", err)
		return cp, &r
	}
	return cp, nil
}

func (p *Provider) getBonds(*resource.Request) resource.Response {
	l := &BondList{BondedDevices: []BondedDevice{}}
	if b, ok := p.radio.Bond(); ok {
		l.BondedDevices = append(l.BondedDevices, BondedDevice{Address: b.Address})
	}
	return resource.OK(l)
}

func (p *Provider) deleteBonds(*resource.Request) resource.Response {
	return stored(p.radio.DeleteBond())
}

func (p *Provider) putPin(req *resource.Request) resource.Response {
	pin := req.Arg(0).Str()
	if err := radio.CheckPassKey(pin); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	return stored(p.radio.SetPassKey(pin))
}

func (p *Provider) deletePin(*resource.Request) resource.Response {
	return stored(p.radio.ClearPassKey())
}

func (p *Provider) getSecurity(*resource.Request) resource.Response {
	policy, recovery := p.radio.Security()
	return resource.OK(&SecuritySettings{Policy: resource.Pair{Value: int(policy), Name: policy.String()}, RecoveryTime: recovery})
}

func (p *Provider) putSecurity(req *resource.Request) resource.Response {
	var in struct {
		Policy       radio.Policy
		RecoveryTime *uint32
	}
	if err := req.Arg(0).Decode(&in); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "BondingSettings: %v", err)
	}
	if !in.Policy.Valid() {
		return resource.Errorf(resource.StatusBadRequest, "BondingSettings: policy %d is not a policy (0..3)", in.Policy)
	}
	return stored(p.radio.SetSecurity(in.Policy, in.RecoveryTime))
}

func (p *Provider) postHRS(req *resource.Request) resource.Response {
	var in radio.HRSData
	if err := req.Arg(0).Decode(&in); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "HRSData: %v", err)
	}
	if c := p.radio.Current(); c != nil {
		c.SendHRS(in)
	}
	return resource.OK(nil)
}

func (p *Provider) postNUS(req *resource.Request) resource.Response {
	var in NUSData
	if err := req.Arg(0).Decode(&in); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "NUSData: %v", err)
	}
	c := p.radio.Current()
	if c == nil {
		return resource.Errorf(resource.StatusServiceUnavailable, "no central is connected to receive NUS data")
	}
	b := make([]byte, len(in.Data))
	for i, v := range in.Data {
		b[i] = byte(v)
	}
	c.SendNUS(b)
	return resource.OK(nil)
}

// nusWritten tells the /Comm/Ble/NUS subscribers what a central wrote.
func (p *Provider) nusWritten(data []byte) {
	ints := make([]int, len(data))
	for i, b := range data {
		ints[i] = int(b)
	}
	p.publish(&p.nusTopic, &NUSData{Data: ints})
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
