// Package phone is the phone of the phone bridge: a BLE central that
// reaches devices only over the radio link (package link), where it scans,
// sees their advertisements, connects, pairs (with the pass key the user
// gives), keeps the keys of its bonds and keeps the connection, within
// each device's advertising state, connection limit and bonding policy.
// Devices of this program and of every senseboard program on the NATS
// network of the radio link (package air) are reached alike and addressed
// by serial number.
//
// Its clients, such as the bridge's HTTP server (package bridge), use a
// device through it: requests, subscriptions, the device's own
// definitions, the data logger's logs and a GSP client. One connection to
// a device carries one subscription per resource; the phone shares it
// among all the clients that subscribe to it.
package phone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	"senseboard/air"
	"senseboard/client"
	"senseboard/link"
	"senseboard/nvm"
	"senseboard/radio"
)

// Peripheral is a device of this program that the phone can reach.
type Peripheral struct {
	Serial string
	// Dial opens a stream of the device's radio link.
	Dial func(ctx context.Context) (net.Conn, error)
	// Scan returns what a scan of the device sees, as its radio
	// broadcasts it, with no stream; false when it cannot say, and the
	// phone scans over a stream instead. Nil for the same.
	Scan func() (link.AdvertMsg, bool)
	// Inject makes something happen to the device's wearer: the event as
	// JSON, as a scenario gives it ({"gear": "off"}). It returns the
	// event's kind ("gear"), or an error that says what is wrong with the
	// event. Nil when the phone cannot reach the device's world.
	Inject func(event json.RawMessage) (kind string, err error)
	// Faults are the device's field faults; nil when the phone cannot
	// reach them. The phone gives them itself as the phone that phoneoff
	// turns off.
	Faults Faults
}

// Config says what the phone reaches and how it behaves.
type Config struct {
	// Local are the devices of this program.
	Local []Peripheral
	// Air is the radio link between programs, where the devices of other
	// programs, on this computer and others, are found; nil for none. The
	// phone does not close it.
	Air *air.Link
	// Address and Name are the phone's identity as a BLE central. An
	// empty Address is the one the state keeps, or one derived from
	// StateDir and kept there (DefaultAddress without a StateDir); a
	// given one is kept in the state too.
	Address, Name string
	// ConnInterval is the connection interval the phone asks for when it
	// connects, as a phone chooses one (7.5 ms to 4 s, a multiple of 1.25
	// ms); each device grants the nearest within its connection
	// parameters, and the interval sets how fast its notifications come
	// (docs/behaviour.md, BLE throughput). Zero leaves the choice to the
	// device: its slowest.
	ConnInterval time.Duration
	// StateDir keeps the keys of the bonds the phone makes and its
	// address; "" keeps them in memory only.
	StateDir string
	// ConnectAll makes the phone connect to every device it finds as
	// soon as it advertises, and keep the connection. Without it the
	// phone connects to a device when a client first uses it (a message
	// or a subscription for it, Connect, pairing) and releases the
	// connection once nothing has used it for Idle.
	ConnectAll bool
	// Idle is how long a connection stays after the last use of the
	// device, once no subscription holds it (60 s when zero; negative
	// keeps connections until asked to end them). ConnectAll keeps them.
	Idle time.Duration
	// Manual makes the phone connect only when asked (Connect, pairing),
	// not when a client uses a device nor to the devices it finds.
	Manual bool
	// Reconnect makes the phone connect again to a device whose
	// connection ended, as soon as the device advertises again. Without
	// it, the phone connects again only when asked or used.
	Reconnect bool
	// ScanInterval is how often the phone scans; 1 s when zero.
	ScanInterval time.Duration
	// Timeout bounds each exchange with a device; 5 s when zero.
	Timeout time.Duration
	// Log receives what happens; nil discards it.
	Log *slog.Logger
}

// DefaultIdle is how long a connection made on demand stays after the
// device's last use.
const DefaultIdle = 60 * time.Second

// The phone's identity when Config leaves it out.
const (
	DefaultAddress = "C0:53:42:00:00:01"
	DefaultName    = "senseboard bridge"
)

// Phone is a phone: its Bluetooth, the devices it sees, its bonds, and
// its clients' use of the devices.
//
// Lock order: ph.scanMu, then a device's opMu, then ph.mu, then the
// device's mu, then a stream's mu. Only scanMu and opMu are held across a
// round trip to a device (a scan, connect, pair or disconnect of that
// device); ph.mu, a device's mu and a stream's mu guard memory only, so
// device lists and states never wait for a device. Watchers and sinks are
// called under ph.mu and a stream's mu and must not block.
type Phone struct {
	cfg     Config
	local   map[string]bool // the serial numbers of cfg.Local
	store   *nvm.Store      // nil without a state directory
	central *link.Central   // the phone's Bluetooth

	scanMu   sync.Mutex // one scan at a time
	mu       sync.Mutex
	devs     map[string]*peer   // by serial number
	keys     *nvm.Var[bondKeys] // keys.json; in memory only without a state directory
	watchers map[*Watcher]struct{}
	logReads keyedMutex          // one read of a log at a time (logs.go)
	left     map[string]departed // devices that went away, by serial number
	dir      *air.Directory      // nil without Air
	now      func() time.Time    // time.Now; a test's clock
	closed   bool
	btOff    chan struct{}  // closed when Bluetooth is on again; nil while it is on (BluetoothOff)
	stopBT   chan struct{}  // closed by Close: Bluetooth comes on at once
	wg       sync.WaitGroup // goroutines of devices and streams
}

// New returns a phone; Run scans until it stops.
func New(cfg Config) (*Phone, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Idle == 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.ScanInterval <= 0 {
		cfg.ScanInterval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if _, err := radio.IntervalUnits(cfg.ConnInterval); err != nil {
		return nil, fmt.Errorf("bridge: %w: connection interval %v; 7.5 ms to 4 s in steps of 1.25 ms", ErrConfig, cfg.ConnInterval)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ph := &Phone{cfg: cfg, devs: map[string]*peer{}, watchers: map[*Watcher]struct{}{}, left: map[string]departed{}, now: time.Now, stopBT: make(chan struct{})}
	if cfg.StateDir != "" {
		s, err := nvm.Open(cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
		ph.store = s
	}
	var err error
	if ph.keys, err = openKeys(ph.store); err == nil {
		ph.cfg.Address, err = centralAddress(ph.store, cfg.Address)
	}
	if err == nil && cfg.Air != nil {
		ph.dir, err = cfg.Air.Watch()
	}
	ph.central = &link.Central{Address: ph.cfg.Address, Name: cfg.Name, Interval: cfg.ConnInterval, Timeout: cfg.Timeout}
	ph.local = make(map[string]bool, len(cfg.Local))
	for _, p := range cfg.Local {
		ph.local[p.Serial] = true
		if p.Faults != nil {
			p.Faults.SetPhone(ph.BluetoothOff)
		}
	}
	if err != nil {
		if ph.store != nil {
			ph.store.Close()
		}
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return ph, nil
}

// Run scans for devices every ScanInterval until ctx ends, then closes
// every connection.
func (ph *Phone) Run(ctx context.Context) error {
	t := time.NewTicker(ph.cfg.ScanInterval)
	defer t.Stop()
	defer ph.Close()
	for {
		ph.Scan(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Close ends the connections of a phone that does not Run, and waits for
// its goroutines.
func (ph *Phone) Close() {
	ph.mu.Lock()
	if !ph.closed {
		close(ph.stopBT)
	}
	ph.closed = true
	devs := ph.devices()
	ph.mu.Unlock()
	for _, d := range devs {
		if l := d.current(); l != nil {
			l.Close()
		}
	}
	ph.wg.Wait()
	if ph.dir != nil {
		ph.dir.Close()
	}
	if ph.store != nil {
		ph.store.Close()
	}
}

// devices returns the devices by serial number; ph.mu is held.
func (ph *Phone) devices() []*peer {
	out := make([]*peer, 0, len(ph.devs))
	for _, d := range ph.devs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].serial < out[j].serial })
	return out
}

// peripherals lists what the phone can reach: the devices of this program,
// then those on the air that are not.
func (ph *Phone) peripherals() []Peripheral {
	ps := slices.Clone(ph.cfg.Local)
	if ph.dir == nil {
		return ps
	}
	for _, a := range ph.dir.Peripherals() {
		if ph.local[a.Serial] {
			continue
		}
		ps = append(ps, Peripheral{Serial: a.Serial,
			Dial: func(ctx context.Context) (net.Conn, error) { return ph.cfg.Air.Dial(ctx, a.Serial) },
			Scan: func() (link.AdvertMsg, bool) { return ph.airScan(a.Serial) }})
	}
	return ps
}

// airScan reads what a scan of a device on the air sees from its latest
// advert.
func (ph *Phone) airScan(serial string) (link.AdvertMsg, bool) {
	var m link.AdvertMsg
	b, ok := ph.dir.Scan(serial)
	if !ok || json.Unmarshal(b, &m) != nil || m.Serial != serial {
		return link.AdvertMsg{}, false
	}
	return m, true
}

// Scan looks for devices once: it finds new ones, forgets those that went
// away, reads the advertisements of those it is not connected to, and
// connects to those it should.
func (ph *Phone) Scan(ctx context.Context) {
	ph.scanMu.Lock()
	defer ph.scanMu.Unlock()
	if ph.bluetoothOff() {
		return // a phone with Bluetooth off sees nothing, and forgets nothing
	}
	seen := map[string]bool{}
	for _, p := range ph.peripherals() {
		seen[p.Serial] = true
		ph.mu.Lock()
		if ph.closed {
			ph.mu.Unlock()
			return
		}
		d := ph.devs[p.Serial]
		ph.mu.Unlock()
		if d == nil {
			d = &peer{ph: ph, serial: p.Serial, p: p, want: ph.cfg.ConnectAll && !ph.cfg.Manual, streams: map[string]*stream{},
				scanned: ph.central.Power()}
		}
		if err := d.refresh(ctx); err != nil {
			why := "it does not answer: " + d.unnamed(err)
			if !ph.local[p.Serial] {
				// on the air: there until its adverts say otherwise
				if d.known() {
					d.setNote("%s", why)
				}
				continue
			}
			if ph.forget(d, why) {
				ph.cfg.Log.Info("device went away", "device", d.serial, "err", err)
			}
			continue
		}
		ph.mu.Lock()
		_, known := ph.devs[p.Serial]
		ph.devs[p.Serial] = d
		delete(ph.left, p.Serial)
		ph.mu.Unlock()
		if !known {
			ph.cfg.Log.Info("device found", "device", d.serial)
			d.publish()
		}
		d.releaseIfIdle(ctx)
	}
	ph.mu.Lock()
	var gone []*peer
	for serial, d := range ph.devs {
		if !seen[serial] {
			gone = append(gone, d)
		}
	}
	ph.mu.Unlock()
	for _, d := range gone {
		why := "it is out of reach"
		if ph.dir != nil && ph.dir.Why(d.serial) != "" {
			why = ph.dir.Why(d.serial)
		}
		if ph.forget(d, why) {
			ph.cfg.Log.Info("device went away", "device", d.serial, "why", why)
		}
	}
}

// known reports whether the phone lists the device.
func (d *peer) known() bool {
	d.ph.mu.Lock()
	defer d.ph.mu.Unlock()
	return d.ph.devs[d.serial] == d
}

// forget drops a device that went away, and keeps why; it reports whether
// it was known.
func (ph *Phone) forget(d *peer, why string) bool {
	if l := d.current(); l != nil {
		l.CloseFor(fmt.Errorf("it went away (%s): %w", why, client.ErrClosed)) // the link names the device
	}
	ph.mu.Lock()
	known := ph.devs[d.serial] == d
	if known {
		delete(ph.devs, d.serial)
		ph.left[d.serial] = departed{d: d, why: why, at: ph.now()}
	}
	ph.mu.Unlock()
	if known {
		d.mu.Lock()
		d.gone, d.note = true, "gone: "+why
		d.mu.Unlock()
		d.publish()
	}
	return known
}

// ErrUnknownDevice is a serial number the phone does not see.
var ErrUnknownDevice = errors.New("no such device")

// ErrClosed is an operation on a phone that was closed.
var ErrClosed = errors.New("the bridge is closed")

// ErrConfig is a Config setting out of its range.
var ErrConfig = errors.New("bad bridge configuration")

// goTracked runs f in a goroutine that Close waits for, unless the phone
// is closed already, which it reports with false.
func (ph *Phone) goTracked(f func()) bool {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if ph.closed {
		return false
	}
	ph.wg.Go(f)
	return true
}

// device returns the device with a serial number.
func (ph *Phone) device(serial string) (*peer, error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if d := ph.devs[serial]; d != nil {
		return d, nil
	}
	if l, ok := ph.left[serial]; ok {
		return nil, fmt.Errorf("device %s: %w: it went away (%s)", serial, ErrUnknownDevice, l.why)
	}
	var serials []string
	for _, d := range ph.devices() {
		serials = append(serials, d.serial)
	}
	if len(serials) == 0 {
		return nil, fmt.Errorf("device %s: %w; the bridge sees no devices", serial, ErrUnknownDevice)
	}
	return nil, fmt.Errorf("device %s: %w; the bridge sees %s", serial, ErrUnknownDevice, JoinSerials(serials))
}

// JoinSerials lists serial numbers for a message: the first eight, and
// how many more.
func JoinSerials(s []string) string {
	if len(s) > 8 {
		return fmt.Sprintf("%s and %d more", JoinSerials(s[:8]), len(s)-8)
	}
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// GoneListed is how long Devices lists a device that went away, in state
// "gone" with its note saying why, after it went: the dashboard and
// scripts that poll the list see it go, and why.
const GoneListed = time.Minute

// departed is a device that went away: why, and when.
type departed struct {
	d   *peer
	why string
	at  time.Time
}

// Devices returns the state of every device the phone sees, and of those
// that went away in the last GoneListed (state "gone"), by serial number.
func (ph *Phone) Devices() []DeviceState {
	ph.mu.Lock()
	devs := ph.devices()
	now := ph.now()
	for _, l := range ph.left {
		if now.Sub(l.at) < GoneListed {
			devs = append(devs, l.d)
		}
	}
	ph.mu.Unlock()
	sort.Slice(devs, func(i, j int) bool { return devs[i].serial < devs[j].serial })
	out := make([]DeviceState, 0, len(devs))
	for _, d := range devs {
		out = append(out, d.state())
	}
	return out
}

// Device returns the state of one device.
func (ph *Phone) Device(serial string) (DeviceState, error) {
	d, err := ph.device(serial)
	if err != nil {
		return DeviceState{}, err
	}
	return d.state(), nil
}

// Connect connects to a device, and after a connection that ended, makes
// the phone connect to it again when Reconnect is off.
func (ph *Phone) Connect(ctx context.Context, serial string) error {
	d, err := ph.device(serial)
	if err != nil {
		return err
	}
	return d.connect(ctx, true)
}

// Pair pairs with a device, connecting first when needed, with its pass key
// ("" when it has none); with bond set the phone keeps the keys and
// encrypts with them on later connections.
func (ph *Phone) Pair(ctx context.Context, serial, passKey string, bond bool) error {
	d, err := ph.device(serial)
	if err != nil {
		return err
	}
	return d.pair(ctx, passKey, bond)
}

// Disconnect ends the connection to a device; the phone does not connect
// to it again until asked.
func (ph *Phone) Disconnect(ctx context.Context, serial string) error {
	d, err := ph.device(serial)
	if err != nil {
		return err
	}
	return d.disconnect(ctx)
}

// ErrNotLocal is an event for a device of another program.
var ErrNotLocal = errors.New("runs in another program; inject events through that program's bridge")

// Inject makes something happen to the wearer of a device of this program:
// the event as JSON, as a scenario gives it. It returns the event's kind;
// an event the device refuses is an *EventError.
func (ph *Phone) Inject(serial string, event json.RawMessage) (string, error) {
	d, err := ph.device(serial)
	if err != nil {
		return "", err
	}
	if d.p.Inject == nil {
		return "", fmt.Errorf("device %s %w", serial, ErrNotLocal)
	}
	kind, err := d.p.Inject(event)
	if err != nil {
		return "", &EventError{Err: err}
	}
	return kind, nil
}

// EventError is an event the device's world refused.
type EventError struct{ Err error }

func (e *EventError) Error() string { return e.Err.Error() }
func (e *EventError) Unwrap() error { return e.Err }

// Watcher hears of device state changes and of the data devices send over
// their BLE services. Its functions, which may be nil, must not block.
type Watcher struct {
	// State receives a device's state when it changes.
	State func(DeviceState)
	// Data receives what a device sent over a BLE service: "hrs", heart
	// rate as the device sent it ({"average", "rrData"}), or "nus",
	// serial service data as {"data": [bytes]}.
	Data func(serial, service string, content []byte)
}

// Watch registers a watcher until the returned function is called.
func (ph *Phone) Watch(w *Watcher) (stop func()) {
	ph.mu.Lock()
	ph.watchers[w] = struct{}{}
	ph.mu.Unlock()
	return func() {
		ph.mu.Lock()
		delete(ph.watchers, w)
		ph.mu.Unlock()
	}
}

// DeviceState is what the phone knows of a device.
type DeviceState struct {
	Serial  string `json:"serial"`
	Name    string `json:"name"`    // the name in its scan response
	Address string `json:"address"` // its BLE address
	// Local is set for a device of this program; others are reached over
	// the radio link between programs.
	Local bool `json:"local"`
	// State is "advertising", "not advertising", "connected", "update
	// mode" (it advertises as its bootloader, under that name and
	// address) or "gone".
	State string `json:"state"`
	// UpdateMode says the device is in firmware update mode.
	UpdateMode  bool    `json:"updateMode"`
	Advertising bool    `json:"advertising"`
	Connected   bool    `json:"connected"`
	Handle      *uint16 `json:"handle,omitempty"` // of the connection, while connected
	// PassKey says the device asks for its pass key before it answers.
	PassKey bool `json:"passKey"`
	// HRS says the device runs the heart rate service.
	HRS bool `json:"hrs"`
	// Bonded says the phone keeps keys of a bond with the device.
	Bonded bool `json:"bonded"`
	// Encrypted says the connection is encrypted (paired).
	Encrypted bool `json:"encrypted"`
	// AutoConnect says the phone connects when the device advertises.
	AutoConnect bool `json:"autoConnect"`
	// Adv and ScanResp are the advertising and scan response packets as
	// the phone last saw them, in hex.
	Adv      string `json:"adv"`
	ScanResp string `json:"scanResp"`
	// Note says what happened last: why a connection ended, what failed.
	Note string `json:"note,omitempty"`
	// Streams are the subscriptions the phone holds on the device.
	Streams []string `json:"streams"`
}

// newLink opens a stream of the radio link to the device.
func (d *peer) newLink(ctx context.Context) (*link.Conn, error) {
	ph := d.ph
	if ph.bluetoothOff() {
		return nil, fmt.Errorf("device %s: %w", d.serial, ErrBluetoothOff)
	}
	ctx, cancel := context.WithTimeout(ctx, ph.cfg.Timeout)
	defer cancel()
	nc, err := d.p.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return ph.central.Open(ctx, "device "+d.serial, nc, link.Handlers{
		HeartRate:    func(payload []byte) { d.serviceData("hrs", payload) },
		Serial:       d.serialData,
		Notification: d.gspNotification,
	})
}

// serialData hands the data of the serial service to the watchers as
// {"data": [bytes]}.
func (d *peer) serialData(data []byte) {
	ints := make([]int, len(data))
	for i, x := range data {
		ints[i] = int(x)
	}
	payload, _ := json.Marshal(map[string][]int{"data": ints})
	d.serviceData("nus", payload)
}

// serviceData hands the data of a BLE service to the watchers: heart rate
// as the device sent it ({"average", "rrData"}), serial service data as
// {"data": [bytes]}.
func (d *peer) serviceData(service string, payload []byte) {
	ph := d.ph
	ph.mu.Lock()
	defer ph.mu.Unlock()
	for w := range ph.watchers {
		if w.Data != nil {
			w.Data(d.serial, service, payload)
		}
	}
}

// SetHRSNotifications switches the phone's heart rate notifications of a
// connected device; the data come to the watchers as "hrs" data.
func (ph *Phone) SetHRSNotifications(ctx context.Context, serial string, on bool) error {
	return ph.withConn(ctx, serial, func(ctx context.Context, c *link.Conn) error { return c.SetHRSNotifications(ctx, on) })
}

// WriteNUS writes data to the serial service of a connected device.
func (ph *Phone) WriteNUS(ctx context.Context, serial string, data []byte) error {
	return ph.withConn(ctx, serial, func(ctx context.Context, c *link.Conn) error { return c.WriteNUS(ctx, data) })
}

// withConn runs f on the connection to a device.
func (ph *Phone) withConn(ctx context.Context, serial string, f func(context.Context, *link.Conn) error) error {
	d, err := ph.device(serial)
	if err != nil {
		return err
	}
	c, err := d.conn()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ph.cfg.Timeout)
	defer cancel()
	return f(ctx, c) // the link names the device in its errors
}
