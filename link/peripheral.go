package link

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"senseboard/radio"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// Peripheral is a device's side of the radio link: its radio, which the
// centrals in range scan, connect to and pair with, and the server of its
// sessions, which carries the requests of each connection.
type Peripheral struct {
	// Server serves the device's sessions: the device, the limits of its
	// connections (each stream counts as one) and its timeouts.
	Server *serial.Server
	// Radio is the device's BLE radio.
	Radio *radio.Peripheral
}

// ServeConn serves one stream of the radio link: a central in range of
// the device that scans, connects, pairs and then makes requests over its
// connection, which obeys the device's radio (advertising, one connection
// at a time, pass key, bonding policy). When the connection ends, for
// whatever reason, the device sends Disconnected and closes the stream.
// ServeConn returns when the stream closes or ctx ends.
func (p *Peripheral) ServeConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	rs := &radioSession{p: p, st: p.Server.NewStream(conn), dec: wire.NewDecoder(0)}
	defer rs.close()
	rs.st.Read(rs.feed)
}

// Serve accepts streams of the radio link on ln and serves each until ctx
// ends, each counted against the device's and the program's connection
// limits; it returns after every stream has closed.
func (p *Peripheral) Serve(ctx context.Context, ln net.Listener) error {
	return p.Server.Accept(ctx, ln, func(conn net.Conn) { p.ServeConn(ctx, conn) })
}

// ServeAccepted serves a stream of the radio link that the caller took
// itself (air.Listener.Handle) as Serve serves each: counted against the
// device's and the program's connection limits. It returns when the
// stream closes or ctx ends.
func (p *Peripheral) ServeAccepted(ctx context.Context, conn net.Conn) {
	p.Server.Admit(ctx, conn, serial.StreamConn, func(conn net.Conn) { p.ServeConn(ctx, conn) })
}

// radioSession is one stream of the radio link: the central's hello, its
// connection, and the session its requests go through. Each frame kind has
// a method of its own; frames of an established connection that are not
// the radio's go to the session, as on a serial line.
type radioSession struct {
	p   *Peripheral
	st  *serial.Stream
	dec *wire.Decoder

	// mu is held while a frame is handled, so that the answer to a request
	// that ends the connection goes out before Disconnected.
	mu      sync.Mutex
	central *radio.Central
	link    *radio.Conn     // nil until connect
	cur     *serial.Session // the session of the connection's requests

	out    radioOut       // the sender's: what a connection event carries, gathered
	unsent atomic.Bool    // the device handed out something that send left to the holder of mu
	endOne sync.Once      // starts disconnected
	wg     sync.WaitGroup // disconnected

	gattMu sync.Mutex
	gattOn map[radio.UUID]bool // characteristics switched on with GATTNotify
}

// feed decodes what the stream reads and handles each frame; what the
// device handed the central meanwhile goes out after the answers.
func (rs *radioSession) feed(b []byte) {
	rs.mu.Lock()
	rs.dec.Feed(b, rs.handle)
	if o := rs.dec.Oversized; o.OK {
		rs.dec.Oversized.OK = false
		rs.fail(o.ID, fmt.Errorf("%s frame of %d bytes exceeds the maximum payload of %d bytes", KindName(o.Kind), o.Length, wire.MaxPayload))
	}
	link, cur := rs.link, rs.cur
	rs.mu.Unlock()
	if link != nil && rs.unsent.Load() {
		rs.send(link, cur)
	}
}

// close ends the connection, waits for its Disconnected to be written,
// and ends the session.
func (rs *radioSession) close() {
	rs.mu.Lock()
	link, cur := rs.link, rs.cur
	rs.mu.Unlock()
	if link != nil {
		link.Disconnect()
		// The end's wake-up starts disconnected, on this goroutine or on
		// one that took the wake-up first (a notification's, say): send
		// starts it here unless one did, and returns once it has.
		rs.send(link, cur)
	}
	rs.wg.Wait()
	if cur != nil {
		cur.End()
	}
}

// handle hands a frame to the method of its kind; rs.mu is held.
func (rs *radioSession) handle(f wire.Frame) {
	switch {
	case f.Kind == wire.Hello:
		rs.st.Hello(f)
	case !rs.st.Open():
		rs.st.NoSession(f)
	case f.Kind == wire.Bye:
		rs.st.Close()
	case f.Kind == Scan:
		rs.scan(f)
	case f.Kind == Connect:
		rs.connect(f)
	case rs.link != nil && rs.link.Lost():
		rs.unanswered(f)
	case rs.link == nil:
		rs.fail(f.ID, fmt.Errorf("%s: not connected; scan and connect first", KindName(f.Kind)))
	case f.Kind == Pair:
		rs.pair(f)
	case f.Kind == Encrypt:
		rs.encrypt(f)
	case f.Kind == HRSNotify:
		rs.hrsNotify(f)
	case f.Kind == NUSWrite:
		rs.nusWrite(f)
	case f.Kind == Disconnect:
		rs.link.Disconnect()
	case f.Kind == GATTDiscover:
		rs.gattDiscover(f)
	case f.Kind == GATTMTU:
		rs.gattMTU(f)
	case f.Kind == GATTWrite:
		rs.gattWrite(f)
	case f.Kind == GATTNotify:
		rs.gattNotify(f)
	case f.Kind == GATTRead:
		rs.gattRead(f)
	case f.Kind == Definitions:
		rs.definitions(f)
	case kindNames[f.Kind] != "":
		rs.fail(f.ID, fmt.Errorf("%s frames are not sent to a device", KindName(f.Kind)))
	default:
		rs.cur.Handle(f)
	}
}

// unanswered drops a frame that comes over a lost link (radio.Drop): it
// never reaches the device. A request, or a write that carries one (GSP),
// then times out at the central, and keeps a slot of the device's request
// pool (device.Core.RequestTimedOut).
func (rs *radioSession) unanswered(f wire.Frame) {
	if f.Kind == wire.Request || f.Kind == GATTWrite {
		rs.p.Server.Device.RequestTimedOut()
	}
}

func (rs *radioSession) reply(kind wire.Kind, id uint32, v any) {
	rs.st.Write(wire.JSONFrame(kind, id, v))
}

func (rs *radioSession) fail(id uint32, err error) { rs.st.Write(wire.ErrorFrame(id, err.Error())) }

// payloadForms is the JSON payload each frame kind of the radio that
// carries one wants, as a malformed payload's error shows it.
var payloadForms = map[wire.Kind]string{
	Scan:       `nothing, or {"address": "XX:XX:XX:XX:XX:XX", "power": 1}`,
	Connect:    `{"address": "XX:XX:XX:XX:XX:XX", "name": ...}`,
	Pair:       `{"passKey": "123456", "bond": true}`,
	Encrypt:    `{"key": ...}`,
	HRSNotify:  `{"on": true}`,
	NUSWrite:   `{"data": "<base64>"}`,
	GATTMTU:    `{"mtu": 247}`,
	GATTWrite:  `{"char": "<uuid>", "data": "<base64>"}`,
	GATTNotify: `{"char": "<uuid>", "on": true}`,
	GATTRead:   `{"char": "<uuid>"}`,
}

// decode reads the JSON payload of f into m, and the payload's
// required field when it has one: need reports whether it is there and
// names it. A payload that does not decode, or lacks the field, is answered
// with an Error that names the frame kind and its form, and decode reports
// false.
func (rs *radioSession) decode(f wire.Frame, m any, need func() (bool, string)) bool {
	err := json.Unmarshal(f.Payload, m)
	if err == nil && need != nil {
		if ok, field := need(); !ok {
			err = fmt.Errorf("%s is missing", field)
		}
	}
	if err != nil {
		rs.fail(f.ID, fmt.Errorf("%s: want %s: %v", KindName(f.Kind), payloadForms[f.Kind], err))
		return false
	}
	return true
}

func (rs *radioSession) ack(id uint32) { rs.st.Write(wire.AppendFrame(nil, Ack, id, nil)) }

// done answers a request that carries no result: an Ack, or the error.
func (rs *radioSession) done(id uint32, err error) {
	if err != nil {
		rs.fail(id, err)
		return
	}
	rs.ack(id)
}

func (rs *radioSession) scan(f wire.Frame) {
	if len(f.Payload) > 0 {
		var who ScanMsg
		if !rs.decode(f, &who, nil) {
			return
		}
		if who.Address != "" {
			rs.p.Radio.Heard(who.Address, who.Power)
		}
	}
	m := rs.p.Scan()
	rs.reply(Advert, f.ID, &m)
}

// Scan returns what a scan of the device sees now, as the Advert frame
// answers a Scan: what a central in range hears the radio broadcast,
// without a stream of its own.
func (p *Peripheral) Scan() AdvertMsg {
	m := AdvertMsg{Serial: p.Radio.Serial(), Address: p.Radio.AdvAddress()}
	if pk, ok := p.Radio.Advertising(); ok {
		m.Advertising, m.Adv, m.ScanResp = true, pk.Adv, pk.ScanResp
	}
	return m
}

func (rs *radioSession) connect(f wire.Frame) {
	if rs.link != nil {
		rs.fail(f.ID, fmt.Errorf("connect: this stream is connected already"))
		return
	}
	var m ConnectMsg
	if !rs.decode(f, &m, func() (bool, string) { return m.Address != "", "address" }) {
		return
	}
	rs.p.Radio.Heard(m.Address, m.Power)
	central := radio.NewCentral(m.Address, m.Name)
	central.Interval, central.Power = m.Interval, m.Power
	q := resource.NewQueue(serial.QueueSize)
	link, err := rs.p.Radio.Connect(central, q)
	if err != nil {
		q.Close()
		rs.fail(f.ID, err)
		return
	}
	rs.central, rs.link = central, link
	dev := rs.p.Server.Device
	rs.out = radioOut{rs: rs, link: link}
	var cur *serial.Session
	cur = rs.st.StartSession(q, link.Client(), func(req *resource.Request) (resource.Envelope, error) {
		if err := link.Admit(); err != nil {
			return resource.Envelope{}, err
		}
		return dev.Do(req)
	}, rs.out.gather, func() { rs.send(link, cur) })
	rs.out.cur, rs.cur = cur, cur
	link.WakeWith(func() { rs.send(link, cur) })
	rs.reply(Connected, f.ID, &ConnectedMsg{Handle: link.Handle(), Interval: radio.Grant(link.Params(), m.Interval)})
}

// send is the sender of the connection: called when the device handed
// the central something (see radio.Conn.WakeWith), on the goroutine that
// handed it out (the connection event's, mostly), it writes what waits
// (gather) with the session's Flush: what the device sends over its BLE
// services (heart rate and serial data in frames of their own, the
// notifications of the characteristics the central switched on with
// GATTNotify) and the notifications of the subscriptions of the
// connection's session. What one connection event carries goes in one
// write (one message of the radio link), in order, one write at a time;
// a write that may wait is left to a goroutine of the session's while
// what comes meanwhile waits in the connection, within its limits, and
// that goroutine sends it through here once done (StartSession's again).
// While a frame is handled (mu is held), what its handling hands out
// waits for its answer: feed sends it after. When the connection ends it
// starts disconnected, once.
func (rs *radioSession) send(link *radio.Conn, cur *serial.Session) {
	if link.Err() != nil {
		rs.endOne.Do(func() {
			rs.wg.Add(1)
			go rs.disconnected(link, cur)
		})
		return
	}
	rs.unsent.Store(true)
	for rs.unsent.Load() && rs.mu.TryLock() {
		rs.unsent.Store(false)
		cur.Flush()
		rs.mu.Unlock()
	}
}

// disconnected writes what the device sent before the connection ended
// (the answer to the request that reset it, say) and then Disconnected,
// after every write before, and closes the stream. It waits for the frame
// being handled, so that the answer to a request that ends the
// connection goes out before Disconnected.
func (rs *radioSession) disconnected(link *radio.Conn, cur *serial.Session) {
	defer rs.wg.Done()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	cur.WriteLast(appendJSON(nil, Disconnected, &DisconnectedMsg{Reason: link.Err().Error()}))
	rs.st.Close()
}

// radioOut gathers the frames of what the device sends over its BLE
// services and of its session's notifications.
type radioOut struct {
	rs   *radioSession
	link *radio.Conn
	cur  *serial.Session
	got  radio.Taken
	buf  []byte
}

// gather appends what waits, without waiting, while no connection event
// hands out more: the notifications of the session's subscriptions, then
// what the BLE services sent. The session's flush calls it, one at a time.
func (o *radioOut) gather(buf []byte) []byte {
	o.buf = buf
	o.link.Collect(o.drain)
	buf, o.buf = o.buf, nil
	return buf
}

func (o *radioOut) drain() {
	o.buf = o.cur.AppendNotifications(o.buf)
	o.link.Take(&o.got)
	for _, n := range o.got.Notes {
		o.note(n)
	}
	for _, d := range o.got.HRS {
		o.heartRate(d)
	}
	for _, b := range o.got.NUS {
		o.serial(b)
	}
}

func (o *radioOut) note(n radio.Notification) {
	o.rs.gattMu.Lock()
	on := o.rs.gattOn[n.Char]
	o.rs.gattMu.Unlock()
	if on { // not those a central gets in frames of their own (HRSNotify)
		o.buf = AppendNotification(o.buf, n.Char, n.Data)
	}
}

func (o *radioOut) heartRate(d radio.HRSData) {
	o.buf = appendJSON(o.buf, HRSData, &d)
}

func (o *radioOut) serial(b []byte) {
	o.buf = appendJSON(o.buf, NUSData, &NUSMsg{Data: b})
}

// appendJSON appends a frame of the device's own (id 0) with a JSON
// payload, in place; one that cannot be encoded appends wire.JSONFrame's
// Error.
func appendJSON(b []byte, kind wire.Kind, v any) []byte {
	if out, err := wire.AppendJSONFrame(b, kind, 0, v); err == nil {
		return out
	}
	return append(b, wire.JSONFrame(kind, 0, v)...)
}

func (rs *radioSession) pair(f wire.Frame) {
	var m PairMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	if err := rs.link.Pair(m.PassKey, m.Bond); err != nil {
		rs.fail(f.ID, err)
		return
	}
	var key string
	if m.Bond {
		key, _ = rs.central.Key(rs.p.Radio.Address())
	}
	rs.reply(Paired, f.ID, &PairedMsg{Key: key})
}

func (rs *radioSession) encrypt(f wire.Frame) {
	var m EncryptMsg
	if !rs.decode(f, &m, func() (bool, string) { return m.Key != "", "key" }) {
		return
	}
	rs.central.Remember(rs.p.Radio.Address(), m.Key)
	if err := rs.link.Encrypt(); err != nil {
		rs.fail(f.ID, err)
		return
	}
	rs.reply(Paired, f.ID, &PairedMsg{})
}

func (rs *radioSession) hrsNotify(f wire.Frame) {
	var m HRSNotifyMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	rs.done(f.ID, rs.link.SetHRSNotifications(m.On))
}

func (rs *radioSession) nusWrite(f wire.Frame) {
	var m NUSMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	rs.done(f.ID, rs.link.WriteNUS(m.Data))
}

var propNames = []struct {
	p    radio.Property
	name string
}{{radio.PropRead, "read"}, {radio.PropWrite, "write"}, {radio.PropWriteNoResponse, "write-without-response"}, {radio.PropNotify, "notify"}}

func (rs *radioSession) gattDiscover(f wire.Frame) {
	m := GATTServicesMsg{Services: []GATTService{}}
	for _, s := range rs.p.Radio.Services() {
		ws := GATTService{UUID: s.UUID.String(), Characteristics: []GATTCharacteristic{}}
		for _, c := range s.Characteristics {
			wc := GATTCharacteristic{UUID: c.UUID.String(), Properties: []string{}}
			for _, p := range propNames {
				if c.Props&p.p != 0 {
					wc.Properties = append(wc.Properties, p.name)
				}
			}
			ws.Characteristics = append(ws.Characteristics, wc)
		}
		m.Services = append(m.Services, ws)
	}
	rs.reply(GATTServices, f.ID, &m)
}

func (rs *radioSession) gattMTU(f wire.Frame) {
	var m GATTMTUMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	rs.done(f.ID, rs.link.SetMTU(m.MTU))
}

func (rs *radioSession) gattWrite(f wire.Frame) {
	var m GATTWriteMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	char, err := radio.ParseUUID(m.Char)
	if err == nil {
		err = rs.link.Write(char, m.Data)
	}
	rs.done(f.ID, err)
}

func (rs *radioSession) gattNotify(f wire.Frame) {
	var m GATTNotifyMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	char, err := radio.ParseUUID(m.Char)
	if err == nil {
		err = rs.link.SetNotify(char, m.On)
	}
	if err != nil {
		rs.fail(f.ID, err)
		return
	}
	rs.gattMu.Lock()
	if rs.gattOn == nil {
		rs.gattOn = map[radio.UUID]bool{}
	}
	rs.gattOn[char] = m.On
	rs.gattMu.Unlock()
	rs.ack(f.ID)
}

func (rs *radioSession) gattRead(f wire.Frame) {
	var m GATTReadMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	char, err := radio.ParseUUID(m.Char)
	var data []byte
	if err == nil {
		data, err = rs.link.Read(char)
	}
	if err != nil {
		rs.fail(f.ID, err)
		return
	}
	rs.reply(GATTValue, f.ID, &GATTValueMsg{Char: char.String(), Data: data})
}
