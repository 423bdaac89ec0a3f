package link_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/client"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/gsp/gspwire"
	"senseboard/internal/await"
	"senseboard/internal/frametest"
	"senseboard/internal/loopback"
	"senseboard/link"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// onAir puts a new device on the air, a NATS server of the test's, and
// returns where a central in another program reaches it.
func onAir(t *testing.T, p *profile.Profile) (*senseboard.Device, airDevice) {
	t.Helper()
	dir := t.TempDir()
	d, err := senseboard.New(senseboard.Config{Profile: p, StateDir: filepath.Join(dir, "state"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	addr := airtest.FreeLocal(t)
	o := air.Options{Missed: 1000, TokenFile: airtest.TokenFile(t)} // no stream ends on a busy machine
	devices, err := air.Local(addr, o)                              // the device's program, which runs the server
	if err != nil {
		t.Fatal(err)
	}
	central, err := air.Local(addr, o) // the central's
	if err != nil {
		t.Fatal(err)
	}
	ln, err := devices.Listen(d.Serial())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := central.Listen(d.Serial()); !errors.Is(err, air.ErrOnAir) {
		t.Errorf("second listen: %v", err)
	}
	per := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { per.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { // closes all, also when the wait fails
		defer d.Close()
		defer devices.Close()
		defer central.Close()
		cancel()
		await.Within(t, done, "the peripheral serves on after its context ended")
	})
	return d, airDevice{central, d.Serial()}
}

// airDevice is a device on the air, as a central's program reaches it.
type airDevice struct {
	central *air.Link
	serial  string
}

// The centrals of the tests. A minute bounds their exchanges: a hang
// guard, which a loaded machine does not reach, where the default 5 s is.
var (
	phoneCentral  = &link.Central{Address: "C0:00:00:00:00:01", Name: "phone", Timeout: time.Minute}
	tabletCentral = &link.Central{Address: "C0:00:00:00:00:02", Name: "tablet", Timeout: time.Minute}
)

// openRadio opens a stream to the device as the phone.
func openRadio(t *testing.T, dev airDevice) *link.Conn {
	return openAs(t, dev, phoneCentral, link.Handlers{})
}

// openAs opens a stream to the device as central c, whose data go to h.
func openAs(t *testing.T, dev airDevice, c *link.Central, h link.Handlers) *link.Conn {
	t.Helper()
	ctx := context.Background()
	nc, err := dev.central.Dial(ctx, dev.serial)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Open(ctx, "radio", nc, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestRadioLink(t *testing.T) {
	d, dev := onAir(t, nil)
	ctx := context.Background()
	phone := openRadio(t, dev)

	// before connecting, only the radio answers
	if _, err := phone.Do(ctx, resource.Get, "/Info"); err == nil || !strings.Contains(err.Error(), "not connected; scan and connect first") {
		t.Errorf("request before connecting: %v", err)
	}
	adv, err := phone.Scan(ctx)
	if err != nil || !adv.Advertising || adv.Serial != d.Serial() || adv.Address != d.BLE.Address() {
		t.Fatalf("scan: %+v, %v", adv, err)
	}
	a := radio.DefaultAdvertisement("Senseboard", d.Serial(), false, false, false)
	if want := a.AppendScanResp(nil); string(adv.ScanResp) != string(want) {
		t.Errorf("scan response % x, want % x", adv.ScanResp, want)
	}
	connected, err := phone.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env, err := phone.Do(ctx, resource.Get, "/Info")
	if err != nil || env.Response != 200 || !strings.Contains(string(env.Content), `"serial":"000123"`) {
		t.Fatalf("GET /Info over the air: %s, %v", env.Raw, err)
	}
	sub, env, err := phone.Subscribe(ctx, "/Comm/Ble/Peers")
	if err != nil || env.Response != 200 {
		t.Fatalf("subscribe: %+v, %v", env, err)
	}

	// one connection at a time; the device does not advertise meanwhile
	other := openAs(t, dev, tabletCentral, link.Handlers{})
	if adv, err := other.Scan(ctx); err != nil || adv.Advertising {
		t.Errorf("scan while connected: %+v, %v", adv, err)
	}
	if _, err := other.Connect(ctx); err == nil || err.Error() != "radio: device 000123 is not advertising" {
		t.Errorf("second connection: %v", err)
	}

	// the device drops the connection: the stream says why and closes
	if _, err := d.Do(&resource.Request{Op: resource.Delete, Path: "/Comm/Ble/Peers/" + strconv.Itoa(int(connected.Handle))}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-phone.Done():
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("the stream stayed open after DELETE /Comm/Ble/Peers")
	}
	if err := phone.Err(); !errors.Is(err, link.ErrDisconnected) || !strings.Contains(err.Error(), "DELETE /Comm/Ble/Peers") {
		t.Errorf("stream error %v", err)
	}
	await.Drained(t, sub.C(), "the subscription has not ended")
	if sub.Err() == nil {
		t.Error("subscription did not end with the connection")
	}
	if adv, err := other.Scan(ctx); err != nil || !adv.Advertising {
		t.Errorf("scan after the disconnection: %+v, %v", adv, err)
	}
}

func TestRadioPairing(t *testing.T) {
	d, dev := onAir(t, nil)
	ctx := context.Background()
	do := func(op resource.Op, path string, params ...resource.Value) {
		t.Helper()
		env, err := d.Do(&resource.Request{Op: op, Path: path, Params: params})
		if err != nil || !env.Status.OK() {
			t.Fatalf("%s %s: %+v %v", op, path, env, err)
		}
	}
	do(resource.Put, "/Comm/Ble/Security/Pin", resource.String("123456"))
	policy, _ := resource.RecordJSON("BondingSettings", []byte(`{"Policy": 2}`))
	do(resource.Put, "/Comm/Ble/Security/Settings", policy)

	phone := openRadio(t, dev)
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := phone.Do(ctx, resource.Get, "/Info"); err == nil || !strings.Contains(err.Error(), "pair with its pass key first") {
		t.Errorf("request before pairing: %v", err)
	}
	for _, pk := range []struct{ key, err string }{
		{"", "radio: pairing failed: the device requires its 6-digit pass key"},
		{"000000", "radio: pairing failed: the pass key does not match"},
	} {
		if _, err := phone.Pair(ctx, pk.key, true); err == nil || err.Error() != pk.err {
			t.Errorf("pair with %q: %v, want %s", pk.key, err, pk.err)
		}
	}
	key, err := phone.Pair(ctx, "123456", true)
	if err != nil || key == "" {
		t.Fatalf("pair: %q, %v", key, err)
	}
	if env, err := phone.Do(ctx, resource.Get, "/Info"); err != nil || env.Response != 200 {
		t.Fatalf("GET after pairing: %+v, %v", env, err)
	}
	if err := phone.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}

	// the bonded phone comes back and encrypts with its key
	phone = openRadio(t, dev)
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := phone.Encrypt(ctx, "not-the-key"); err == nil || !strings.Contains(err.Error(), "encryption failed") {
		t.Errorf("encrypt with a wrong key: %v", err)
	}
	if err := phone.Encrypt(ctx, key); err != nil {
		t.Fatal(err)
	}
	if env, err := phone.Do(ctx, resource.Get, "/Time"); err != nil || env.Response != 200 {
		t.Fatalf("GET after encrypting: %+v, %v", env, err)
	}
	phone.Disconnect(ctx)

	// another phone may not bond: the policy allows one bond
	tablet := openAs(t, dev, tabletCentral, link.Handlers{})
	if _, err := tablet.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tablet.Pair(ctx, "123456", true); err == nil || err.Error() != "radio: pairing refused by bonding policy BondingOnce" {
		t.Errorf("second bond: %v", err)
	}
	if _, err := tablet.Pair(ctx, "123456", false); err != nil {
		t.Errorf("pairing without bonding: %v", err)
	}
}

func TestRadioBadFrames(t *testing.T) {
	_, dev := onAir(t, nil)
	ctx := context.Background()
	phone := openRadio(t, dev)
	if _, err := phone.Pair(ctx, "123456", true); err == nil || !strings.Contains(err.Error(), "pair: not connected") {
		t.Errorf("pair before connecting: %v", err)
	}
	nameless := openAs(t, dev, &link.Central{Name: "phone", Timeout: time.Minute}, link.Handlers{})
	if _, err := nameless.Connect(ctx); err == nil || !strings.Contains(err.Error(), "connect: want") {
		t.Errorf("connect without an address: %v", err)
	}
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := phone.Connect(ctx); err == nil || !strings.Contains(err.Error(), "connected already") {
		t.Errorf("connect twice: %v", err)
	}
}

func TestRadioServices(t *testing.T) {
	p := profile.Default()
	p.Modules.HRS, p.Modules.NUS = true, true
	d, dev := onAir(t, p)
	ctx := context.Background()
	got := make(chan string, 16)
	phone := openAs(t, dev, phoneCentral, link.Handlers{
		HeartRate: func(b []byte) { got <- "hrs data " + string(b) },
		Serial:    func(b []byte) { got <- fmt.Sprintf("nus data % x", b) },
	})
	if err := phone.SetHRSNotifications(ctx, true); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("HRS before connecting: %v", err)
	}
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	type sub struct {
		q     *resource.Queue
		ready chan struct{}
	}
	subscribe := func(path string) sub {
		s := sub{resource.NewQueue(16), make(chan struct{}, 1)}
		s.q.WakeWith(func() {
			select {
			case s.ready <- struct{}{}:
			default:
			}
		})
		q := s.q
		c := resource.NewClient("test", q)
		t.Cleanup(c.Close)
		if env, err := d.Do(&resource.Request{Op: resource.Subscribe, Path: path, Client: c}); err != nil || !env.Status.OK() {
			t.Fatalf("subscribe %s: %+v %v", path, env, err)
		}
		return s
	}
	next := func(s sub) string {
		t.Helper()
		select {
		case <-s.ready:
		case <-time.After(time.Minute): // a hang guard
			t.Fatal("no notification")
		}
		e := s.q.Drain(nil)[0]
		b, _ := resource.AppendJSON(nil, e.Content)
		return string(b)
	}
	hrs, nus := subscribe("/Comm/Ble/HRS"), subscribe("/Comm/Ble/NUS")

	// the central switches heart rate notifications; the device hears of it
	if err := phone.SetHRSNotifications(ctx, true); err != nil {
		t.Fatal(err)
	}
	if n := next(hrs); n != `{"enabled":true}` {
		t.Errorf("HRS notification %s", n)
	}
	rec, _ := resource.RecordJSON("HRSData", []byte(`{"average": 72, "rrData": [833]}`))
	if env, err := d.Do(&resource.Request{Op: resource.Post, Path: "/Comm/Ble/HRS", Params: []resource.Value{rec}}); err != nil || !env.Status.OK() {
		t.Fatalf("POST HRS: %+v %v", env, err)
	}
	// the central writes to the serial service, and the device answers
	if err := phone.WriteNUS(ctx, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if n := next(nus); n != `{"Data":[104,105]}` {
		t.Errorf("NUS notification %s", n)
	}
	rec, _ = resource.RecordJSON("NUSData", []byte(`{"Data": [1, 2, 3]}`))
	if env, err := d.Do(&resource.Request{Op: resource.Post, Path: "/Comm/Ble/NUS", Params: []resource.Value{rec}}); err != nil || !env.Status.OK() {
		t.Fatalf("POST NUS: %+v %v", env, err)
	}
	want := map[string]bool{`hrs data {"average":72,"rrData":[833]}`: true, `nus data 01 02 03`: true}
	for range 2 {
		select {
		case g := <-got:
			if !want[g] {
				t.Errorf("radio data %s", g)
			}
			delete(want, g)
		case <-time.After(time.Minute): // a hang guard
			t.Fatalf("missing radio data %v", want)
		}
	}
	if err := phone.WriteNUS(ctx, nil); err == nil || !strings.Contains(err.Error(), "1 to 244 bytes") {
		t.Errorf("empty NUS write: %v", err)
	}
}

func TestRadioGATT(t *testing.T) {
	p := profile.Default()
	p.Modules.HRS, p.Modules.NUS = true, true
	d, dev := onAir(t, p)
	ctx := context.Background()
	got := make(chan string, 16)
	phone := openAs(t, dev, phoneCentral, link.Handlers{Notification: func(char radio.UUID, b []byte) {
		got <- fmt.Sprintf("%s % x", char, b)
	}})
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	services, err := phone.GATTServices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, s := range services {
		for _, c := range s.Characteristics {
			listed = append(listed, s.UUID[4:8]+"/"+c.UUID[:8]+":"+strings.Join(c.Properties, ","))
		}
	}
	if g := strings.Join(listed, " "); g != "180d/00002a37:notify 0001/6e400002:write,write-without-response 0001/6e400003:notify"+
		" 180f/00002a19:read 2252/34800001:write,write-without-response 2252/34800002:notify" { // the battery, and the GSP service, on by default
		t.Errorf("services %s", g)
	}
	tx, rx := radio.NUSTX.String(), radio.NUSRX.String()
	if err := phone.SetNotify(ctx, tx, true); err != nil {
		t.Fatal(err)
	}
	rec, _ := resource.RecordJSON("NUSData", []byte(`{"Data": [1, 2, 3]}`))
	if env, err := d.Do(&resource.Request{Op: resource.Post, Path: "/Comm/Ble/NUS", Params: []resource.Value{rec}}); err != nil || !env.Status.OK() {
		t.Fatalf("POST NUS: %+v %v", env, err)
	}
	select {
	case g := <-got:
		if g != tx+" 01 02 03" {
			t.Errorf("notification %s", g)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("no GATT notification")
	}
	if err := phone.SetMTU(ctx, 23); err != nil {
		t.Fatal(err)
	}
	var re *client.RemoteError
	if err := phone.WriteChar(ctx, rx, make([]byte, 21)); !errors.As(err, &re) || !strings.Contains(err.Error(), "longer than the connection's MTU allows (20 bytes)") {
		t.Errorf("a write longer than MTU-3: %v", err)
	}
	if err := phone.WriteChar(ctx, rx, []byte("ok")); err != nil {
		t.Errorf("write: %v", err)
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"MTU", phone.SetMTU(ctx, 600), "ATT MTU 600 is outside 23..517"},
		{"bad UUID", phone.WriteChar(ctx, "x", []byte("a")), `UUID "x"`},
		{"notify a write characteristic", phone.SetNotify(ctx, rx, true), "does not permit"},
		{"unknown characteristic", phone.WriteChar(ctx, "2a00", []byte("a")), "no such characteristic"},
		{"read a write characteristic", errOf(phone.ReadChar(ctx, rx)), "does not permit"},
		{"read an unknown characteristic", errOf(phone.ReadChar(ctx, "2a00")), "no such characteristic"},
		{"read a bad UUID", errOf(phone.ReadChar(ctx, "2a1")), `UUID "2a1"`},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, tt.err, tt.want)
		}
	}
}

func errOf(_ []byte, err error) error { return err }

// TestRadioBatteryLevel: the battery service's Battery Level reads the
// level GET /System/Energy/Level reports, one byte, in the 4-digit and the
// full form of its UUID.
func TestRadioBatteryLevel(t *testing.T) {
	d, dev := onAir(t, nil)
	ctx := context.Background()
	phone := openRadio(t, dev)
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	for _, level := range []float64{0.42, 1} {
		d.System.SetBattery(level)
		env, err := d.Do(&resource.Request{Op: resource.Get, Path: "/System/Energy/Level"})
		if err != nil || !env.Status.OK() {
			t.Fatalf("GET /System/Energy/Level: %+v %v", env, err)
		}
		want := byte(env.Content.(resource.Value).Uint())
		for _, char := range []string{"2a19", radio.BatteryLevel.String()} {
			if b, err := phone.ReadChar(ctx, char); err != nil || len(b) != 1 || b[0] != want {
				t.Errorf("read %s at %v: % x, %v; want %d", char, level, b, err, want)
			}
		}
	}
}

// TestRadioMalformedPayloads: a radio frame whose payload does not decode,
// or lacks its required field, is answered with an Error that names the
// frame kind, the form it wants and what was wrong; the stream goes on.
func TestRadioMalformedPayloads(t *testing.T) {
	t.Parallel()
	d, err := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	p := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	dev, central := net.Pipe()
	defer central.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { p.ServeConn(ctx, dev) })

	type bad struct {
		kind          wire.Kind
		payload, want string
	}
	check := func(got []wire.Frame, id uint32, b bad) {
		t.Helper()
		for _, f := range got {
			if f.ID != id {
				continue
			}
			var m wire.ErrorMsg
			if f.Kind != wire.Error || json.Unmarshal(f.Payload, &m) != nil ||
				!strings.HasPrefix(m.Error, link.KindName(b.kind)+`: want {"`) || !strings.Contains(m.Error, b.want) {
				t.Errorf("%s %s: answered %s %s, want an Error naming the form and %q", link.KindName(b.kind), b.payload, link.KindName(f.Kind), f.Payload, b.want)
			}
			return
		}
		t.Errorf("%s %s: no answer", link.KindName(b.kind), b.payload)
	}
	// The stream answers pings once connected: the connects that fail go
	// with the hello and the one that succeeds.
	hello, _ := wire.AppendJSONFrame(nil, wire.Hello, 1, &wire.HelloMsg{Protocol: wire.Version, Client: "test", Session: "test"})
	conn, _ := wire.AppendJSONFrame(nil, link.Connect, 2, &link.ConnectMsg{Address: "C0:53:42:00:00:01", Name: "test"})
	connects := []bad{{link.Connect, `{"name": "phone"}`, "address is missing"}, {link.Connect, `{"address": 5}`, "cannot unmarshal"}}
	frames := [][]byte{hello}
	for i, b := range connects {
		frames = append(frames, wire.AppendFrame(nil, b.kind, uint32(10+i), []byte(b.payload)))
	}
	got := frametest.Exchange(t, central, append(frames, conn)...)
	if !slices.ContainsFunc(got, func(f wire.Frame) bool { return f.ID == 2 && f.Kind == link.Connected }) {
		t.Fatalf("connect: %v", got)
	}
	for i, b := range connects {
		check(got, uint32(10+i), b)
	}
	for _, b := range []bad{
		{link.Encrypt, `{}`, "key is missing"},
		{link.Pair, `{`, "unexpected end of JSON input"},
		{link.Encrypt, `{`, "unexpected end of JSON input"},
		{link.HRSNotify, `{"on": 1}`, "cannot unmarshal"},
		{link.NUSWrite, `{`, "unexpected end of JSON input"},
		{link.GATTMTU, `[]`, "cannot unmarshal"},
		{link.GATTWrite, `{`, "unexpected end of JSON input"},
		{link.GATTNotify, `{`, "unexpected end of JSON input"},
	} {
		check(frametest.Exchange(t, central, wire.AppendFrame(nil, b.kind, 7, []byte(b.payload))), 7, b)
	}
}

// A central asks for a connection interval when it connects; the device
// grants the nearest within its connection parameters (30..50 ms by
// default), its slowest when none is asked for, and refuses one the link
// layer does not have.
func TestRadioConnectInterval(t *testing.T) {
	_, dev := onAir(t, nil)
	ctx := context.Background()
	for _, tt := range []struct{ ask, want uint16 }{{6, 24}, {32, 32}, {0, 40}, {800, 40}} {
		phone := openAs(t, dev, &link.Central{Address: "C0:00:00:00:00:01", Interval: radio.Duration(tt.ask), Timeout: time.Minute}, link.Handlers{})
		got, err := phone.Connect(ctx)
		if err != nil || got.Interval != tt.want {
			t.Errorf("asked for %d: granted %d, %v; want %d", tt.ask, got.Interval, err, tt.want)
		}
		phone.Close()
		scan := openRadio(t, dev)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); { // until the device advertises again
			if adv, err := scan.Scan(ctx); err == nil && adv.Advertising {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		scan.Close()
	}
	// the device refuses what a central of this package would not ask
	phone := openRadio(t, dev)
	if _, err := phone.Call(ctx, link.Connect, []byte(`{"address":"C0:00:00:00:00:01","interval":5}`), link.Connected); err == nil || !strings.Contains(err.Error(), "connection interval") {
		t.Errorf("an interval of 5 units: %v", err)
	}
}

// What one connection event carries goes to the central in one message of
// the radio link, not one message a notification: a GSP stream of 52
// notifications a second comes in at most the 20 messages a second of the
// connection's events (50 ms).
func TestRadioSendsByConnectionEvent(t *testing.T) {
	t.Parallel()
	_, dev := onAir(t, nil)
	ctx := context.Background()
	stream, err := dev.central.Dial(ctx, dev.serial)
	if err != nil {
		t.Fatal(err)
	}
	var notes atomic.Int64
	phone, err := phoneCentral.Open(ctx, "radio", stream, link.Handlers{Notification: func(radio.UUID, []byte) { notes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer phone.Close()
	messages := func() int64 { _, got := stream.Messages(); return int64(got) }
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := phone.SetNotify(ctx, gspwire.DataUUID, true); err != nil {
		t.Fatal(err)
	}
	// IMU9 at 208 Hz: 26 batches a second, each two notifications at MTU 247.
	cmd := gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Subscribe, Ref: 1, Path: "/Meas/IMU9/208"})
	if err := phone.WriteChar(ctx, gspwire.CommandUUID, cmd); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); notes.Load() < 20 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	m0, n0 := messages(), notes.Load()
	for deadline := time.Now().Add(time.Minute); notes.Load() < n0+100 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	m, n := messages()-m0, notes.Load()-n0
	if n < 100 || 2*m > n {
		t.Errorf("%d notifications came in %d messages; want at least two a message (an event carries up to four)", n, m)
	}
	t.Logf("%d notifications in %d messages", n, m)
}

// The notifications of a subscription of the line protocol over the radio
// link, which the stream's sender writes with what each connection event
// carries (the session has no writer of its own), reach the central in
// order, and the subscription ends with the connection.
func TestRadioSessionNotifications(t *testing.T) {
	t.Parallel()
	_, dev := onAir(t, nil)
	ctx := context.Background()
	phone := openRadio(t, dev)
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	sub, env, err := phone.Subscribe(ctx, "/Meas/Acc/104")
	if err != nil || env.Response != 200 {
		t.Fatalf("subscribe: %+v, %v", env, err)
	}
	var last float64
	for i := range 20 {
		n := await.Within(t, sub.C(), fmt.Sprintf("notification %d has not come", i))
		var m struct{ Timestamp float64 }
		if err := json.Unmarshal(n.Payload, &m); err != nil {
			t.Fatalf("notification %d: %v (%s)", i, err, n.Payload)
		}
		if i > 0 && m.Timestamp <= last {
			t.Fatalf("notification %d at %v after one at %v", i, m.Timestamp, last)
		}
		last = m.Timestamp
	}
	if err := phone.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	await.Drained(t, sub.C(), "the subscription has not ended")
	if sub.Err() == nil {
		t.Error("the subscription did not end with the connection")
	}
}

// gatedConn is the device's end of a stream whose writes that carry GATT
// notifications wait while the gate is shut: the device's sender of
// notifications is held up, as by a slow stream.
type gatedConn struct {
	net.Conn
	mu      sync.Mutex
	shut    bool
	open    chan struct{} // closed when the gate opens
	waiting chan struct{} // a write waits at the gate
}

func (g *gatedConn) Write(b []byte) (int, error) {
	notes := false
	wire.NewDecoder(0).Feed(b, func(f wire.Frame) { notes = notes || f.Kind == link.GATTNotification })
	g.mu.Lock()
	shut, open := g.shut, g.open
	g.mu.Unlock()
	if notes && shut {
		select {
		case g.waiting <- struct{}{}:
		default:
		}
		<-open
	}
	return g.Conn.Write(b)
}

func (g *gatedConn) setShut(shut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if shut && !g.shut {
		g.open = make(chan struct{})
	} else if !shut && g.shut {
		close(g.open)
	}
	g.shut = shut
}

// The answer to PUT_SYSTEMMODE reaches the central before Disconnected,
// though the write of the notifications before it still waited for the
// central when the switch ended the connection: the answer waits in the
// connection, and Disconnected goes out after it and after that write
// (serial.Session.WriteLast), in every round. The notification that holds
// up the write is the device's own, not the answer to a write: its write
// at the gate holds the stream's writer, and a write's Ack that came
// after it would wait there too, keeping the device from reading
// PUT_SYSTEMMODE.
func TestRadioAnswerBeforeTheSwitch(t *testing.T) {
	t.Parallel()
	p := profile.Default()
	p.BLE.Airtime.Enabled = false // the notifications reach the sender at once
	vc := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Profile: p, Clock: vc, StateDir: filepath.Join(t.TempDir(), "state"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	per := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	ctx := context.Background()
	for round := range 24 {
		devEnd, centralEnd := net.Pipe()
		gate := &gatedConn{Conn: devEnd, waiting: make(chan struct{}, 1)}
		served := make(chan struct{})
		go func() { per.ServeConn(ctx, gate); close(served) }()
		got := make(chan []byte, 16)
		l, err := phoneCentral.Open(ctx, "radio", centralEnd, link.Handlers{Notification: func(_ radio.UUID, b []byte) { got <- b }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.SetNotify(ctx, gspwire.DataUUID, true); err != nil {
			t.Fatal(err)
		}
		conn := d.Radio.Current()
		gate.setShut(true)
		if err := conn.Notify(radio.MustParseUUID(gspwire.DataUUID), []byte{gspwire.Data, 1}); err != nil { // holds up the sender
			t.Fatal(err)
		}
		await.Within(t, gate.waiting, fmt.Sprintf("round %d: the sender has not written the notification", round))
		put := gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.PutSystemMode, Ref: 107, Value: 5})
		var wrote sync.WaitGroup // the write's Ack waits at the gate
		wrote.Go(func() { l.WriteChar(ctx, gspwire.CommandUUID, put) })
		for conn.Untaken() == 0 { // the answer waits for the sender (the Ack, at the gate)
			time.Sleep(time.Millisecond)
		}
		vc.Advance(device.SwitchDelay) // the reset ends the connection
		await.Within(t, conn.Done(), fmt.Sprintf("round %d: the reset has not ended the connection", round))
		gate.setShut(false)
		await.Within(t, l.Done(), fmt.Sprintf("round %d: the central's stream has not ended with the connection", round))
		l.Close()
		await.Within(t, served, fmt.Sprintf("round %d: the peripheral serves a closed stream", round))
		wrote.Wait()
		var answers []string
		for len(got) > 0 {
			if b := <-got; b[0] == gspwire.CommandResponse {
				answers = append(answers, fmt.Sprintf("% x", b[:2]))
			}
		}
		if !slices.Contains(answers, "01 6b") {
			t.Fatalf("round %d: answers %q before Disconnected; want PUT_SYSTEMMODE's on 107 (6b)", round, answers)
		}
		vc.Advance(time.Second) // the device advertises again
	}
}

// TestRadioScanNamesTheCentral: a scan names the central and the count of
// its Bluetooth's power cycles, which the device hears: a device stuck
// since that central's connection is reachable again once the central
// turned its Bluetooth off and on. An anonymous central's scan names no
// one, and is answered all the same.
func TestRadioScanNamesTheCentral(t *testing.T) {
	for _, tt := range []struct {
		name       string
		address    string // of the central that scans; "" for none
		powerCycle bool
		wantStuck  bool
	}{
		{"the connected central after a power cycle", "C0:00:00:00:00:01", true, false},
		{"the connected central without one", "C0:00:00:00:00:01", false, true},
		{"another central after a power cycle", "C0:00:00:00:00:02", true, true},
		{"an anonymous central", "", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, open := onPipe(t, nil, clock.NewVirtual())
			ctx := context.Background()
			first := &link.Central{Address: "C0:00:00:00:00:01", Name: "phone", Timeout: time.Minute}
			if _, err := open(first).Connect(ctx); err != nil {
				t.Fatal(err)
			}
			d.Radio.Stick(false, nil)
			scanner := first
			if tt.address != first.Address {
				scanner = &link.Central{Address: tt.address, Name: "other", Timeout: time.Minute}
			}
			if tt.powerCycle {
				scanner.PowerCycle()
			}
			if m, err := open(scanner).Scan(ctx); err != nil || m.Serial != d.Serial() {
				t.Fatalf("scan: %+v, %v", m, err)
			}
			if got := d.Radio.Stuck(); got != tt.wantStuck {
				t.Errorf("stuck after the scan: %t, want %t", got, tt.wantStuck)
			}
		})
	}
}

// TestRadioDisconnectWaitsForTheDevice: Disconnect returns once the
// device has closed the stream.
func TestRadioDisconnectWaitsForTheDevice(t *testing.T) {
	t.Parallel()
	_, dev := onAir(t, nil)
	ctx := context.Background()
	phone := openRadio(t, dev)
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := phone.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-phone.Done():
	default:
		t.Error("Disconnect returned before the device closed the stream")
	}
}

// A central that does not read holds up neither the device nor its
// clock: the sender leaves the write that waits for the central to a
// goroutine of the session's, and what the device sends meanwhile waits
// in the connection, in order, up to its limit of 256 notifications,
// beyond which flow control refuses it (TryNotify). Once the central
// reads it gets every notification the connection took, in the order
// sent, and not the one refused. With the throughput model off the
// notifications are written from the sender's goroutine, with it on from
// the connection event's (the virtual clock's Advance, here the test's):
// a write that waited for the central on either would hang the test.
func TestRadioSenderUnderASlowReader(t *testing.T) {
	t.Parallel()
	char := radio.MustParseUUID("00000012-0000-4000-8000-000000000000")
	for _, model := range []bool{false, true} {
		p := profile.Default()
		p.BLE.Airtime.Enabled = model
		vc := clock.NewVirtual()
		d, err := senseboard.New(senseboard.Config{Profile: p, Clock: vc, StateDir: filepath.Join(t.TempDir(), "state"), Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Radio.AddService(&radio.Service{UUID: radio.MustParseUUID("00000011-0000-4000-8000-000000000000"),
			Characteristics: []radio.Characteristic{{UUID: char, Props: radio.PropNotify}}}); err != nil {
			t.Fatal(err)
		}
		per := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
		ctx := context.Background()
		devEnd, centralEnd := net.Pipe()
		gate := &gatedConn{Conn: devEnd, waiting: make(chan struct{}, 1)}
		served := make(chan struct{})
		go func() { per.ServeConn(ctx, gate); close(served) }()
		got := make(chan int, 512)
		l, err := phoneCentral.Open(ctx, "radio", centralEnd, link.Handlers{Notification: func(c radio.UUID, b []byte) {
			if c == char {
				got <- int(binary.LittleEndian.Uint16(b))
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.SetNotify(ctx, char.String(), true); err != nil {
			t.Fatal(err)
		}
		conn := d.Radio.Current()
		gate.setShut(true)
		if ok, err := conn.TryNotify(char, []byte{0, 0}); !ok || err != nil {
			t.Fatalf("model %t: the first notification was not taken (%v)", model, err)
		}
		for waiting := false; !waiting; { // its write waits for the central
			select {
			case <-gate.waiting:
				waiting = true
			default:
				vc.Advance(conn.Interval())
			}
		}
		sent := 1
		for conn.Untaken() < 256 {
			if ok, err := conn.TryNotify(char, binary.LittleEndian.AppendUint16(nil, uint16(sent))); err != nil {
				t.Fatal(err)
			} else if ok {
				sent++
			} else {
				vc.Advance(conn.Interval()) // the transmit queue is full: the next event carries some
			}
		}
		if ok, err := conn.TryNotify(char, []byte{0xff, 0xff}); ok || err != nil {
			t.Fatalf("model %t: with 256 notifications waiting one more was taken (%v)", model, err)
		}
		gate.setShut(false)
		vc.Advance(time.Second) // the events carry what waits for the air
		for want := range sent {
			if n := await.Within(t, got, fmt.Sprintf("model %t: notification %d of %d has not come", model, want, sent)); n != want {
				t.Fatalf("model %t: notification %d of %d is %d", model, want, sent, n)
			}
		}
		if ok, err := conn.TryNotify(char, binary.LittleEndian.AppendUint16(nil, uint16(sent))); !ok || err != nil {
			t.Fatalf("model %t: the connection took nothing once the central read (%v)", model, err)
		}
		vc.Advance(time.Second)
		if n := await.Within(t, got, fmt.Sprintf("model %t: the notification after the %d has not come", model, sent)); n != sent {
			t.Fatalf("model %t: after the %d notifications came %d; want %d", model, sent, n, sent)
		}
		l.Close()
		await.Within(t, served, fmt.Sprintf("model %t: the peripheral serves a closed stream", model))
	}
}

// nowConn is the device's end of a stream that writes without waiting, as
// a stream over NATS does (serial.NowWriter): the sender writes on the
// goroutine that hands something out.
type nowConn struct{ net.Conn }

func (c nowConn) WriteNow(p []byte) (int, error) { return c.Conn.Write(p) }

// echoHandler notifies what the central writes, while it handles the write.
type echoHandler struct {
	c   *radio.Conn
	out radio.UUID
}

func (e echoHandler) Write(_ radio.UUID, data []byte) error { return e.c.Notify(e.out, data) }
func (echoHandler) Notifying(radio.UUID, bool)              {}
func (echoHandler) Close()                                  {}

// A notification the device hands out while it handles a frame (here the
// echo of a write) goes out after the frame's answer, on a stream that
// writes at once on the goroutine that hands something out as on one that
// does not.
func TestRadioNotificationAfterTheFramesAnswer(t *testing.T) {
	t.Parallel()
	in := radio.MustParseUUID("00000021-0000-4000-8000-000000000000")
	out := radio.MustParseUUID("00000022-0000-4000-8000-000000000000")
	p := profile.Default()
	p.BLE.Airtime.Enabled = false // the echo reaches the sender at once, while the write is handled
	d, err := senseboard.New(senseboard.Config{Profile: p, Clock: clock.NewVirtual(), StateDir: filepath.Join(t.TempDir(), "state"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Radio.AddService(&radio.Service{UUID: radio.MustParseUUID("00000020-0000-4000-8000-000000000000"),
		Characteristics: []radio.Characteristic{{UUID: in, Props: radio.PropWrite}, {UUID: out, Props: radio.PropNotify}},
		Open:            func(c *radio.Conn) radio.Handler { return echoHandler{c, out} }}); err != nil {
		t.Fatal(err)
	}
	per := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	for _, now := range []bool{true, false} {
		devEnd, central := net.Pipe()
		var conn net.Conn = devEnd
		if now {
			conn = nowConn{devEnd}
		}
		served := make(chan struct{})
		go func() { per.ServeConn(context.Background(), conn); close(served) }()
		hello, _ := wire.AppendJSONFrame(nil, wire.Hello, 1, &wire.HelloMsg{Protocol: wire.Version, Client: "test", Session: "test"})
		connect, _ := wire.AppendJSONFrame(nil, link.Connect, 2, &link.ConnectMsg{Address: "C0:53:42:00:00:01", Name: "test"})
		notify, _ := wire.AppendJSONFrame(nil, link.GATTNotify, 3, &link.GATTNotifyMsg{Char: out.String(), On: true})
		write, _ := wire.AppendJSONFrame(nil, link.GATTWrite, 4, &link.GATTWriteMsg{Char: in.String(), Data: []byte("echo")})
		got := frametest.ReadUntil(t, central, func(f wire.Frame) bool { return f.Kind == link.GATTNotification }, hello, connect, notify, write)
		if !frametest.Answered(got, 4) {
			var frames []string
			for _, f := range got {
				frames = append(frames, fmt.Sprintf("%v %d", f.Kind, f.ID))
			}
			t.Errorf("writes at once %t: the echo came before the write's answer; frames %q", now, frames)
		}
		central.Close()
		await.Within(t, served, fmt.Sprintf("writes at once %t: the peripheral serves a closed stream", now))
	}
}

// heldEcho notifies what the central writes, while it handles the write,
// and then holds the write's handling until release is closed.
type heldEcho struct {
	c       *radio.Conn
	out     radio.UUID
	entered chan<- struct{}
	release <-chan struct{}
}

func (e heldEcho) Write(_ radio.UUID, data []byte) error {
	err := e.c.Notify(e.out, data)
	e.entered <- struct{}{}
	<-e.release
	return err
}
func (heldEcho) Notifying(radio.UUID, bool) {}
func (heldEcho) Close()                     {}

// A notification the device hands out while it handles a frame goes out
// after the frame's answer also when a write of the connection's still
// waited for the central: the goroutine that finishes that write gathers
// what came meanwhile under the stream's order, so it leaves the echo to
// the frame's handling rather than write it before the answer.
func TestRadioNotificationAfterTheFramesAnswerBehindAWrite(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		in := radio.MustParseUUID("00000031-0000-4000-8000-000000000000")
		out := radio.MustParseUUID("00000032-0000-4000-8000-000000000000")
		tick := radio.MustParseUUID("00000033-0000-4000-8000-000000000000")
		p := profile.Default()
		p.BLE.Airtime.Enabled = false // what the device hands out reaches the sender at once
		d, err := senseboard.New(senseboard.Config{Profile: p, Clock: clock.NewVirtual(), StateDir: filepath.Join(t.TempDir(), "state"), Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		entered, release := make(chan struct{}), make(chan struct{})
		if err := d.Radio.AddService(&radio.Service{UUID: radio.MustParseUUID("00000030-0000-4000-8000-000000000000"),
			Characteristics: []radio.Characteristic{{UUID: in, Props: radio.PropWrite}, {UUID: out, Props: radio.PropNotify}, {UUID: tick, Props: radio.PropNotify}},
			Open:            func(c *radio.Conn) radio.Handler { return heldEcho{c, out, entered, release} }}); err != nil {
			t.Fatal(err)
		}
		per := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
		devEnd, central := net.Pipe()
		gate := &gatedConn{Conn: devEnd, waiting: make(chan struct{}, 1)}
		served := make(chan struct{})
		go func() { per.ServeConn(context.Background(), gate); close(served) }()
		released := false
		defer func() {
			if !released {
				close(release)
			}
			central.Close()
			<-served
		}()
		frames := make(chan wire.Frame, 64)
		go func() {
			defer close(frames)
			dec := wire.NewDecoder(0)
			buf := make([]byte, 8192)
			for {
				n, err := central.Read(buf)
				dec.Feed(buf[:n], func(f wire.Frame) {
					f.Payload = append([]byte(nil), f.Payload...)
					frames <- f
				})
				if err != nil {
					return
				}
			}
		}()
		send := func(kind wire.Kind, id uint32, v any) {
			b, _ := wire.AppendJSONFrame(nil, kind, id, v)
			if _, err := central.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		// next returns the next frame other than a notification of tick.
		next := func() wire.Frame {
			for f := range frames {
				if f.Kind != link.GATTNotification || !bytes.HasPrefix(f.Payload, tick[:]) {
					return f
				}
			}
			t.Fatal("the stream closed")
			return wire.Frame{}
		}
		send(wire.Hello, 1, &wire.HelloMsg{Protocol: wire.Version, Client: "test", Session: "test"})
		send(link.Connect, 2, &link.ConnectMsg{Address: "C0:53:42:00:00:01", Name: "test"})
		send(link.GATTNotify, 3, &link.GATTNotifyMsg{Char: out.String(), On: true})
		send(link.GATTNotify, 4, &link.GATTNotifyMsg{Char: tick.String(), On: true})
		if f := next(); f.Kind != wire.Welcome {
			t.Fatalf("got %v %d; want the welcome", f.Kind, f.ID)
		}
		for id := uint32(2); id <= 4; id++ {
			if f := next(); f.ID != id {
				t.Fatalf("got %v %d; want the answer to frame %d", f.Kind, f.ID, id)
			}
		}
		conn := d.Radio.Current()
		gate.setShut(true)
		if err := conn.Notify(tick, []byte{1}); err != nil {
			t.Fatal(err)
		}
		<-gate.waiting                                       // its write waits for the central
		if err := conn.Notify(tick, []byte{2}); err != nil { // waits behind it
			t.Fatal(err)
		}
		send(link.GATTWrite, 5, &link.GATTWriteMsg{Char: in.String(), Data: []byte("echo")})
		<-entered // the write is handled, its echo handed out
		gate.setShut(false)
		synctest.Wait() // the write that waited is done, and what its goroutine does next
		close(release)
		released = true
		if f := next(); f.ID != 5 {
			t.Errorf("got %v %d before the write's answer; want the answer first", f.Kind, f.ID)
		}
	})
}

// TestRadioOverAStalledServer: while the NATS server stops reading from
// the device's program, what the device streams waits at its radio link
// only up to the link's bound; then its notifications wait in the radio
// connection and are lost there as the device's queues say, each counted
// on its subscription (the ECG front end keeps two notifications). Once
// the server reads again the central gets the rest: the ECG notifications
// it misses are as many as the device counted lost. The device's clock is
// virtual: the test makes the notifications, faster than the link carries
// them, and then, with the server back, no faster than the central takes
// them.
func TestRadioOverAStalledServer(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(await.Guard) {
		t.Fatal("the server did not start")
	}
	proxy, stall, resume := loopback.Stalling(t, srv.Addr().String())
	o := air.Options{Missed: 1000} // no stream ends on a busy machine
	devices, err := air.Join("nats://"+proxy, o)
	if err != nil {
		t.Fatal(err)
	}
	defer devices.Close()
	central, err := air.Join(srv.ClientURL(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer central.Close()
	defer resume() // before the links close, which publish what waits

	vc := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Profile: profile.Default(), Clock: vc, StateDir: filepath.Join(t.TempDir(), "state"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ln, err := devices.Listen(d.Serial())
	if err != nil {
		t.Fatal(err)
	}
	per := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { per.Serve(ctx, ln); close(served) }()
	defer func() { cancel(); <-served }()

	phone := openAs(t, airDevice{central, d.Serial()}, phoneCentral, link.Handlers{})
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stamps []uint32 // of the ECG notifications the phone got, device time in ms
	more := make(chan struct{}, 1)
	ecg, env, err := phone.SubscribeFunc(ctx, "/Meas/ECG/125", func(payload []byte, _ time.Time) {
		var m struct{ Timestamp uint32 }
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Errorf("ECG notification %s: %v", payload, err)
		}
		mu.Lock()
		stamps = append(stamps, m.Timestamp)
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
	})
	if err != nil || env.Response != 200 {
		t.Fatalf("subscribe ECG: %+v, %v", env, err)
	}
	imu, env, err := phone.SubscribeFunc(ctx, "/Meas/IMU9/208", func([]byte, time.Time) {}) // fills the link fast
	if err != nil || env.Response != 200 {
		t.Fatalf("subscribe IMU9: %+v, %v", env, err)
	}
	sub := d.Core.Hub().Topic(d.Core.URIPrefix() + "/Meas/ECG/125").Subscriptions()[0]
	conn := d.Radio.Current()

	stall()
	for sub.Dropped() == 0 {
		vc.Advance(conn.Interval())
		if vc.Now() > time.Hour { // hang guard, of the device's time
			t.Fatal("an hour of the device's time into a stall, it has lost nothing")
		}
	}
	resume()
	if _, err := imu.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	const step = 128 * time.Millisecond // an ECG notification: 16 samples at 125 Hz
	for range 16 {                      // each ECG notification reaches the phone before the next is made
		vc.Advance(step)
		want := uint32((vc.Now() - 4*step).Milliseconds()) // made, with the front end's delay
		for {
			mu.Lock()
			n := len(stamps)
			caught := n > 0 && stamps[n-1] >= want
			mu.Unlock()
			if caught {
				break
			}
			select {
			case <-more:
			case <-time.After(60 * time.Second): // hang guard
				t.Fatalf("the ECG of %d ms, with the server back, never came: %v; device time %v, lost %d, untaken %d, conn %v", want, stamps, vc.Now(), sub.Dropped(), conn.Untaken(), conn.Err())
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The timestamps are whole milliseconds of the device's oscillator,
	// which drifts: n steps apart is n steps as it counts them, give or
	// take the millisecond the truncation moves (a gap of 128 ms is now
	// and then 129 once the drift has added up, far into a long stall).
	local := d.Core.Local(step)
	var missing uint64
	for i := 1; i < len(stamps); i++ {
		gap := time.Duration(stamps[i]-stamps[i-1]) * time.Millisecond
		n := (gap + local/2) / local // the steps from one to the other
		if off := gap - d.Core.Local(n*step); n == 0 || off <= -time.Millisecond || off >= time.Millisecond {
			t.Fatalf("ECG notification %d at %d ms after one at %d", i, stamps[i], stamps[i-1])
		}
		missing += uint64(n - 1)
	}
	if missing != sub.Dropped() {
		t.Errorf("the phone missed %d ECG notifications; the device counted %d lost", missing, sub.Dropped())
	}
	if n := ecg.Dropped(); n != 0 {
		t.Errorf("the phone's client dropped %d", n)
	}
}
