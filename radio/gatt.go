package radio

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"senseboard/resource"
)

// UUID is a Bluetooth UUID in its 128-bit form, most significant byte
// first, as it is written (0000180d-0000-1000-8000-00805f9b34fb).
type UUID [16]byte

// baseUUID is the Bluetooth base UUID, which 16-bit UUIDs abbreviate.
var baseUUID = UUID{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB}

// UUID16 returns the 128-bit form of a 16-bit UUID.
func UUID16(u uint16) UUID {
	b := baseUUID
	b[2], b[3] = byte(u>>8), byte(u)
	return b
}

// ParseUUID reads a UUID written as 8-4-4-4-12 hexadecimal digits, or as
// 4 digits for a 16-bit one.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) == 4 {
		b, err := hex.DecodeString(s)
		if err != nil {
			return u, fmt.Errorf("UUID %q: %w", s, err)
		}
		return UUID16(uint16(b[0])<<8 | uint16(b[1])), nil
	}
	parts := strings.Split(s, "-")
	if len(parts) != 5 || len(parts[0]) != 8 || len(parts[1]) != 4 || len(parts[2]) != 4 || len(parts[3]) != 4 || len(parts[4]) != 12 {
		return u, fmt.Errorf("UUID %q: want 4 hexadecimal digits or the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	b, err := hex.DecodeString(strings.Join(parts, ""))
	if err != nil {
		return u, fmt.Errorf("UUID %q: %w", s, err)
	}
	return UUID(b), nil
}

// MustParseUUID is ParseUUID for UUIDs written in the program; it panics
// on a malformed one.
func MustParseUUID(s string) UUID {
	u, err := ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

func (u UUID) String() string {
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Property is what a central may do with a characteristic.
type Property uint8

// The characteristic properties the device uses.
const (
	PropRead Property = 1 << iota
	PropWrite
	PropWriteNoResponse
	PropNotify
)

// Characteristic is a characteristic of a GATT service.
type Characteristic struct {
	UUID  UUID
	Props Property
}

// Service is a GATT service of the device: its characteristics, and what
// serves each connection's use of them.
type Service struct {
	UUID            UUID
	Characteristics []Characteristic
	// Open is called when a central connects and returns what serves the
	// connection's writes and notification switches; nil serves nothing.
	// It must not end the connection.
	Open func(c *Conn) Handler
}

// Handler serves one connection's use of a service. Its methods run on
// the central's goroutine and may call the Conn.
type Handler interface {
	// Write receives a write to a characteristic with a write property.
	Write(char UUID, data []byte) error
	// Notifying hears the central switch notifications of a
	// characteristic on or off (its descriptor written); the end of the
	// connection switches them off without a call.
	Notifying(char UUID, on bool)
	// Close ends the service's use of the connection.
	Close()
}

// ReadHandler is a Handler whose service has readable characteristics:
// Read returns a characteristic's value when the central reads it.
type ReadHandler interface {
	Handler
	Read(char UUID) ([]byte, error)
}

// MTUHandler is a Handler that hears the central choose another ATT MTU,
// for services that size their notifications by it.
type MTUHandler interface {
	Handler
	MTUChanged(mtu int)
}

// ATT MTU: the default of a connection, and the range a central may choose.
const (
	DefaultMTU = 247
	MinMTU     = 23
	MaxMTU     = 517
)

// Notification is a notification of a characteristic to the central.
type Notification struct {
	Char UUID
	Data []byte
}

// Errors of the GATT layer.
var (
	ErrNoCharacteristic = errors.New("no such characteristic")
	ErrNotPermitted     = errors.New("the characteristic does not permit this")
	ErrTooLong          = errors.New("longer than the connection's MTU allows")
)

// AddService adds a GATT service; connections made after it see it. A
// service with the UUID of one the device has is refused.
func (p *Peripheral) AddService(s *Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.services {
		if o.UUID == s.UUID {
			return fmt.Errorf("GATT service %s is there already", s.UUID)
		}
	}
	p.services = append(p.services, s)
	return nil
}

// Services returns the device's GATT services, as a central discovers them.
func (p *Peripheral) Services() []*Service {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Service(nil), p.services...)
}

// attach opens the services for a new connection; it runs before the
// connection is handed out.
func (c *Conn) attach(services []*Service) {
	c.services = services
	c.handlers = make([]Handler, len(services))
	for i, s := range services {
		if s.Open != nil {
			c.handlers[i] = s.Open(c)
		}
	}
}

// detach closes the services' use of an ended connection.
func (c *Conn) detach() {
	for _, h := range c.handlers {
		if h != nil {
			h.Close()
		}
	}
}

// find returns the service and characteristic with a UUID.
func (c *Conn) find(char UUID) (int, Characteristic, error) {
	for i, s := range c.services {
		for _, ch := range s.Characteristics {
			if ch.UUID == char {
				return i, ch, nil
			}
		}
	}
	return 0, Characteristic{}, fmt.Errorf("characteristic %s: %w", char, ErrNoCharacteristic)
}

// MTU returns the connection's ATT MTU; a notification or a write carries
// at most MTU-3 bytes.
func (c *Conn) MTU() int {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return c.mtu
}

// SetMTU sets the ATT MTU the central chose, MinMTU..MaxMTU; the services
// that are MTUHandlers hear of a change.
func (c *Conn) SetMTU(mtu int) error {
	if mtu < MinMTU || mtu > MaxMTU {
		return fmt.Errorf("ATT MTU %d is outside %d..%d", mtu, MinMTU, MaxMTU)
	}
	c.p.mu.Lock()
	changed := c.mtu != mtu
	c.mtu = mtu
	c.airMu.Lock()
	c.airMTU = mtu
	c.airMu.Unlock()
	c.p.mu.Unlock()
	if changed {
		for _, h := range c.handlers {
			if m, ok := h.(MTUHandler); ok {
				m.MTUChanged(mtu)
			}
		}
	}
	return nil
}

// Write writes data from the central to a characteristic.
func (c *Conn) Write(char UUID, data []byte) error {
	if err := c.Err(); err != nil {
		return err
	}
	i, ch, err := c.find(char)
	if err != nil {
		return err
	}
	if ch.Props&(PropWrite|PropWriteNoResponse) == 0 {
		return fmt.Errorf("write to characteristic %s: %w", char, ErrNotPermitted)
	}
	if max := c.MTU() - 3; len(data) > max {
		return fmt.Errorf("write of %d bytes to characteristic %s: %w (%d bytes)", len(data), char, ErrTooLong, max)
	}
	c.written()
	if h := c.handlers[i]; h != nil {
		return h.Write(char, data)
	}
	return nil
}

// Read reads a characteristic's value, as the central does with an ATT
// Read Request (and Read Blob Requests for a value longer than one
// response carries, which the central's stack joins). The characteristic
// must have PropRead, and its service's handler must be a ReadHandler.
func (c *Conn) Read(char UUID) ([]byte, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	i, ch, err := c.find(char)
	if err != nil {
		return nil, err
	}
	h, ok := c.handlers[i].(ReadHandler)
	if ch.Props&PropRead == 0 || !ok {
		return nil, fmt.Errorf("read of characteristic %s: %w", char, ErrNotPermitted)
	}
	c.written()
	return h.Read(char)
}

// SetNotify switches notifications of a characteristic on or off, as the
// central does by writing its descriptor.
func (c *Conn) SetNotify(char UUID, on bool) error {
	if err := c.Err(); err != nil {
		return err
	}
	i, ch, err := c.find(char)
	if err != nil {
		return err
	}
	if ch.Props&PropNotify == 0 {
		return fmt.Errorf("notifications of characteristic %s: %w", char, ErrNotPermitted)
	}
	c.written()
	c.p.mu.Lock()
	changed := c.notifying[char] != on && !c.ended
	if changed {
		c.notifying[char] = on
	}
	c.p.mu.Unlock()
	if h := c.handlers[i]; changed && h != nil {
		h.Notifying(char, on)
	}
	return nil
}

// Notifying reports whether the central has notifications of a
// characteristic on.
func (c *Conn) Notifying(char UUID) bool {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return c.notifying[char]
}

// Notify sends a notification of a characteristic to the central, when it
// has them on; otherwise it is not sent. Several parts are several
// notifications that go all or none (the parts of one stream sample
// batch). A central that does not read loses them, as over the air, and
// so does a connection with no room for them (see Airtime): streams lose
// whole notifications this way, as on the hardware. A part longer than
// MTU-3 bytes is refused.
func (c *Conn) Notify(char UUID, parts ...[]byte) error {
	_, err := c.notify(char, parts, nil, false)
	if errors.Is(err, ErrDisconnected) {
		return nil // sent into a connection that ended: lost, as over the air
	}
	return err
}

// NotifyStream sends the parts of one notification of a stream of sub, as
// Notify does, under the rule the subscriptions over the radio link follow
// (see Airtime): when sub's source has a small buffer of its own
// (resource.Topic.Limit, the ECG front end's two notifications), at most
// that many of its notifications wait for the air, and one more is lost.
// It reports whether the parts went to the air (or were not sent because
// the central has notifications off); false means they were lost, and the
// caller counts the loss on sub. A notification the air carries to a
// central that does not read is lost too, and counted once on sub (Lost)
// while sub lasts, whichever of its parts the central had no room for;
// the parts after that one are not sent. A connection that ended reports
// ErrDisconnected.
func (c *Conn) NotifyStream(char UUID, sub *resource.Subscription, parts ...[]byte) (bool, error) {
	return c.notify(char, parts, sub, false)
}

// TryNotify sends a notification that must not be lost, as a flow-controlled
// sender (a log transfer) does on the hardware: when the connection has no
// room for it now (the transmit queue of the model is full, or the central
// has not read what waits) it sends nothing and reports false, and the
// sender tries again when WhenRoom calls it back. A notification of a
// characteristic the central has not switched on is not sent and counts
// as done. After the connection ends it fails with ErrDisconnected.
func (c *Conn) TryNotify(char UUID, data []byte) (bool, error) {
	return c.notify(char, [][]byte{data}, nil, true)
}

// notify sends parts (see Notify); owner, when not nil, is the
// subscription whose stream they are: its topic's Limit applies, counted
// in notifications (the first parts), and a loss is counted once.
func (c *Conn) notify(char UUID, parts [][]byte, owner *resource.Subscription, flow bool) (bool, error) {
	now := c.p.airNow()
	defer c.out.wakeReader() // after the unlock
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	for _, data := range parts {
		if max := c.mtu - 3; len(data) > max {
			return false, fmt.Errorf("notification of %d bytes of characteristic %s: %w (%d bytes)", len(data), char, ErrTooLong, max)
		}
	}
	switch {
	case c.ended:
		return false, fmt.Errorf("notification of characteristic %s: %w", char, ErrDisconnected)
	case !c.notifying[char]:
		return true, nil
	case c.lost.Load():
		return false, nil // a lost link carries nothing
	}
	a := &c.air.cfg
	if !a.Enabled {
		if flow && waiting(&c.out, &c.out.notes)+len(parts) > notesLimit {
			return false, nil
		}
		for i, data := range parts {
			c.handOut(&airItem{kind: outGATT, char: char, data: c.carve(data), owner: owner, later: i > 0})
		}
		return true, nil
	}
	limit := 0
	if owner != nil && owner.Topic != nil {
		limit = owner.Topic.Limit
	}
	c.airMu.Lock()
	defer c.airMu.Unlock()
	if flow && waiting(&c.out, &c.out.notes)+c.air.notes+len(parts) > notesLimit || !c.air.roomFor(now, len(parts), owner, limit, flow) {
		return false, nil
	}
	for i, data := range parts {
		c.queueLocked(now, airItem{packets: NotificationPackets(a, len(data)), kind: outGATT, char: char, data: c.carve(data), owner: owner, later: i > 0})
	}
	return true, nil
}

// WhenRoom calls f once, when the connection may have room again for what
// TryNotify refused: at the next connection event that carries packets.
// It calls f also when the connection ends, so that the sender stops. f
// runs on the goroutine of the device's clock and must not block.
func (c *Conn) WhenRoom(f func()) {
	now := c.p.airNow()
	c.p.mu.Lock()
	if c.ended {
		c.p.mu.Unlock()
		f()
		return
	}
	c.airMu.Lock()
	c.waiters = append(c.waiters, f)
	c.armLocked(now)
	c.airMu.Unlock()
	c.p.mu.Unlock()
}

// written tells the throughput model that a write of the central arrived
// now: it came in a connection event, which carries the device's packets
// too, and whoever waits for room hears of it.
func (c *Conn) written() {
	if c.air.cfg.Enabled {
		c.runEvents(eventWrite)
	}
}

// slabSize is the bytes of each block notification data is carved from:
// one allocation serves many notifications.
const slabSize = 4096

// carve returns a copy of b that the central may keep, carved from the
// connection's slab; p.mu is held.
func (c *Conn) carve(b []byte) []byte {
	if len(b) > cap(c.slab)-len(c.slab) {
		c.slab = make([]byte, 0, max(slabSize, len(b)))
	}
	i := len(c.slab)
	c.slab = append(c.slab, b...)
	return c.slab[i:len(c.slab):len(c.slab)]
}

// The heart-rate service and its measurement characteristic.
var (
	HRSService           = UUID16(HRSUUID)
	HeartRateMeasurement = UUID16(0x2A37)
)

// The serial (Nordic UART) service: the central writes to RX and gets
// notifications of TX.
var (
	NUSService = MustParseUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")
	NUSRX      = MustParseUUID("6e400002-b5a3-f393-e0a9-e50e24dcca9e")
	NUSTX      = MustParseUUID("6e400003-b5a3-f393-e0a9-e50e24dcca9e")
)

// The battery service and its Battery Level characteristic, a uint8
// percent.
var (
	BatteryService = UUID16(0x180F)
	BatteryLevel   = UUID16(0x2A19)
)

// NewBatteryService returns the battery service: its Battery Level reads
// level, the battery's charge in percent (0..100). It does not notify: the
// level is read when the central asks for it.
func NewBatteryService(level func() uint8) *Service {
	return &Service{
		UUID:            BatteryService,
		Characteristics: []Characteristic{{UUID: BatteryLevel, Props: PropRead}},
		Open:            func(*Conn) Handler { return batteryHandler{level} },
	}
}

type batteryHandler struct{ level func() uint8 }

func (batteryHandler) Write(char UUID, _ []byte) error {
	return fmt.Errorf("write to characteristic %s: %w", char, ErrNotPermitted)
}

func (h batteryHandler) Read(UUID) ([]byte, error) { return []byte{min(h.level(), 100)}, nil }

func (batteryHandler) Notifying(UUID, bool) {}
func (batteryHandler) Close()               {}

// AppendHeartRateMeasurement appends a Heart Rate Measurement as the
// heart-rate service notifies it: flags, the rate in beats per minute
// (one byte, or two when it does not fit), and the RR intervals in units
// of 1/1024 s.
func AppendHeartRateMeasurement(dst []byte, d HRSData) []byte {
	bpm := int(d.Average + 0.5)
	bpm = max(0, min(bpm, 0xFFFF))
	var flags byte
	if bpm > 0xFF {
		flags |= 0x01
	}
	if len(d.RRData) > 0 {
		flags |= 0x10
	}
	dst = append(dst, flags)
	if bpm > 0xFF {
		dst = append(dst, byte(bpm), byte(bpm>>8))
	} else {
		dst = append(dst, byte(bpm))
	}
	for _, rr := range d.RRData {
		v := uint16(min(uint32(rr)*1024/1000, 0xFFFF))
		dst = append(dst, byte(v), byte(v>>8))
	}
	return dst
}

// hrsService is the heart-rate service; its notifications switch the
// connection's HRS stream.
func (p *Peripheral) hrsService() *Service {
	return &Service{
		UUID:            HRSService,
		Characteristics: []Characteristic{{UUID: HeartRateMeasurement, Props: PropNotify}},
		Open:            func(c *Conn) Handler { return hrsHandler{p} },
	}
}

type hrsHandler struct{ p *Peripheral }

func (hrsHandler) Write(char UUID, _ []byte) error {
	return fmt.Errorf("write to characteristic %s: %w", char, ErrNotPermitted)
}

func (h hrsHandler) Notifying(_ UUID, on bool) {
	if host := h.p.hosted(); host != nil {
		host.HRSNotifications(on)
	}
}

func (hrsHandler) Close() {}

// nusService is the serial service; what the central writes to RX goes
// to the host's NUSWritten.
func (p *Peripheral) nusService() *Service {
	return &Service{
		UUID: NUSService,
		Characteristics: []Characteristic{
			{UUID: NUSRX, Props: PropWrite | PropWriteNoResponse},
			{UUID: NUSTX, Props: PropNotify},
		},
		Open: func(c *Conn) Handler { return nusHandler{p} },
	}
}

type nusHandler struct{ p *Peripheral }

func (h nusHandler) Write(_ UUID, data []byte) error {
	if host := h.p.hosted(); host != nil {
		host.NUSWritten(data)
	}
	return nil
}

func (nusHandler) Notifying(UUID, bool) {}
func (nusHandler) Close()               {}
