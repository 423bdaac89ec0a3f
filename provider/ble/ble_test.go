package ble_test

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/profile"
	"senseboard/provider/ble"
	"senseboard/radio"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func central(n int) *radio.Central {
	return radio.NewCentral(fmt.Sprintf("AA:BB:CC:00:00:%02X", n), fmt.Sprintf("Phone %d", n))
}

func connect(t *testing.T, d *sbt.Rig, c *radio.Central) *radio.Conn {
	t.Helper()
	conn, err := d.Device.Radio.Connect(c, resource.NewQueue(64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Disconnect)
	return conn
}

// do makes a request over a connection, as whoever serves the link does:
// only when the link admits it, with the connection's client.
func do(d *sbt.Rig, c *radio.Conn, req *resource.Request) (resource.Envelope, error) {
	if err := c.Admit(); err != nil {
		return resource.Envelope{}, err
	}
	req.Client = c.Client()
	return d.Device.Core.Do(req)
}

func TestAddressAndAdvertising(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	env := d.Expect(200, resource.Get, "/Comm/Ble/Addr")
	if !regexp.MustCompile(`^[0-9A-F]{2}(:[0-9A-F]{2}){5}$`).MatchString(env.Content.(string)) {
		t.Errorf("address %v", env.Content)
	}
	isAdv := func() bool { return d.Expect(200, resource.Get, "/Comm/Ble/Adv").Content.(*ble.AdvState).IsAdvertising }
	if !isAdv() {
		t.Fatal("not advertising after start")
	}
	d.Expect(409, resource.Post, "/Comm/Ble/Adv")
	d.Expect(200, resource.Delete, "/Comm/Ble/Adv")
	if isAdv() {
		t.Fatal("advertising after DELETE")
	}
	if _, err := d.Device.Radio.Connect(central(1), resource.NewQueue(1)); !errors.Is(err, radio.ErrNotAdvertising) || err.Error() != "device 000123 is not advertising" {
		t.Errorf("connect while not advertising: %v", err)
	}
	d.Expect(200, resource.Delete, "/Comm/Ble/Adv") // stopping twice is fine
	d.Expect(200, resource.Post, "/Comm/Ble/Adv")
	if !isAdv() {
		t.Fatal("not advertising after POST")
	}
	// Timeout stops advertising after that many seconds
	d.Expect(200, resource.Put, "/Comm/Ble/Adv/Settings", sbt.Record(t, "AdvSettings", `{"Interval": 160, "Timeout": 3}`))
	d.Advance(2900 * time.Millisecond)
	if !isAdv() {
		t.Fatal("stopped before the timeout")
	}
	d.Advance(200 * time.Millisecond)
	if isAdv() {
		t.Fatal("still advertising after the timeout")
	}
	// a reset starts advertising again
	d.Device.Reset()
	if !isAdv() {
		t.Error("not advertising after a reset")
	}
}

// adMap decodes a packet into its AD structures by type.
func adMap(t *testing.T, p []byte) map[byte][]byte {
	t.Helper()
	ads, err := radio.ParseAD(p)
	if err != nil {
		t.Fatalf("packet % X: %v", p, err)
	}
	m := map[byte][]byte{}
	for _, a := range ads {
		if _, dup := m[a.Type]; dup {
			t.Errorf("AD type 0x%02X twice", a.Type)
		}
		m[a.Type] = a.Data
	}
	return m
}

func TestDefaultPackets(t *testing.T) {
	for _, hrs := range []bool{false, true} {
		p := profile.Default()
		p.Modules.HRS = hrs
		d := sbt.New(t, senseboard.Config{Profile: p})
		pk, ok := d.Device.Radio.Advertising()
		if !ok {
			t.Fatal("not advertising")
		}
		if len(pk.Adv) > radio.MaxPacket || len(pk.ScanResp) > radio.MaxPacket {
			t.Fatalf("packets of %d and %d bytes", len(pk.Adv), len(pk.ScanResp))
		}
		adv := adMap(t, pk.Adv)
		if !bytes.Equal(adv[radio.ADFlags], []byte{0x06}) {
			t.Errorf("flags % X, want 06", adv[radio.ADFlags])
		}
		mf := adv[radio.ADManufacturerData]
		if len(mf)+2 != 6 || mf[0] != 0xFF || mf[1] != 0xFF || mf[2] != radio.ManufacturerFormat {
			t.Errorf("manufacturer field % X: want 6 bytes with company 0xFFFF and format 1", mf)
		}
		if hrs != (mf[3]&radio.FlagHRS != 0) {
			t.Errorf("manufacturer flags %08b with HRS %v", mf[3], hrs)
		}
		if !bytes.Equal(adv[radio.ADUUID128Complete], []byte{0x41, 0x00, 0x74, 0x70, 0x63, 0x88, 0x7A, 0xB5, 0xCC, 0x49, 0x31, 0x82, 0x90, 0x30, 0x35, 0x61}) {
			t.Errorf("128-bit UUIDs % X", adv[radio.ADUUID128Complete])
		}
		if u16, has := adv[radio.ADUUID16Complete]; has != hrs || hrs && !bytes.Equal(u16, []byte{0x0D, 0x18}) {
			t.Errorf("HRS %v: 16-bit UUIDs % X", hrs, u16)
		}
		if name := string(adMap(t, pk.ScanResp)[radio.ADCompleteName]); name != "Senseboard 000123" {
			t.Errorf("local name %q", name)
		}
	}
}

func TestAdvSettings(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	custom := `{"AdvPacket": [2, 1, 6, 5, 9, 84, 101, 115, 116], "ScanRespPacket": null, "Interval": 32, "Timeout": 0}`
	d.Expect(200, resource.Put, "/Comm/Ble/Adv/Settings", sbt.Record(t, "AdvSettings", custom))
	pk, _ := d.Device.Radio.Advertising()
	if !bytes.Equal(pk.Adv, []byte{2, 1, 6, 5, 9, 84, 101, 115, 116}) {
		t.Errorf("custom packet not used verbatim: % X", pk.Adv)
	}
	if string(adMap(t, pk.ScanResp)[radio.ADCompleteName]) != "Senseboard 000123" {
		t.Error("null scan response is not the default")
	}
	for _, bad := range []struct{ json, msg string }{
		{`{"AdvPacket": [9, 1, 6], "Interval": 800, "Timeout": 0}`, "runs past the packet's end"},
		{`{"AdvPacket": [0, 5], "Interval": 800, "Timeout": 0}`, "data after a zero-length structure"},
		{`{"AdvPacket": [], "Interval": 800, "Timeout": 0}`, "give null for the default"},
		{`{"AdvPacket": [2,1,6,2,1,6,2,1,6,2,1,6,2,1,6,2,1,6,2,1,6,2,1,6,2,1,6,2,1,6,2,1], "Interval": 800, "Timeout": 0}`, "at most 31 items"},
		{`{"Interval": 31, "Timeout": 0}`, "greater than or equal to 32"},
		{`{"Interval": 800}`, "Timeout is required"},
	} {
		env := d.Do(resource.Put, "/Comm/Ble/Adv/Settings", sbt.Record(t, "AdvSettings", bad.json))
		if env.Status != 400 || !regexp.MustCompile(regexp.QuoteMeta(bad.msg)).MatchString(env.Error) {
			t.Errorf("%s: %d %q, want 400 with %q", bad.json, env.Status, env.Error, bad.msg)
		}
	}
	d.Restart() // non-volatile
	s := d.Expect(200, resource.Get, "/Comm/Ble/Adv/Settings").Content.(*radio.AdvSettings)
	if s.Interval != 32 || len(s.AdvPacket) != 9 || s.ScanRespPacket != nil {
		t.Errorf("after a restart: %+v", s)
	}
}

func TestOneConnectionAndPeers(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	peers := d.Subscribe("/Comm/Ble/Peers")
	a := connect(t, d, central(1))
	if _, err := d.Device.Radio.Connect(central(2), resource.NewQueue(1)); err == nil {
		t.Fatal("a second central connected")
	} else if !errors.Is(err, radio.ErrNotAdvertising) && !errors.Is(err, radio.ErrBusy) {
		t.Fatalf("second central: %v", err)
	}
	if d.Expect(200, resource.Get, "/Comm/Ble/Adv").Content.(*ble.AdvState).IsAdvertising {
		t.Error("advertising while connected")
	}
	d.Expect(409, resource.Post, "/Comm/Ble/Adv")
	list := d.Expect(200, resource.Get, "/Comm/Ble/Peers").Content.(*ble.PeerList)
	if len(list.ConnectedPeers) != 1 || list.ConnectedPeers[0].Address != "AA:BB:CC:00:00:01" || list.ConnectedPeers[0].Handle != a.Handle() || *list.ConnectedPeers[0].Name != "Phone 1" {
		t.Fatalf("peers %+v", list)
	}
	// a subscription over the connection ends with it
	sub, _ := do(d, a, &resource.Request{Op: resource.Subscribe, Path: "/Time"})
	if sub.Status != 200 || d.Device.Hub().Count() != 2 {
		t.Fatalf("subscription over the link: %d, %d subscriptions", sub.Status, d.Device.Hub().Count())
	}
	d.Expect(404, resource.Delete, fmt.Sprintf("/Comm/Ble/Peers/%d", a.Handle()+5))
	d.Expect(200, resource.Delete, fmt.Sprintf("/Comm/Ble/Peers/%d", a.Handle()))
	select {
	case <-a.Done():
	default:
		t.Fatal("the connection did not end")
	}
	if d.Device.Hub().Count() != 1 {
		t.Errorf("%d subscriptions after the disconnection, want only the peers one", d.Device.Hub().Count())
	}
	got := peers.Contents()
	if len(got) != 2 || got[0].(*ble.PeerChange).State != ble.Connected || got[1].(*ble.PeerChange).State != ble.Disconnected || got[1].(*ble.PeerChange).Peer.Address != "AA:BB:CC:00:00:01" {
		t.Fatalf("peer notifications %+v", got)
	}
	if !d.Expect(200, resource.Get, "/Comm/Ble/Adv").Content.(*ble.AdvState).IsAdvertising {
		t.Error("not advertising again after the disconnection")
	}
	b := connect(t, d, central(2))
	if b.Handle() == a.Handle() {
		t.Error("handles repeat")
	}
}

func TestConnParams(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	d.Expect(200, resource.Put, "/Comm/Ble/ConnParams", sbt.Record(t, "ConnParams", `{"min_conn_interval": 6, "max_conn_interval": 12, "slave_latency": 0, "sup_timeout": 100}`))
	a := connect(t, d, central(1))
	h := fmt.Sprintf("/Comm/Ble/Peers/%d/Params", a.Handle())
	// GET reports the interval the link runs: min = max = the granted one.
	want := radio.ConnParams{MinConnInterval: 12, MaxConnInterval: 12, SlaveLatency: 0, SupTimeout: 100}
	if p := d.Expect(200, resource.Get, h).Content.(*radio.ConnParams); *p != want {
		t.Errorf("GET %s = %+v, want the preferred parameters with the slowest interval granted (no wish): %+v", h, *p, want)
	}
	d.Expect(200, resource.Put, h, sbt.Record(t, "ConnParams", `{"min_conn_interval": 24, "max_conn_interval": 40, "slave_latency": 4, "sup_timeout": 600}`))
	want = radio.ConnParams{MinConnInterval: 40, MaxConnInterval: 40, SlaveLatency: 4, SupTimeout: 600}
	if p := d.Expect(200, resource.Get, h).Content.(*radio.ConnParams); *p != want {
		t.Errorf("GET %s after PUT = %+v, want %+v", h, *p, want)
	}
	d.Expect(400, resource.Put, h, sbt.Record(t, "ConnParams", `{"min_conn_interval": 50, "max_conn_interval": 40, "slave_latency": 0, "sup_timeout": 600}`))
	d.Expect(400, resource.Put, h, sbt.Record(t, "ConnParams", `{"min_conn_interval": 5, "max_conn_interval": 40, "slave_latency": 0, "sup_timeout": 600}`))
	d.Expect(404, resource.Get, "/Comm/Ble/Peers/99/Params")

	// A central that asks for an interval within the preferred range gets it.
	a.Disconnect()
	c := central(2)
	c.Interval = 8
	b := connect(t, d, c)
	h = fmt.Sprintf("/Comm/Ble/Peers/%d/Params", b.Handle())
	want = radio.ConnParams{MinConnInterval: 8, MaxConnInterval: 8, SlaveLatency: 0, SupTimeout: 100}
	if p := d.Expect(200, resource.Get, h).Content.(*radio.ConnParams); *p != want {
		t.Errorf("GET %s of a central that asked for 8 = %+v, want %+v", h, *p, want)
	}
}

func TestPassKey(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	for _, bad := range []string{"12345", "1234567", "12a456", ""} {
		d.Expect(400, resource.Put, "/Comm/Ble/Security/Pin", resource.String(bad))
	}
	d.Expect(200, resource.Put, "/Comm/Ble/Security/Pin", resource.String("024680"))
	pk, _ := d.Device.Radio.Advertising()
	if adMap(t, pk.Adv)[radio.ADManufacturerData][3]&radio.FlagPassKey == 0 {
		t.Error("the advertisement does not say a pass key is needed")
	}
	d.Restart() // the pass key is non-volatile
	a := connect(t, d, central(1))
	if _, err := do(d, a, &resource.Request{Op: resource.Get, Path: "/Info"}); !errors.Is(err, radio.ErrNotPaired) {
		t.Errorf("request before pairing: %v", err)
	}
	if err := a.Pair("", false); !errors.Is(err, radio.ErrNoPassKey) {
		t.Errorf("just-works pairing with a pass key set: %v", err)
	}
	if err := a.Pair("111111", false); !errors.Is(err, radio.ErrPassKey) {
		t.Errorf("wrong pass key: %v", err)
	}
	if err := a.Pair("024680", false); err != nil {
		t.Fatalf("right pass key: %v", err)
	}
	if env, err := do(d, a, &resource.Request{Op: resource.Get, Path: "/Info"}); err != nil || env.Status != 200 {
		t.Errorf("request after pairing: %v", err)
	}
	d.Expect(200, resource.Delete, "/Comm/Ble/Security/Pin")
	a.Disconnect()
	b := connect(t, d, central(2))
	if env, err := do(d, b, &resource.Request{Op: resource.Get, Path: "/Info"}); err != nil || env.Status != 200 {
		t.Errorf("just works after DELETE Pin: %v", err)
	}
}

func bonds(t *testing.T, d *sbt.Rig) string {
	t.Helper()
	l := d.Expect(200, resource.Get, "/Comm/Ble/Security/Bonds").Content.(*ble.BondList)
	return fmt.Sprint(l.BondedDevices)
}

func setPolicy(t *testing.T, d *sbt.Rig, policy, recovery int) {
	t.Helper()
	d.Expect(200, resource.Put, "/Comm/Ble/Security/Settings", sbt.Record(t, "BondingSettings", fmt.Sprintf(`{"Policy": %d, "RecoveryTime": %d}`, policy, recovery)))
}

// bond connects, pairs with bonding and disconnects.
func bond(t *testing.T, d *sbt.Rig, c *radio.Central) error {
	t.Helper()
	conn := connect(t, d, c)
	defer conn.Disconnect()
	return conn.Pair("", true)
}

func TestBondingPolicies(t *testing.T) {
	a, b := central(1), central(2)
	t.Run("0 BondingEnabled replaces the bond", func(t *testing.T) {
		d := sbt.New(t, senseboard.Config{})
		if err := bond(t, d, a); err != nil {
			t.Fatal(err)
		}
		if err := bond(t, d, b); err != nil {
			t.Fatal(err)
		}
		if got := bonds(t, d); got != "[{AA:BB:CC:00:00:02}]" {
			t.Errorf("bonds %s", got)
		}
	})
	t.Run("1 BondingDisabled refuses new bonds outside recovery", func(t *testing.T) {
		d := sbt.New(t, senseboard.Config{})
		setPolicy(t, d, 1, 30)
		d.Advance(31 * time.Second) // past the recovery time
		var pe *radio.PolicyError
		if err := bond(t, d, a); !errors.As(err, &pe) || err.Error() != "pairing refused by bonding policy BondingDisabled" {
			t.Fatalf("bond outside recovery: %v", err)
		}
		d.Device.Reset() // recovery mode: 30 s after the reset
		if err := bond(t, d, a); err != nil {
			t.Fatalf("bond in recovery: %v", err)
		}
		d.Advance(time.Minute)
		if err := bond(t, d, a); err != nil {
			t.Errorf("re-bond of the bonded device: %v", err)
		}
		if err := bond(t, d, b); err == nil {
			t.Error("another device bonded")
		}
	})
	t.Run("2 BondingOnce blocks further devices until the bond is deleted", func(t *testing.T) {
		d := sbt.New(t, senseboard.Config{})
		setPolicy(t, d, 2, 0)
		if err := bond(t, d, a); err != nil {
			t.Fatal(err)
		}
		if err := bond(t, d, b); err == nil || err.Error() != "pairing refused by bonding policy BondingOnce" {
			t.Errorf("second device: %v", err)
		}
		conn := connect(t, d, a) // the bonded phone reconnects with its keys
		if err := conn.Encrypt(); err != nil {
			t.Errorf("encrypt with the bond: %v", err)
		}
		conn.Disconnect()
		d.Expect(200, resource.Delete, "/Comm/Ble/Security/Bonds")
		if got := bonds(t, d); got != "[]" {
			t.Errorf("bonds after DELETE %s", got)
		}
		if err := bond(t, d, b); err != nil {
			t.Errorf("after deleting the bond: %v", err)
		}
	})
	t.Run("3 BondingSameMac pretends to bond other devices", func(t *testing.T) {
		d := sbt.New(t, senseboard.Config{})
		setPolicy(t, d, 3, 0)
		if err := bond(t, d, a); err != nil {
			t.Fatal(err)
		}
		if err := bond(t, d, b); err != nil {
			t.Fatalf("the other device must see a successful pairing: %v", err)
		}
		if got := bonds(t, d); got != "[{AA:BB:CC:00:00:01}]" {
			t.Errorf("bonds %s: the device must keep the first bond", got)
		}
		if !b.Bonded(d.Device.BLE.Address()) {
			t.Error("the other central does not believe it bonded")
		}
		conn := connect(t, d, b)
		if err := conn.Encrypt(); !errors.Is(err, radio.ErrUnknownKeys) {
			t.Errorf("the other central's keys: %v", err)
		}
		conn.Disconnect()
		if err := bond(t, d, a); err != nil {
			t.Errorf("re-bond from the same address: %v", err)
		}
	})
	t.Run("settings read as pairs and survive a restart", func(t *testing.T) {
		d := sbt.New(t, senseboard.Config{})
		setPolicy(t, d, 3, 120)
		bond(t, d, a)
		d.Restart()
		s := d.Expect(200, resource.Get, "/Comm/Ble/Security/Settings").Content.(*ble.SecuritySettings)
		if s.Policy != (resource.Pair{Value: 3, Name: "BondingSameMac"}) || s.RecoveryTime != 120 {
			t.Errorf("settings %+v", s)
		}
		if got := bonds(t, d); got != "[{AA:BB:CC:00:00:01}]" {
			t.Errorf("bond after restart %s", got)
		}
		conn := connect(t, d, a)
		if err := conn.Encrypt(); err != nil {
			t.Errorf("keys after restart: %v", err)
		}
		d.Expect(400, resource.Put, "/Comm/Ble/Security/Settings", sbt.Record(t, "BondingSettings", `{"Policy": 4}`))
	})
}

func TestHRSAndNUS(t *testing.T) {
	p := profile.Default()
	p.Modules.HRS, p.Modules.NUS = true, true
	d := sbt.New(t, senseboard.Config{Profile: p})
	hrs := d.Subscribe("/Comm/Ble/HRS")
	nus := d.Subscribe("/Comm/Ble/NUS")
	conn := connect(t, d, central(1))
	if err := conn.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	d.Expect(200, resource.Post, "/Comm/Ble/HRS", sbt.Record(t, "HRSData", `{"average": 72.5, "rrData": [830, 826]}`))
	d.Advance(conn.Interval()) // the next connection event carries it
	var got radio.Taken
	if conn.Take(&got); len(got.HRS) != 1 || got.HRS[0].Average != 72.5 || fmt.Sprint(got.HRS[0].RRData) != "[830 826]" {
		t.Errorf("central got %+v; want one update of 72.5 with [830 826]", got.HRS)
	}
	if err := conn.WriteNUS([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	d.Expect(200, resource.Post, "/Comm/Ble/NUS", sbt.Record(t, "NUSData", `{"Data": [1, 2, 3]}`))
	d.Advance(conn.Interval())
	if conn.Take(&got); len(got.NUS) != 1 || !bytes.Equal(got.NUS[0], []byte{1, 2, 3}) {
		t.Errorf("central got % X; want 01 02 03", got.NUS)
	}
	conn.Disconnect()
	if got := hrs.Contents(); len(got) != 2 || got[0].(*ble.HRSState).Enabled != true || got[1].(*ble.HRSState).Enabled != false {
		t.Errorf("HRS notifications %+v", got)
	}
	if got := nus.Contents(); len(got) != 1 || fmt.Sprint(got[0].(*ble.NUSData).Data) != "[104 105]" {
		t.Errorf("NUS notifications %+v", got)
	}
	d.Expect(503, resource.Post, "/Comm/Ble/NUS", sbt.Record(t, "NUSData", `{"Data": [1]}`))
	plain := sbt.New(t, senseboard.Config{})
	plain.Expect(404, resource.Post, "/Comm/Ble/HRS", sbt.Record(t, "HRSData", `{"average": 1}`))
}

func TestResetAndPowerOffDropTheConnection(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	a := connect(t, d, central(1))
	d.Device.Reset()
	if err := a.Err(); err == nil || err.Error() != "disconnected: the device reset" {
		t.Errorf("after a reset: %v", err)
	}
	b := connect(t, d, central(1))
	d.Device.PowerOff()
	if err := b.Err(); err == nil || err.Error() != "disconnected: the device turned off" {
		t.Errorf("after power off: %v", err)
	}
	if _, ok := d.Device.Radio.Advertising(); ok {
		t.Error("advertising while off")
	}
}
