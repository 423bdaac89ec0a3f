package gsp_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"senseboard"
	"senseboard/gsp"
	"senseboard/gsp/gspwire"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// The module serves the GSP service of the radio's GATT layer: a central
// that connects, chooses its MTU and switches notifications on gets HELLO,
// GET, a stream and a log over the characteristics.
func TestOverGATT(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	rc, err := d.Device.Radio.Connect(radio.NewCentral("AA:BB:CC:00:00:07", "central"), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Disconnect()
	if err := rc.SetMTU(64); err != nil {
		t.Fatal(err)
	}
	if err := rc.SetNotify(gsp.DataID, true); err != nil {
		t.Fatal(err)
	}
	write := func(c gspwire.Command) {
		t.Helper()
		if err := rc.Write(gsp.CommandID, gspwire.AppendCommand(nil, c)); err != nil {
			t.Fatal(err)
		}
	}
	// next waits for a notification; the connection's events come with
	// the device's time, so it lets time pass while none is there.
	var in notes
	next := func() []byte {
		t.Helper()
		for {
			if n, ok := in.next(rc); ok {
				if n.Char != gsp.DataID || len(n.Data) > 61 {
					t.Fatalf("notification of %d bytes on %s", len(n.Data), n.Char)
				}
				return n.Data
			}
			d.Advance(5 * time.Millisecond)
		}
	}
	response := func(ref uint8) []byte {
		t.Helper()
		for {
			if n := next(); n[0] == gspwire.CommandResponse && n[1] == ref {
				return n
			}
		}
	}

	write(gspwire.Command{Code: gspwire.Hello, Ref: 1})
	if n := response(1); n[2] != gspwire.ProtocolVersion {
		t.Fatalf("HELLO % x", n)
	}
	write(gspwire.Command{Code: gspwire.Get, Ref: 2, Path: "/System/Energy/Level"})
	if n := response(2); status(n) != 200 || len(n) != 5 {
		t.Errorf("energy % x", n)
	}
	write(gspwire.Command{Code: gspwire.Subscribe, Ref: 3, Path: "/Meas/IMU9/52"})
	if n := response(3); status(n) != 200 {
		t.Fatalf("SUBSCRIBE: %d", status(n))
	}
	parts := map[byte]int{}
	for parts[gspwire.DataPart3] == 0 {
		d.Advance(20 * time.Millisecond)
		if n, ok := in.next(rc); ok && n.Data[1] == 3 {
			parts[n.Data[0]]++
		}
	}
	write(gspwire.Command{Code: gspwire.Unsubscribe, Ref: 3})
	if n := response(3); status(n) != 200 {
		t.Errorf("UNSUBSCRIBE: %d", status(n))
	}

	// A short log, fetched over the characteristics.
	write(gspwire.Command{Code: gspwire.PutDataLoggerConfig, Ref: 4, Paths: []string{"/Meas/Acc/13"}})
	if n := response(4); status(n) != 200 {
		t.Fatalf("config: %d", status(n))
	}
	write(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 5, Value: 3})
	response(5)
	d.Advance(2 * time.Second)
	write(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 6, Value: 2})
	response(6)
	write(gspwire.Command{Code: gspwire.FetchLog, Ref: 7, LogID: 1})
	if n := response(7); status(n) != 200 {
		t.Fatalf("FETCH_LOG: %d", status(n))
	}
	got := 0
	for {
		n := next()
		if n[0] != gspwire.Data || n[1] != 7 {
			continue
		}
		if off := int(binary.LittleEndian.Uint32(n[2:])); off != got {
			t.Fatalf("chunk at offset %d, want %d", off, got)
		}
		if len(n) == 6 {
			break
		}
		got += len(n) - 6
	}
	if got < 200 {
		t.Errorf("log of %d bytes for 2 s of Acc at 13 Hz", got)
	}
}

// gattPeer is a central connected to the GSP service over the radio's
// GATT layer, on a device whose time passes while it waits.
// notes reads the notifications a central takes from its connection
// (radio.Conn.Take) one at a time.
type notes struct {
	got  radio.Taken
	left []radio.Notification
}

// next returns the next notification that has arrived, if one has.
func (n *notes) next(rc *radio.Conn) (radio.Notification, bool) {
	if !n.arrived(rc) {
		return radio.Notification{}, false
	}
	first := n.left[0]
	n.left = n.left[1:]
	return first, true
}

// arrived reports whether a notification has arrived that next has not
// returned.
func (n *notes) arrived(rc *radio.Conn) bool {
	if len(n.left) == 0 {
		rc.Take(&n.got)
		n.left = append(n.left[:0], n.got.Notes...)
	}
	return len(n.left) > 0
}

type gattPeer struct {
	t    *testing.T
	d    *senseboardtest.Rig
	rc   *radio.Conn
	in   notes
	held [][]byte
}

func connectGATT(t *testing.T, d *senseboardtest.Rig, mtu int) *gattPeer {
	t.Helper()
	rc, err := d.Device.Radio.Connect(radio.NewCentral("AA:BB:CC:00:00:08", "central"), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Disconnect)
	if err := rc.SetMTU(mtu); err != nil {
		t.Fatal(err)
	}
	if err := rc.SetNotify(gsp.DataID, true); err != nil {
		t.Fatal(err)
	}
	return &gattPeer{t: t, d: d, rc: rc}
}

// next returns the next notification, letting device time pass (and with
// it the connection's events) while none is there.
func (p *gattPeer) next() []byte {
	p.t.Helper()
	if len(p.held) > 0 {
		n := p.held[0]
		p.held = p.held[1:]
		return n
	}
	for {
		if n, ok := p.in.next(p.rc); ok {
			if len(n.Data) > gspwire.MaxNotification(p.rc.MTU()) {
				p.t.Fatalf("notification of %d bytes at MTU %d", len(n.Data), p.rc.MTU())
			}
			return n.Data
		}
		p.d.Advance(50 * time.Millisecond)
	}
}

// discard drops the notifications the central has got and not read.
func (p *gattPeer) discard() {
	p.held = nil
	p.in.left = nil
	p.rc.Take(&p.in.got)
}

// command writes c and returns its COMMAND_RESPONSE, keeping the
// notifications before it for next.
func (p *gattPeer) command(c gspwire.Command) []byte {
	p.t.Helper()
	if err := p.rc.Write(gsp.CommandID, gspwire.AppendCommand(nil, c)); err != nil {
		p.t.Fatal(err)
	}
	var held [][]byte
	defer func() { p.held = append(p.held, held...) }()
	for {
		n := p.next()
		if n[0] == gspwire.CommandResponse && n[1] == c.Ref {
			return n
		}
		held = append(held, n)
	}
}

// A log fetched over a slow link that loses stream data arrives whole:
// the transfer waits for room, while a stream on the same connection
// loses what the link cannot carry.
func TestFetchOverSlowLinkIsComplete(t *testing.T) {
	prof := profile.Default()
	prof.BLE.Airtime = profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 27, TXQueue: 2, MissedEvents: 0.2}
	d := senseboardtest.New(t, senseboard.Config{Profile: prof})
	p := connectGATT(t, d, gspwire.MinMTU)

	if n := p.command(gspwire.Command{Code: gspwire.PutDataLoggerConfig, Ref: 1, Paths: []string{"/Meas/Acc/52"}}); status(n) != 200 {
		t.Fatalf("config: %d", status(n))
	}
	p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 2, Value: 3})
	d.Advance(2 * time.Second)
	p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 3, Value: 2})
	env := d.Expect(resource.StatusOK, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Uint32(1))
	want := env.Content.(interface{ Bytes() []byte }).Bytes()

	if n := p.command(gspwire.Command{Code: gspwire.Subscribe, Ref: 4, Path: "/Meas/Acc/208"}); status(n) != 200 {
		t.Fatalf("SUBSCRIBE: %d", status(n))
	}
	start := d.Clock.Now()
	if n := p.command(gspwire.Command{Code: gspwire.FetchLog, Ref: 5, LogID: 1}); status(n) != 200 {
		t.Fatalf("FETCH_LOG: %d", status(n))
	}
	var got []byte
	streamed := 0
	for {
		n := p.next()
		if n[1] == 4 && n[0] == gspwire.Data {
			streamed++
		}
		if n[0] != gspwire.Data || n[1] != 5 {
			continue
		}
		if off := int(binary.LittleEndian.Uint32(n[2:])); off != len(got) {
			t.Fatalf("chunk at offset %d after %d bytes: a chunk was lost", off, len(got))
		}
		if len(n) == 6 {
			break
		}
		got = append(got, n[6:]...)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("fetched %d bytes that differ from the log's %d", len(got), len(want))
	}
	if len(want) < 500 {
		t.Errorf("a log of %d bytes is too short to load the link", len(want))
	}
	// Acc at 208 Hz is 26 notifications a second, of two parts each at
	// this MTU; the link carried fewer.
	produced := int((d.Clock.Now() - start).Seconds() * 26)
	if streamed >= produced-1 {
		t.Errorf("the stream delivered %d of %d notifications during the fetch; the link should have lost some", streamed, produced)
	}
	t.Logf("log of %d bytes in %v; stream %d of %d", len(want), d.Clock.Now()-start, streamed, produced)
}

// A central that switches the data characteristic's notifications off
// drops what the connection had still to send: the rest of a FETCH_LOG
// is not sent when it switches them on again, and the next command's
// answer comes after what the radio's transmit queue held at the switch
// (at most two notifications here) rather than after the whole log.
func TestNotificationsOffDropsAFetch(t *testing.T) {
	prof := profile.Default()
	prof.BLE.Airtime = profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 27, TXQueue: 2}
	d := senseboardtest.New(t, senseboard.Config{Profile: prof})
	p := connectGATT(t, d, gspwire.MinMTU)
	p.command(gspwire.Command{Code: gspwire.PutDataLoggerConfig, Ref: 1, Paths: []string{"/Meas/IMU9/208"}})
	p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 2, Value: 3})
	d.Advance(time.Second)
	p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 3, Value: 2})
	if n := p.command(gspwire.Command{Code: gspwire.FetchLog, Ref: 5, LogID: 1}); status(n) != 200 {
		t.Fatalf("FETCH_LOG: %d", status(n))
	}
	for n := p.next(); n[0] != gspwire.Data || n[1] != 5; n = p.next() {
	}
	if err := p.rc.SetNotify(gsp.DataID, false); err != nil {
		t.Fatal(err)
	}
	// The connection event that carried the descriptor's write carried
	// the device's packets before it: what the central has got by now
	// came before the switch, and what waits for the air now is what the
	// transmit queue held at it.
	p.discard()
	held := p.rc.Waiting()
	if held == 0 || held > prof.BLE.Airtime.TXQueue {
		t.Fatalf("%d notifications wait for the air at the switch; want 1 to the transmit queue's %d", held, prof.BLE.Airtime.TXQueue)
	}
	if err := p.rc.SetNotify(gsp.DataID, true); err != nil {
		t.Fatal(err)
	}
	data := 0
	p.rc.Write(gsp.CommandID, gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Hello, Ref: 6}))
	for n := p.next(); n[0] != gspwire.CommandResponse || n[1] != 6; n = p.next() {
		if n[0] == gspwire.Data && n[1] == 5 {
			data++
		}
	}
	if data != held {
		t.Errorf("%d notifications of the fetch came after the notifications were switched off and on; want the %d the transmit queue held", data, held)
	}
	env := d.Expect(resource.StatusOK, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Uint32(1))
	if size := len(env.Content.(interface{ Bytes() []byte }).Bytes()); size < 100*gspwire.MaxNotification(gspwire.MinMTU) {
		t.Errorf("a log of %d bytes is too short for the test", size)
	}
}
