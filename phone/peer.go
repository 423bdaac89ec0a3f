package phone

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"senseboard/air"
	"senseboard/client"
	"senseboard/link"
	"senseboard/radio"
)

// peer is a device the phone sees: the peer of its connections, with
// the state of its link, its streams and what the phone knows of it.
type peer struct {
	ph     *Phone
	serial string
	p      Peripheral

	opMu    sync.Mutex // serializes what changes the link: scan, connect, pair, disconnect
	scanned uint32     // the phone's Bluetooth power cycles at the device's last scan over a stream; under opMu

	mu        sync.Mutex // guards what follows; never held across a round trip
	link      *link.Conn // the open stream of the radio link, nil when none
	adv       link.AdvertMsg
	connected bool
	handle    uint16
	encrypted bool
	want      bool   // connect when the device advertises
	leaving   bool   // the phone is disconnecting on a user's word
	releasing bool   // the phone is releasing the device: nobody used it for Idle, or its GSP client left
	released  string // the note of the release under way
	lastUse   time.Time
	inUse     int // requests and connects under way
	note      string
	gone      bool
	streams   map[string]*stream // by key (see stream)
	defs      *Definitions       // the device's definitions as last learnt; nil until asked
	gsp       *GSP               // the GSP client, nil when none
}

func (d *peer) isConnected() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.connected
}

// current returns the open stream, or nil.
func (d *peer) current() *link.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.link
}

// state describes the device.
func (d *peer) state() DeviceState {
	d.mu.Lock()
	adv, _ := radio.ParseAdvertisement(d.adv.Adv, d.adv.ScanResp) // a packet that does not parse says nothing
	s := DeviceState{Serial: d.serial, Name: adv.Name, Address: d.adv.Address, Local: d.p.Inject != nil,
		Advertising: d.adv.Advertising && !d.connected, Connected: d.connected, PassKey: adv.PassKey, HRS: adv.HRS,
		Encrypted: d.encrypted, AutoConnect: d.want, Note: d.note,
		Adv: fmt.Sprintf("%X", d.adv.Adv), ScanResp: fmt.Sprintf("%X", d.adv.ScanResp)}
	if d.connected {
		h := d.handle
		s.Handle = &h
	}
	gone := d.gone
	s.Streams = []string{}
	for _, st := range d.streams {
		if st.live {
			s.Streams = append(s.Streams, st.uri)
		}
	}
	d.mu.Unlock()
	sort.Strings(s.Streams)
	switch {
	case gone: // what it last said of itself no longer holds
		s.State, s.Advertising, s.Connected, s.Handle = "gone", false, false, nil
	case adv.UpdateMode() && s.Advertising:
		s.State, s.UpdateMode = "update mode", true
	case s.Connected:
		s.State = "connected"
	case s.Advertising:
		s.State = "advertising"
	default:
		s.State = "not advertising"
	}
	_, s.Bonded = d.ph.key(s.Address)
	return s
}

// publish tells the watchers the device's state.
func (d *peer) publish() {
	s := d.state()
	ph := d.ph
	ph.mu.Lock()
	defer ph.mu.Unlock()
	for w := range ph.watchers {
		if w.State != nil {
			w.State(s)
		}
	}
}

// unnamed words an error of the device's link for its note, which is shown
// beside the device, or in an error that names it: without the name the
// link, or the carrier that dialled it, puts before its words ("device
// 000777: ", "air: device 000777: "), and as "the device" where the
// device's own words name it ("device 000777 is not advertising"). It
// takes out the first naming only.
func (d *peer) unnamed(err error) string {
	name, s := "device "+d.serial, err.Error()
	if before, after, ok := strings.Cut(s, name+": "); ok {
		return before + after
	}
	if before, after, ok := strings.Cut(s, name+" "); ok {
		return before + "the device " + after
	}
	return s
}

// setNote records what happened last and tells the watchers.
func (d *peer) setNote(format string, a ...any) {
	d.mu.Lock()
	d.note = fmt.Sprintf(format, a...)
	d.mu.Unlock()
	d.publish()
}

// open returns the open stream, opening one when there is none; d.opMu is held.
func (d *peer) open(ctx context.Context) (*link.Conn, error) {
	if l := d.current(); l != nil {
		select {
		case <-l.Done():
		default:
			return l, nil
		}
	}
	l, err := d.newLink(ctx)
	if err != nil {
		return nil, err
	}
	// Close sets closed under ph.mu and then closes the current links: a
	// link is either seen by Close or refused here.
	d.ph.mu.Lock()
	closed := d.ph.closed
	if !closed {
		d.mu.Lock()
		d.link = l
		d.mu.Unlock()
	}
	d.ph.mu.Unlock()
	if closed {
		l.Close()
		return nil, ErrClosed
	}
	return l, nil
}

// refresh reads the advertisement of a device the phone is not connected
// to, and connects when it should. An error means the device cannot be
// reached at all.
func (d *peer) refresh(ctx context.Context) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	if d.isConnected() {
		return nil
	}
	adv, err := d.scan(ctx)
	if err != nil {
		return err
	}
	d.mu.Lock()
	changed := adv.Advertising != d.adv.Advertising || string(adv.Adv) != string(d.adv.Adv) || string(adv.ScanResp) != string(d.adv.ScanResp)
	d.adv = adv
	want := d.want
	d.mu.Unlock()
	if changed {
		d.publish()
	}
	if adv.Advertising && want {
		if err := d.connectLocked(ctx); err != nil {
			d.ph.cfg.Log.Info("connect", "device", d.serial, "err", err)
		}
	}
	return nil
}

// scan reads what the device advertises: as its radio broadcasts it, when
// the phone hears that (Peripheral.Scan), so that a device nobody uses
// holds no stream of the phone's; else over a stream, which stays for the
// next scans. d.opMu is held.
func (d *peer) scan(ctx context.Context) (link.AdvertMsg, error) {
	power := d.ph.central.Power()
	if d.p.Scan != nil && d.scanned == power {
		if adv, ok := d.p.Scan(); ok {
			return adv, nil
		}
	}
	// the first scan after the phone's Bluetooth was turned off and on
	// goes over a stream, which tells the device (a device stuck with
	// the phone heeds it); the stream goes when it has done so
	l, err := d.open(ctx)
	if err != nil {
		return link.AdvertMsg{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, d.ph.cfg.Timeout)
	adv, err := l.Scan(sctx)
	cancel()
	if err != nil {
		l.Close()
		return link.AdvertMsg{}, err
	}
	if d.p.Scan != nil {
		d.scanned = power
		l.Close()
	}
	return adv, nil
}

// connect connects to the device; asked says a user asked for it.
func (d *peer) connect(ctx context.Context, asked bool) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	d.mu.Lock()
	d.want = d.want || asked
	d.lastUse = time.Now()
	d.mu.Unlock()
	return d.connectLocked(ctx)
}

// connectLocked connects, and encrypts with the keys of an earlier bond;
// d.opMu is held.
func (d *peer) connectLocked(ctx context.Context) error {
	if d.isConnected() {
		return nil
	}
	l, err := d.open(ctx)
	if err != nil {
		d.setNote("connect: %s", d.unnamed(err))
		return err // the link names the device
	}
	ctx, cancel := context.WithTimeout(ctx, d.ph.cfg.Timeout)
	defer cancel()
	got, err := l.Connect(ctx)
	handle := got.Handle
	if err != nil {
		d.setNote("connect: %s", d.unnamed(err))
		return err
	}
	d.mu.Lock()
	d.connected, d.handle, d.encrypted, d.note = true, handle, false, ""
	address := d.adv.Address
	d.mu.Unlock()
	d.ph.cfg.Log.Info("connected", "device", d.serial, "handle", handle)
	if !d.ph.goTracked(func() { d.watchLink(l) }) {
		l.Close()
		return ErrClosed
	}
	if key, ok := d.ph.key(address); ok {
		if err := l.Encrypt(ctx, key); err != nil {
			d.setNote("the device refused the keys of the bond (%s); pair again", d.unnamed(err))
		} else {
			d.mu.Lock()
			d.encrypted = true
			d.mu.Unlock()
		}
	}
	d.publish()
	return nil
}

// watchLink waits for the end of a connection and records why it ended.
// It exits when the stream closes.
func (d *peer) watchLink(l *link.Conn) {
	<-l.Done()
	d.linkEnded(l)
}

// linkEnded records the end of a connection, once, and why it ended.
func (d *peer) linkEnded(l *link.Conn) {
	d.mu.Lock()
	if d.link != l {
		d.mu.Unlock()
		return
	}
	d.link = nil
	d.connected, d.encrypted = false, false
	release := d.releasing
	d.want = d.ph.cfg.Reconnect && !d.leaving && !release
	d.leaving, d.releasing = false, false
	if release {
		d.note = d.released
	} else if why := l.Err(); errors.Is(why, ErrBluetoothOff) {
		d.note = "the connection dropped: the phone's Bluetooth turned off"
	} else if why, se := l.Err(), (*air.StreamError)(nil); errors.As(why, &se) {
		d.note = "the connection was lost: " + se.Error()
	} else if errors.Is(why, client.ErrClosed) {
		d.note = "the connection ended: the bridge closed the link"
	} else {
		d.note = linkError(why)
	}
	d.mu.Unlock()
	d.ph.cfg.Log.Info("disconnected", "device", d.serial, "why", l.Err())
	d.publish()
}

// pair pairs, connecting first when needed.
func (d *peer) pair(ctx context.Context, passKey string, bond bool) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	d.mu.Lock()
	d.want = true
	d.lastUse = time.Now()
	d.mu.Unlock()
	if err := d.connectLocked(ctx); err != nil {
		return err
	}
	l := d.current()
	if l == nil {
		return fmt.Errorf("device %s: the connection ended", d.serial)
	}
	ctx, cancel := context.WithTimeout(ctx, d.ph.cfg.Timeout)
	defer cancel()
	key, err := l.Pair(ctx, passKey, bond)
	if err != nil {
		d.setNote("pair: %s", d.unnamed(err))
		return err // the link names the device
	}
	d.mu.Lock()
	d.encrypted, d.note = true, ""
	address := d.adv.Address
	d.mu.Unlock()
	if bond {
		if err := d.ph.setKey(address, key); err != nil {
			return err
		}
	}
	d.publish()
	return nil
}

// disconnect ends the connection and stops connecting on its own. It
// returns once the connection has ended, so that a use that comes next
// connects anew.
func (d *peer) disconnect(ctx context.Context) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	d.mu.Lock()
	d.want = false
	l, connected := d.link, d.connected
	d.leaving = connected
	d.mu.Unlock()
	if !connected {
		d.publish()
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.ph.cfg.Timeout)
	defer cancel()
	if err := l.Disconnect(ctx); err != nil {
		l.Close()
	}
	d.linkEnded(l) // before a use waiting for opMu looks
	return nil
}

// use marks the device in use by a client until done is called, connects
// to it when it is not connected (unless the phone is Manual or
// ConnectAll), and returns its connection. A connection that the phone is
// releasing, or disconnecting on a user's word, counts as gone: the use
// waits for it to end and connects anew, rather than take a link that is
// closing; where the phone connects only when asked, it fails at once with
// ErrNotConnected.
// A use that cannot connect says why.
func (d *peer) use(ctx context.Context) (c *link.Conn, done func(), err error) {
	d.mu.Lock()
	d.inUse++
	d.lastUse = time.Now()
	connected := d.connected && !d.releasing && !d.leaving
	d.mu.Unlock()
	done = func() {
		d.mu.Lock()
		d.inUse--
		d.lastUse = time.Now()
		d.mu.Unlock()
	}
	if !connected && !d.ph.cfg.Manual && !d.ph.cfg.ConnectAll { // those connect only when asked, or when they find a device
		if err := d.connect(ctx, false); err != nil {
			done()
			return nil, nil, err
		}
	}
	if c, err = d.conn(); err != nil {
		done()
		return nil, nil, err
	}
	return c, done, nil
}

// releaseIfIdle ends a connection that no client has used for Idle and
// that no subscription holds; ConnectAll keeps every connection. Like
// releaseNow, it returns once the connection has ended.
func (d *peer) releaseIfIdle(ctx context.Context) {
	ph := d.ph
	if ph.cfg.ConnectAll || ph.cfg.Idle < 0 {
		return
	}
	d.mu.Lock()
	idle := d.idleLocked()
	d.mu.Unlock()
	if !idle || !d.opMu.TryLock() {
		return
	}
	defer d.opMu.Unlock()
	d.mu.Lock()
	l := d.link
	idle = d.idleLocked() // again, now that no connect, pair or disconnect is under way
	if idle {
		d.releasing, d.want = true, false
		d.released = fmt.Sprintf("released: no client used the device for %v", ph.cfg.Idle)
	}
	d.mu.Unlock()
	if !idle {
		return
	}
	ph.cfg.Log.Info("release", "device", d.serial, "idle", ph.cfg.Idle)
	ctx, cancel := context.WithTimeout(ctx, ph.cfg.Timeout)
	defer cancel()
	if err := l.Disconnect(ctx); err != nil {
		l.Close()
	}
	d.linkEnded(l) // before a connect waiting for opMu looks
}

// releaseNow ends the connection at once, as a phone does when the last
// app that uses a device disconnects, unless a client holds the device: a
// request or connect under way, or a subscription. ConnectAll keeps every
// connection. It returns once the connection has ended, so that a use that
// comes next connects anew; why is the device's note from then on.
func (d *peer) releaseNow(why string) {
	ph := d.ph
	if ph.cfg.ConnectAll {
		return
	}
	d.opMu.Lock()
	defer d.opMu.Unlock()
	d.mu.Lock()
	l := d.link
	free := d.connected && d.inUse == 0 && len(d.streams) == 0 && !d.leaving
	if free {
		d.releasing, d.want, d.released = true, false, why
	}
	d.mu.Unlock()
	if !free {
		return
	}
	ph.cfg.Log.Info("release", "device", d.serial, "why", why)
	ctx, cancel := context.WithTimeout(context.Background(), ph.cfg.Timeout)
	defer cancel()
	if err := l.Disconnect(ctx); err != nil {
		l.Close()
	}
	d.linkEnded(l)
}

// idleLocked reports whether the device is connected and no client has
// used it for Idle: no request, connect or subscription under way, and no
// disconnection asked for. d.mu must be held.
func (d *peer) idleLocked() bool {
	return d.connected && d.inUse == 0 && len(d.streams) == 0 && time.Since(d.lastUse) >= d.ph.cfg.Idle && !d.leaving
}

// linkError words the end of a link without the name of the device, which
// the caller shows beside it: the device's reason for a disconnection.
func linkError(err error) string {
	var de *link.DisconnectedError
	if errors.As(err, &de) {
		return "disconnected: " + de.Reason
	}
	return err.Error()
}

// conn returns the connection for requests, or an error that says why
// there is none: a connection that the phone is releasing, or
// disconnecting on a user's word, is none.
func (d *peer) conn() (*link.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.connected && !d.releasing && !d.leaving:
		return d.link, nil
	case d.connected && d.releasing:
		return nil, fmt.Errorf("device %s is %w (%s); connect first", d.serial, ErrNotConnected, d.released)
	case d.connected:
		return nil, fmt.Errorf("device %s is %w (a user is disconnecting it); connect first", d.serial, ErrNotConnected)
	case d.gone:
		return nil, fmt.Errorf("device %s went away: %w", d.serial, ErrNotConnected)
	case d.note != "":
		return nil, fmt.Errorf("device %s is %w (%s); connect first", d.serial, ErrNotConnected, d.note)
	default:
		return nil, fmt.Errorf("device %s is %w; connect first", d.serial, ErrNotConnected)
	}
}
