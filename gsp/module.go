// Package gsp is the in-device module that serves the GATT SensorData
// Protocol of the sensor family (as of firmware 2.3): the binary command
// and notification format that clients which are not phones (Python bleak
// scripts, Web Bluetooth apps, Linux gateways) use. The frames are package
// gspwire's, the binary form of resource content package content's.
//
// The Module is an app (package app) built on the device's in-device
// application interface, as the firmware builds it; a Conn is one
// central's connection to it, with its MTU. docs/gsp.md describes the
// protocol and every choice this implementation makes.
package gsp

import (
	"encoding/binary"
	"strconv"
	"sync"
	"sync/atomic"

	"senseboard/app"
	"senseboard/content"
	"senseboard/device"
	"senseboard/gsp/gspwire"
	"senseboard/logbook"
	"senseboard/provider/info"
	"senseboard/resource"
)

// FirmwareVersion is the firmware release whose GSP layouts and behaviour
// this package follows; HELLO reports it as the app version.
const FirmwareVersion = "2.3.0"

// Name is the module's name in /Info/App and the app's name.
const Name = "GattSensorData"

// StatusAccepted is the status of PUT_SYSTEMMODE when the device takes the
// mode change, as the firmware answers it.
const StatusAccepted resource.Status = 202

// StatusNoBinaryForm is the status of a GET whose content has no binary
// form (a record the firmware serves in JSON alone, an array longer than
// its uint8 count can say): 406 Not Acceptable, with no data, so that a
// client tells it apart from a 200 whose content is empty. The device
// answers 406 for nothing else (docs/gsp.md).
const StatusNoBinaryForm resource.Status = 406

// MaxSubscriptions is how many streams one connection may subscribe to at
// once; one more is answered with 507, as the firmware answers when its
// subscription slots are taken.
const MaxSubscriptions = 8

// Module is the GSP module inside a device: an app.App that serves the
// protocol's commands through the device's resources. Run it with app.Run
// and connect centrals with Connect.
type Module struct {
	ctx atomic.Pointer[app.Context]

	mu    sync.Mutex
	conns map[*Conn]bool
}

// New returns a module that is not running yet.
func New() *Module { return &Module{conns: map[*Conn]bool{}} }

// Name implements app.App.
func (m *Module) Name() string { return Name }

// Start implements app.App.
func (m *Module) Start(ctx *app.Context) error {
	m.ctx.Store(ctx)
	// A reset ends every stream and transfer: connections stay, their
	// subscriptions and what they had still to send go.
	m.mu.Lock()
	for c := range m.conns {
		c.subs = map[uint8]*app.Subscription{}
		c.pending, c.waiting = nil, false
	}
	m.mu.Unlock()
	return nil
}

// layout is the binary form of content that the device's profile asks for.
func layout(ctx *app.Context) content.Layout {
	return content.Layout{TempMeasurementFirst: ctx.Device().Profile().Binary.TempMeasurementFirst()}
}

func helloPayload(di *info.DeviceInfo, ctx *app.Context) []byte {
	p := ctx.Device().Profile()
	serial, product, dfu := p.Serial, p.Product.Name, ""
	if di != nil {
		serial, product = di.Serial, di.ProductName
		for _, a := range di.AddressInfo {
			if a.Name == "DFU-BLE" {
				dfu = a.Address
			}
		}
	}
	b := []byte{gspwire.ProtocolVersion}
	for _, s := range []string{serial, product, dfu, p.App.Name, FirmwareVersion} {
		b = append(append(b, s...), 0)
	}
	return b
}

// Link carries a connection's notifications to the central.
type Link interface {
	// Notify sends the parts of one notification of sub's stream, all or
	// none, and reports false when it lost them, as the radio loses
	// stream data it has no room for; the module counts that loss on sub
	// (Lost). A link with a transmit queue lets at most sub.Topic.Limit
	// (when positive) of sub's notifications wait in it, as the radio
	// link does for the ECG front end's buffer; a loss after it took them
	// (a central that does not read) it counts on sub itself.
	Notify(sub *resource.Subscription, parts [][]byte) bool
	// TryNotify sends a notification that must not be lost (command
	// responses, log data), or sends nothing and reports false when the
	// link has no room for it now. The connection's Drop waits for it to
	// return, so it must not call Drop.
	TryNotify(b []byte) bool
	// WhenRoom calls f once, when the link may have room again (or has
	// closed). f must not block.
	WhenRoom(f func())
}

// NotifyFunc is a Link without limits: every notification goes to the
// function at once.
type NotifyFunc func([]byte)

// Notify implements Link; it loses nothing.
func (f NotifyFunc) Notify(_ *resource.Subscription, parts [][]byte) bool {
	for _, b := range parts {
		f(b)
	}
	return true
}

// TryNotify implements Link; it always has room.
func (f NotifyFunc) TryNotify(b []byte) bool { f(b); return true }

// WhenRoom implements Link; it calls f at once.
func (f NotifyFunc) WhenRoom(g func()) { g() }

// Connect opens a connection of a central with the given ATT MTU (0 means
// gspwire.DefaultMTU) over a link. The link receives each notification of
// the data characteristic, at most gspwire.MaxNotification(mtu) bytes, on the
// module's goroutine, in order; it must not block for long and must not
// keep the slice. Stream data goes out with Notify; command responses and
// log data go out with TryNotify, in order, waiting for room as the
// firmware's flow-controlled transfers do, so a log fetch never loses a
// chunk however slow the link.
func (m *Module) Connect(mtu int, link Link) *Conn {
	c := &Conn{m: m, link: link, subs: map[uint8]*app.Subscription{}}
	c.SetMTU(mtu)
	m.mu.Lock()
	m.conns[c] = true
	m.mu.Unlock()
	return c
}

// Conn is one central's connection to the GSP service.
type Conn struct {
	m      *Module
	mtu    atomic.Int32
	link   Link
	closed atomic.Bool
	gen    atomic.Uint32 // counts Drop: what was queued before the last is not sent
	sendMu sync.Mutex    // held over a send and its check of gen (send), and by Drop

	// owned by the app goroutine
	subs    map[uint8]*app.Subscription
	buf     []byte
	out     []byte
	pending []outgoing // what must not be lost, in order; the first may be partly sent
	waiting bool       // a WhenRoom callback is due
	split   gspwire.Splitter
}

// outgoing is a notification that must not be lost, or a log being fetched.
type outgoing struct {
	note  []byte // a response
	ref   uint8  // a fetch: its reference,
	log   []byte // the log's bytes
	off   int    // and how many were sent
	fetch bool
	gen   uint32 // Conn.gen when it was queued
}

// SetMTU sets the connection's ATT MTU; values below gspwire.MinMTU count
// as gspwire.MinMTU and 0 as gspwire.DefaultMTU.
func (c *Conn) SetMTU(mtu int) {
	switch {
	case mtu == 0:
		mtu = gspwire.DefaultMTU
	case mtu < gspwire.MinMTU:
		mtu = gspwire.MinMTU
	case mtu > 65535:
		mtu = 65535
	}
	c.mtu.Store(int32(mtu))
}

// MTU returns the connection's ATT MTU.
func (c *Conn) MTU() int { return int(c.mtu.Load()) }

// Write is a write to the command characteristic: one command. It returns
// at once; the answer comes as notifications. A write while the module is
// not running (the device is off or resetting) is dropped, as the radio
// drops it on the hardware.
func (c *Conn) Write(cmd []byte) {
	ctx := c.m.ctx.Load()
	if ctx == nil || c.closed.Load() {
		return
	}
	cmd = append([]byte(nil), cmd...)
	ctx.Run(func() { c.handle(ctx, cmd) })
}

// Drop drops what the connection had still to send and must not lose: a
// FETCH_LOG's data, a log read by subscription, answers that wait for room.
// It takes effect at once, on the caller's goroutine, once a send under
// way has ended: nothing queued before it goes out after it returns.
// Streams go on. The GATT service calls it when the central switches the
// data characteristic's notifications off, as the firmware's sends then
// fail, so that none goes out once the central switches them on again.
func (c *Conn) Drop() {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.gen.Add(1)
}

// Close ends the connection: its streams are unsubscribed, as the firmware
// does when the central disconnects.
func (c *Conn) Close() {
	if c.closed.Swap(true) {
		return
	}
	c.m.mu.Lock()
	delete(c.m.conns, c)
	c.m.mu.Unlock()
	if ctx := c.m.ctx.Load(); ctx != nil {
		ctx.Run(func() {
			for ref, s := range c.subs {
				s.Unsubscribe(nil)
				delete(c.subs, ref)
			}
		})
	}
}

// sendStream sends a stream notification's payload of sub in parts of the
// MTU, all or none; what the link loses is counted on sub.
func (c *Conn) sendStream(sub *resource.Subscription, ref uint8, payload []byte) {
	if c.closed.Load() {
		return
	}
	if !c.link.Notify(sub, c.split.Split(c.MTU(), ref, payload)) && sub != nil {
		sub.Lost()
	}
}

// reliable queues a notification that must not be lost, cut to one
// notification, and sends what the link has room for.
func (c *Conn) reliable(ctx *app.Context, b []byte) {
	if n := gspwire.MaxNotification(c.MTU()); len(b) > n {
		b = b[:n]
	}
	c.pending = append(c.pending, outgoing{note: append([]byte(nil), b...), gen: c.gen.Load()})
	c.pump(ctx)
}

// pump sends the pending notifications in order while the link has room,
// and asks to be called again when it has none. It runs on the app's
// goroutine.
func (c *Conn) pump(ctx *app.Context) {
	for len(c.pending) > 0 && !c.closed.Load() {
		o := &c.pending[0]
		b, n := o.note, 0
		if o.fetch {
			b, n = c.chunk(o)
		}
		sent, dropped := c.send(o.gen, b)
		if dropped {
			c.pending[0] = outgoing{}
			c.pending = c.pending[1:]
			continue
		}
		if !sent {
			if !c.waiting {
				c.waiting = true
				c.link.WhenRoom(func() {
					ctx.Run(func() {
						c.waiting = false
						c.pump(ctx)
					})
				})
			}
			return
		}
		if o.off += n; n > 0 {
			continue
		}
		c.pending[0] = outgoing{}
		c.pending = c.pending[1:]
	}
	if len(c.pending) == 0 {
		c.pending = nil
	}
}

// send sends b with TryNotify unless what was queued at gen was dropped
// since (Drop), and reports which.
func (c *Conn) send(gen uint32, b []byte) (sent, dropped bool) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if gen != c.gen.Load() {
		return false, true
	}
	return c.link.TryNotify(b), false
}

// chunk returns a fetch's next DATA notification, [Data, ref, offset
// uint32, bytes...], and how many of the log's bytes it carries: none in
// the last, whose offset alone (the log's size) marks the end.
func (c *Conn) chunk(o *outgoing) (b []byte, n int) {
	room := gspwire.MaxNotification(c.MTU()) - 2 - 4
	n = min(room, len(o.log)-o.off)
	b = append(c.out[:0], gspwire.Data, o.ref)
	b = binary.LittleEndian.AppendUint32(b, uint32(o.off))
	b = append(b, o.log[o.off:o.off+n]...)
	c.out = b
	return b, n
}

// respond sends COMMAND_RESPONSE with status and data, cut to one notification.
func (c *Conn) respond(ctx *app.Context, ref uint8, status resource.Status, data []byte) {
	b := append(c.out[:0], gspwire.CommandResponse, ref)
	b = binary.LittleEndian.AppendUint16(b, uint16(status))
	b = append(b, data...)
	c.out = b
	c.reliable(ctx, b)
}

func (c *Conn) handle(ctx *app.Context, raw []byte) {
	cmd, err := gspwire.ParseCommand(raw)
	if err != nil {
		ce := err.(*gspwire.CommandError)
		if ce.HasRef {
			ctx.Logf(device.LevelWarning, "%v", err) // the error names the protocol
			c.respond(ctx, ce.Ref, resource.StatusBadRequest, nil)
		}
		return
	}
	done := func(env resource.Envelope) { c.respond(ctx, cmd.Ref, env.Status, nil) }
	switch cmd.Code {
	case gspwire.Hello:
		ctx.Get("/Info", func(env resource.Envelope) {
			di, _ := env.Content.(*info.DeviceInfo)
			b := append(c.out[:0], gspwire.CommandResponse, cmd.Ref)
			b = append(b, helloPayload(di, ctx)...)
			c.out = b
			c.reliable(ctx, b)
		})
	case gspwire.Subscribe:
		c.subscribe(ctx, cmd)
	case gspwire.Unsubscribe:
		s := c.subs[cmd.Ref]
		if s == nil {
			c.respond(ctx, cmd.Ref, resource.StatusNotFound, nil)
			return
		}
		delete(c.subs, cmd.Ref)
		s.Unsubscribe(done)
	case gspwire.Get:
		ctx.Get(cmd.Path, func(env resource.Envelope) {
			var data []byte
			if _, ok := env.Content.(*info.AppInfo); !ok { // the firmware answers /Info/App with 200 alone
				var err error
				if data, err = layout(ctx).Append(nil, env.Content); err != nil {
					data, env.Status = nil, StatusNoBinaryForm
				}
			}
			c.respond(ctx, cmd.Ref, env.Status, data)
		})
	case gspwire.FetchLog:
		c.fetch(ctx, cmd)
	case gspwire.ClearLogbook:
		ctx.Delete("/Mem/Logbook/Entries", done)
	case gspwire.PutDataLoggerConfig:
		entries := make([]logbook.DataEntry, len(cmd.Paths))
		for i, p := range cmd.Paths {
			entries[i].Path = p
		}
		v, err := resource.Record("DataLoggerConfig", logbook.Config{DataEntries: logbook.DataEntries{DataEntry: entries}})
		if err != nil {
			c.respond(ctx, cmd.Ref, resource.StatusBadRequest, nil)
			return
		}
		ctx.Put("/Mem/DataLogger/Config", done, v)
	case gspwire.PutSystemMode:
		// The firmware answers a mode change with 202 Accepted: the switch
		// happens after the answer, and clients check for it.
		ctx.Put("/System/Mode", func(env resource.Envelope) {
			if env.Status.OK() {
				env.Status = StatusAccepted
			}
			done(env)
		}, resource.Uint8(cmd.Value))
	case gspwire.PutUTCTime:
		ctx.Put("/Time", done, resource.Int64(int64(cmd.Time)))
	case gspwire.PutDataLoggerState:
		ctx.Put("/Mem/DataLogger/State", done, resource.Uint8(cmd.Value))
	}
}

func (c *Conn) subscribe(ctx *app.Context, cmd gspwire.Command) {
	if c.subs[cmd.Ref] != nil {
		c.respond(ctx, cmd.Ref, resource.StatusConflict, nil)
		return
	}
	if len(c.subs) >= MaxSubscriptions {
		c.respond(ctx, cmd.Ref, resource.StatusInsufficientStorage, nil)
		return
	}
	ref := cmd.Ref
	var s *app.Subscription
	// Notifications can reach the app before the answer does (a log read
	// by subscription starts at once); they wait for it, so that the
	// answer comes first, as clients that take the next notification for
	// the answer need. The subscription borrows its notifications
	// (app.Subscription.Borrow): deliver encodes what it sends at once,
	// and those that wait hold their content until delivered.
	var early []any
	answered := false
	s = ctx.Subscribe(cmd.Path, func(v any) {
		switch {
		case c.subs[ref] != s:
		case !answered:
			if r, ok := v.(resource.Recyclable); ok {
				r.Hold()
			}
			early = append(early, v)
		default:
			c.deliver(ctx, s, ref, v)
		}
	}, func(env resource.Envelope) {
		if !env.Status.OK() && c.subs[ref] == s {
			delete(c.subs, ref)
		}
		st := env.Status
		if st.OK() {
			// Clients take 200 alone as success; the firmware answers 200
			// for /Meas/HR too, where the device's own answer is 204
			// until the first interval is known.
			st = resource.StatusOK
		}
		c.respond(ctx, ref, st, nil)
		answered = true
		for _, v := range early {
			if c.subs[ref] == s {
				c.deliver(ctx, s, ref, v)
			}
			resource.Release(v)
		}
		early = nil
	})
	s.Borrow()
	c.subs[ref] = s
}

// deliver sends one notification of the subscription s on ref.
func (c *Conn) deliver(ctx *app.Context, s *app.Subscription, ref uint8, v any) {
	if lc, ok := v.(logChunk); ok {
		c.sendLogChunk(ctx, ref, lc.LogOffset(), lc.Bytes())
		return
	}
	payload, err := layout(ctx).Append(c.buf[:0], v)
	if err != nil {
		return
	}
	c.buf = payload
	c.sendStream(s.Resource(), ref, payload)
}

// logChunk is a notification of a subscription to a log's data
// (/Mem/Logbook/byId/{LogId}/Data): the log's bytes from an offset; no
// bytes mark the end.
type logChunk interface {
	LogOffset() uint32
	Bytes() []byte
}

// sendLogChunk sends a log's bytes from off as the firmware does for a
// subscription to a log's data: notifications of [offset uint32, bytes],
// each with the offset of its own first byte, DATA for the first and
// DATA_PART2 for the rest (never DATA_PART3: every part stands alone, and
// clients read log data from codes 2 and 3). No bytes is one DATA with the
// offset alone, the end mark. Log data must not be lost: the parts wait for
// room on the link, as FETCH_LOG's do.
func (c *Conn) sendLogChunk(ctx *app.Context, ref uint8, off uint32, data []byte) {
	room := gspwire.MaxNotification(c.MTU()) - 2 - 4
	code := byte(gspwire.Data)
	for first := true; first || len(data) > 0; first = false {
		n := min(room, len(data))
		b := append(c.out[:0], code, ref)
		b = binary.LittleEndian.AppendUint32(b, off)
		b = append(b, data[:n]...)
		c.out = b
		c.reliable(ctx, b)
		data, off, code = data[n:], off+uint32(n), gspwire.DataPart2
	}
}

// logBytes is the content of GET /Mem/Logbook/byId/{LogId}/Data.
type logBytes interface{ Bytes() []byte }

// fetch answers FETCH_LOG: the status, then DATA notifications of
// [offset uint32, bytes...] and a last one with the offset alone (the log's
// size) that marks the end, each sent when the link has room for it.
func (c *Conn) fetch(ctx *app.Context, cmd gspwire.Command) {
	path := "/Mem/Logbook/byId/" + strconv.FormatUint(uint64(cmd.LogID), 10) + "/Data"
	ctx.Get(path, func(env resource.Envelope) {
		lb, ok := env.Content.(logBytes)
		if !env.Status.OK() || !ok {
			st := env.Status
			if st.OK() {
				st = resource.StatusInternalServerError
			}
			c.respond(ctx, cmd.Ref, st, nil)
			return
		}
		c.respond(ctx, cmd.Ref, resource.StatusOK, nil)
		c.pending = append(c.pending, outgoing{fetch: true, ref: cmd.Ref, log: lb.Bytes(), gen: c.gen.Load()})
		c.pump(ctx)
	})
}
