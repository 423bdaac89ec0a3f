package serial

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"

	"senseboard/radio"
	"senseboard/resource"
	"senseboard/wire"
)

// ServeRadio serves one stream of the radio link: a central in range of
// the device that scans, connects, pairs and then makes requests over its
// connection, which obeys the device's radio (advertising, one connection
// at a time, pass key, bonding policy). When the connection ends, for
// whatever reason, the device sends Disconnected and closes the stream.
// ServeRadio returns when the stream closes or ctx ends.
func (s *Server) ServeRadio(ctx context.Context, conn net.Conn, r *radio.Peripheral) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	rs := &radioSession{srv: s, radio: r, conn: conn, w: &lockedWriter{w: conn}, dec: wire.NewDecoder(0), stop: make(chan struct{})}
	defer rs.close()
	sr := silence(conn, func() bool {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return rs.hello
	}, s.HelloTimeout, s.IdleTimeout)
	readFrames(sr, rs.feed)
	sr.closeSilent(rs.w)
	return nil
}

// ServeRadios accepts streams of the radio link on ln and serves each until
// ctx ends; it returns after every stream has closed.
func (s *Server) ServeRadios(ctx context.Context, ln net.Listener, r *radio.Peripheral) error {
	return s.accept(ctx, ln, func(conn net.Conn) { s.ServeRadio(ctx, conn, r) })
}

// radioSession is one stream of the radio link: the central's hello, its
// connection, and the session its requests go through. Each frame kind has
// a method of its own; frames of an established connection that are not
// the radio's go to the session, as on a serial line.
type radioSession struct {
	srv   *Server
	radio *radio.Peripheral
	conn  net.Conn
	w     *lockedWriter
	dec   *wire.Decoder

	// mu is held while a frame is handled, so that the answer to a request
	// that ends the connection goes out before Disconnected.
	mu      sync.Mutex
	hello   bool
	central *radio.Central
	link    *radio.Conn // nil until connect
	cur     *session    // the session of the connection's requests

	stop chan struct{}  // closed to stop forward
	wg   sync.WaitGroup // forward

	gattMu sync.Mutex
	gattOn map[radio.UUID]bool // characteristics switched on with GATTNotify
}

// feed decodes what the stream reads and handles each frame.
func (rs *radioSession) feed(b []byte) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.dec.Feed(b, rs.handle)
	reportOversized(rs.dec, rs.w)
}

// close ends the connection, stops forward and waits for it, and ends the
// session.
func (rs *radioSession) close() {
	rs.mu.Lock()
	link, cur := rs.link, rs.cur
	rs.mu.Unlock()
	if link != nil {
		link.Disconnect()
	}
	close(rs.stop)
	rs.wg.Wait()
	if cur != nil {
		cur.end()
	}
}

// handle hands a frame to the method of its kind; rs.mu is held.
func (rs *radioSession) handle(f wire.Frame) {
	switch {
	case f.Kind == wire.Hello:
		rs.sayHello(f)
	case !rs.hello:
		noSession(rs.w, f)
	case f.Kind == wire.Bye:
		rs.conn.Close()
	case f.Kind == wire.Scan:
		rs.scan(f)
	case f.Kind == wire.Connect:
		rs.connect(f)
	case rs.link == nil:
		rs.fail(f.ID, fmt.Errorf("%s: not connected; scan and connect first", f.Kind))
	case f.Kind == wire.Pair:
		rs.pair(f)
	case f.Kind == wire.Encrypt:
		rs.encrypt(f)
	case f.Kind == wire.HRSNotify:
		rs.hrsNotify(f)
	case f.Kind == wire.NUSWrite:
		rs.nusWrite(f)
	case f.Kind == wire.Disconnect:
		rs.link.Disconnect()
	case f.Kind == wire.GATTDiscover:
		rs.gattDiscover(f)
	case f.Kind == wire.GATTMTU:
		rs.gattMTU(f)
	case f.Kind == wire.GATTWrite:
		rs.gattWrite(f)
	case f.Kind == wire.GATTNotify:
		rs.gattNotify(f)
	case f.Kind == wire.GATTRead:
		rs.gattRead(f)
	case f.Kind == wire.Definitions:
		rs.definitions(f)
	default:
		rs.cur.handle(f)
	}
}

func (rs *radioSession) reply(kind wire.Kind, id uint32, v any) { rs.w.Write(jsonFrame(kind, id, v)) }

func (rs *radioSession) fail(id uint32, err error) { rs.w.Write(errorFrame(id, err.Error())) }

// payloadForms is the JSON payload each frame kind of the radio that
// carries one wants, as a malformed payload's error shows it.
var payloadForms = map[wire.Kind]string{
	wire.Connect:    `{"address": "XX:XX:XX:XX:XX:XX", "name": ...}`,
	wire.Pair:       `{"passKey": "123456", "bond": true}`,
	wire.Encrypt:    `{"key": ...}`,
	wire.HRSNotify:  `{"on": true}`,
	wire.NUSWrite:   `{"data": "<base64>"}`,
	wire.GATTMTU:    `{"mtu": 247}`,
	wire.GATTWrite:  `{"char": "<uuid>", "data": "<base64>"}`,
	wire.GATTNotify: `{"char": "<uuid>", "on": true}`,
	wire.GATTRead:   `{"char": "<uuid>"}`,
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
		rs.fail(f.ID, fmt.Errorf("%s: want %s: %v", f.Kind, payloadForms[f.Kind], err))
		return false
	}
	return true
}

func (rs *radioSession) ack(id uint32) { rs.w.Write(wire.AppendFrame(nil, wire.Ack, id, nil)) }

// done answers a request that carries no result: an Ack, or the error.
func (rs *radioSession) done(id uint32, err error) {
	if err != nil {
		rs.fail(id, err)
		return
	}
	rs.ack(id)
}

func (rs *radioSession) sayHello(f wire.Frame) {
	h, ok := greet(rs.w, f)
	if !ok {
		return
	}
	rs.hello = true
	rs.w.Write(rs.srv.welcome(h.Session))
}

func (rs *radioSession) scan(f wire.Frame) {
	m := wire.AdvertMsg{Serial: rs.radio.Serial(), Address: rs.radio.Address()}
	if p, ok := rs.radio.Advertising(); ok {
		m.Advertising, m.Adv, m.ScanResp = true, p.Adv, p.ScanResp
	}
	rs.reply(wire.Advert, f.ID, &m)
}

func (rs *radioSession) connect(f wire.Frame) {
	if rs.link != nil {
		rs.fail(f.ID, fmt.Errorf("connect: this stream is connected already"))
		return
	}
	var m wire.ConnectMsg
	if !rs.decode(f, &m, func() (bool, string) { return m.Address != "", "address" }) {
		return
	}
	central := radio.NewCentral(m.Address, m.Name)
	central.Interval = m.Interval
	q := resource.NewQueue(QueueSize)
	link, err := rs.radio.Connect(central, q)
	if err != nil {
		q.Close()
		rs.fail(f.ID, err)
		return
	}
	rs.central, rs.link = central, link
	dev := rs.srv.Device
	rs.cur = startSession(rs.srv.log(), dev, rs.w, "", q, link.Client(), func(req *resource.Request) (resource.Envelope, error) {
		if err := link.Admit(); err != nil {
			return resource.Envelope{}, err
		}
		return dev.Do(req)
	})
	rs.cur.onBroken = func() { rs.conn.Close() }
	rs.wg.Add(1)
	go rs.forward(link)
	rs.reply(wire.Connected, f.ID, &wire.ConnectedMsg{Handle: link.Handle(), Interval: radio.Grant(link.Params(), m.Interval)})
}

// forward sends what the device sends over its BLE services to the
// central (heart rate and serial data in their frames of their own, and
// the notifications of the characteristics it switched on with
// GATTNotify), and Disconnected when the connection ends, which also
// closes the stream. What one connection event carries goes in one write
// (one message of the radio link). It exits when the connection ends, or
// when close stops it.
func (rs *radioSession) forward(link *radio.Conn) {
	defer rs.wg.Done()
	out := radioOut{rs: rs, hrs: link.HRS(), nus: link.NUS(), notes: link.Notifications()}
	for {
		out.buf = out.buf[:0]
		select {
		case n, ok := <-out.notes:
			out.note(n, ok)
		case d, ok := <-out.hrs:
			out.heartRate(d, ok)
		case b, ok := <-out.nus:
			out.serial(b, ok)
		case <-link.Done():
			rs.mu.Lock()
			defer rs.mu.Unlock()
			rs.reply(wire.Disconnected, 0, &wire.DisconnectedMsg{Reason: link.Err().Error()})
			rs.conn.Close()
			return
		case <-rs.stop:
			return
		}
		link.Collect(out.drain)
		if len(out.buf) > 0 {
			rs.w.Write(out.buf)
		}
	}
}

// radioOut gathers the frames of what the device sends over its BLE
// services; a closed channel is set to nil.
type radioOut struct {
	rs    *radioSession
	hrs   <-chan radio.HRSData
	nus   <-chan []byte
	notes <-chan radio.Notification
	buf   []byte
}

// drain gathers what waits, without waiting.
func (o *radioOut) drain() {
	for {
		select {
		case n, ok := <-o.notes:
			o.note(n, ok)
		case d, ok := <-o.hrs:
			o.heartRate(d, ok)
		case b, ok := <-o.nus:
			o.serial(b, ok)
		default:
			return
		}
	}
}

func (o *radioOut) note(n radio.Notification, ok bool) {
	if !ok {
		o.notes = nil
		return
	}
	o.rs.gattMu.Lock()
	on := o.rs.gattOn[n.Char]
	o.rs.gattMu.Unlock()
	if on { // not those a central gets in frames of their own (HRSNotify)
		o.buf = appendJSON(o.buf, wire.GATTNotification, &wire.GATTNotificationMsg{Char: n.Char.String(), Data: n.Data})
	}
}

func (o *radioOut) heartRate(d radio.HRSData, ok bool) {
	if !ok {
		o.hrs = nil
		return
	}
	o.buf = appendJSON(o.buf, wire.HRSData, &d)
}

func (o *radioOut) serial(b []byte, ok bool) {
	if !ok {
		o.nus = nil
		return
	}
	o.buf = appendJSON(o.buf, wire.NUSData, &wire.NUSMsg{Data: b})
}

// appendJSON appends a frame of the device's own (id 0) with a JSON
// payload, in place; one that cannot be encoded appends jsonFrame's Error.
func appendJSON(b []byte, kind wire.Kind, v any) []byte {
	if out, err := wire.AppendJSONFrame(b, kind, 0, v); err == nil {
		return out
	}
	return append(b, jsonFrame(kind, 0, v)...)
}

func (rs *radioSession) pair(f wire.Frame) {
	var m wire.PairMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	if err := rs.link.Pair(m.PassKey, m.Bond); err != nil {
		rs.fail(f.ID, err)
		return
	}
	var key string
	if m.Bond {
		key, _ = rs.central.Key(rs.radio.Address())
	}
	rs.reply(wire.Paired, f.ID, &wire.PairedMsg{Key: key})
}

func (rs *radioSession) encrypt(f wire.Frame) {
	var m wire.EncryptMsg
	if !rs.decode(f, &m, func() (bool, string) { return m.Key != "", "key" }) {
		return
	}
	rs.central.Remember(rs.radio.Address(), m.Key)
	if err := rs.link.Encrypt(); err != nil {
		rs.fail(f.ID, err)
		return
	}
	rs.reply(wire.Paired, f.ID, &wire.PairedMsg{})
}

func (rs *radioSession) hrsNotify(f wire.Frame) {
	var m wire.HRSNotifyMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	rs.done(f.ID, rs.link.SetHRSNotifications(m.On))
}

func (rs *radioSession) nusWrite(f wire.Frame) {
	var m wire.NUSMsg
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
	m := wire.GATTServicesMsg{Services: []wire.GATTService{}}
	for _, s := range rs.radio.Services() {
		ws := wire.GATTService{UUID: s.UUID.String(), Characteristics: []wire.GATTCharacteristic{}}
		for _, c := range s.Characteristics {
			wc := wire.GATTCharacteristic{UUID: c.UUID.String(), Properties: []string{}}
			for _, p := range propNames {
				if c.Props&p.p != 0 {
					wc.Properties = append(wc.Properties, p.name)
				}
			}
			ws.Characteristics = append(ws.Characteristics, wc)
		}
		m.Services = append(m.Services, ws)
	}
	rs.reply(wire.GATTServices, f.ID, &m)
}

func (rs *radioSession) gattMTU(f wire.Frame) {
	var m wire.GATTMTUMsg
	if !rs.decode(f, &m, nil) {
		return
	}
	rs.done(f.ID, rs.link.SetMTU(m.MTU))
}

func (rs *radioSession) gattWrite(f wire.Frame) {
	var m wire.GATTWriteMsg
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
	var m wire.GATTNotifyMsg
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
	var m wire.GATTReadMsg
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
	rs.reply(wire.GATTValue, f.ID, &wire.GATTValueMsg{Char: char.String(), Data: data})
}
