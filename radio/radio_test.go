package radio_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"senseboard/clock"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
)

func openStore(t testing.TB) *nvm.Store {
	t.Helper()
	s, err := nvm.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newPeripheral(t testing.TB, cfg radio.Config) *radio.Peripheral {
	t.Helper()
	cfg.Address, cfg.Serial, cfg.Product = "0C:8C:DC:00:01:23", "000123", "Senseboard"
	st, err := radio.OpenSettings(openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := radio.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestNewChecksTheThroughputModel(t *testing.T) {
	good := profile.DefaultAirtime
	for _, tt := range []struct {
		name    string
		airtime func(*profile.Airtime)
		bad     string // in the error; "" for none
	}{
		{"the default", func(*profile.Airtime) {}, ""},
		{"off, with nothing set", func(a *profile.Airtime) { *a = profile.Airtime{} }, ""},
		{"data length 0", func(a *profile.Airtime) { a.DataLength = 0 }, "dataLength 0"},
		{"no packets per event", func(a *profile.Airtime) { a.PacketsPerEvent = 0 }, "packetsPerEvent 0"},
		{"a queue of one", func(a *profile.Airtime) { a.TXQueue = 1 }, "txQueue 1"},
		{"missed events not a number", func(a *profile.Airtime) { a.MissedEvents = math.NaN() }, "missedEvents NaN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := good
			tt.airtime(&a)
			st, err := radio.OpenSettings(openStore(t))
			if err != nil {
				t.Fatal(err)
			}
			p, err := radio.New(radio.Config{Serial: "000123", Airtime: a}, st)
			if p != nil {
				defer p.Close()
			}
			switch {
			case tt.bad == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.bad == "":
				if p == nil {
					t.Fatal("no peripheral")
				}
			case !errors.Is(err, profile.ErrAirtime) || !strings.Contains(err.Error(), tt.bad) || !strings.Contains(err.Error(), "000123"):
				t.Fatalf("error %v, want one wrapping ErrAirtime that names %q and the device", err, tt.bad)
			}
		})
	}
}

func TestDefaultAdvertisementBytes(t *testing.T) {
	for _, tt := range []struct {
		passKey, bonded, hrs bool
		adv                  string
	}{
		{false, false, false, "02 01 06 05 FF FF FF 01 00 11 07 41 00 74 70 63 88 7A B5 CC 49 31 82 90 30 35 61"},
		{true, true, true, "02 01 06 05 FF FF FF 01 07 11 07 41 00 74 70 63 88 7A B5 CC 49 31 82 90 30 35 61 03 03 0D 18"},
	} {
		a := radio.DefaultAdvertisement("Senseboard", "000123", tt.passKey, tt.bonded, tt.hrs)
		p := a.Packets()
		if got := fmt.Sprintf("% X", p.Adv); got != tt.adv {
			t.Errorf("%+v: adv %s, want %s", tt, got, tt.adv)
		}
		if string(p.ScanResp) != "\x12\x09Senseboard 000123" {
			t.Errorf("scan response %q", p.ScanResp)
		}
		back, err := radio.ParseAdvertisement(p.Adv, p.ScanResp)
		if err != nil || !reflect.DeepEqual(back, a) {
			t.Errorf("parsed back %+v, %v; want %+v", back, err, a)
		}
	}
}

func TestLongNameIsShortened(t *testing.T) {
	a := radio.DefaultAdvertisement("A product with a long name", "000123", false, false, false)
	p := a.Packets()
	if len(p.ScanResp) != radio.MaxPacket || p.ScanResp[1] != radio.ADShortName {
		t.Fatalf("scan response % X", p.ScanResp)
	}
	back, _ := radio.ParseAdvertisement(p.ScanResp)
	if !back.ShortName || back.Name != "A product with a long name 00" {
		t.Errorf("parsed %+v", back)
	}
}

func TestParseAdvertisementReadsGoodPacketsDespiteBadOnes(t *testing.T) {
	good := radio.DefaultAdvertisement("S", "1", true, false, true)
	a, err := radio.ParseAdvertisement(good.AppendAdv(nil), []byte{9, 9})
	if err == nil || !strings.Contains(err.Error(), "packet 2") {
		t.Errorf("error %v, want one naming packet 2", err)
	}
	if !a.PassKey || !a.HRS || a.Name != "" {
		t.Errorf("advertisement %+v", a)
	}
}

func TestOpenSettingsChecksValues(t *testing.T) {
	for _, tt := range []struct {
		name, json, want string
	}{
		{"interval 1", `{"Adv": {"Interval": 1, "Timeout": 0}}`, "Interval 1 is outside 32..16384"},
		{"interval above", `{"Adv": {"Interval": 20000, "Timeout": 0}}`, "Interval 20000"},
		{"bad packet", `{"Adv": {"AdvPacket": [9, 1], "Interval": 800, "Timeout": 0}}`, "AdvPacket is not a sequence of AD structures"},
		{"packet byte", `{"Adv": {"ScanRespPacket": [2, 9, 300], "Interval": 800, "Timeout": 0}}`, "ScanRespPacket byte 2 is 300"},
		{"pass key", `{"Adv": {"Interval": 800}, "PassKey": "12a"}`, "pass key \"12a\""},
		{"policy", `{"Adv": {"Interval": 800}, "Policy": 7}`, "bonding policy 7 is not a policy"},
		{"bond key", `{"Adv": {"Interval": 800}, "Bond": {"Address": "AA:BB:CC:00:00:01", "Key": "x"}}`, "bond's key"},
		{"bond address", `{"Adv": {"Interval": 800}, "Bond": {"Address": "phone", "Key": "00112233445566778899aabbccddeeff"}}`, "central address \"phone\""},
	} {
		s := openStore(t)
		if err := s.Write(radio.StateFile, []byte(tt.json)); err != nil {
			t.Fatal(err)
		}
		_, err := radio.OpenSettings(s)
		var ce *nvm.CorruptError
		if !errors.As(err, &ce) || ce.Path != s.Path(radio.StateFile) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a CorruptError naming %s and saying %q", tt.name, err, s.Path(radio.StateFile), tt.want)
		}
	}
	s := openStore(t)
	st, err := radio.OpenSettings(s)
	if err != nil || st.Get().Adv.Interval != radio.DefaultInterval {
		t.Errorf("no file: %v", err)
	}
}

// What the device sent before the connection ended is taken after it,
// and nothing sent after; the reader is woken at the end.
func TestTakeWhenTheConnectionEnds(t *testing.T) {
	p := newPeripheral(t, radio.Config{HRS: true, NUS: true})
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	woken := 0
	c.WakeWith(func() { woken++ })
	if err := c.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	c.SendHRS(radio.HRSData{Average: 60})
	c.SendNUS([]byte{1})
	before := woken
	c.Disconnect()
	if woken != before+1 || c.Err() == nil {
		t.Errorf("the end woke the reader %d times (Err %v); want once, with Err set", woken-before, c.Err())
	}
	c.SendHRS(radio.HRSData{}) // sending after the end is harmless
	c.SendNUS([]byte{2})
	var got radio.Taken
	c.Take(&got)
	if len(got.HRS) != 1 || got.HRS[0].Average != 60 {
		t.Errorf("measurements taken after the end: %+v; want the one sent before", got.HRS)
	}
	if len(got.NUS) != 1 || !bytes.Equal(got.NUS[0], []byte{1}) {
		t.Errorf("serial data taken after the end: %v; want the one sent before", got.NUS)
	}
	if !errors.Is(c.Err(), radio.ErrDisconnected) {
		t.Errorf("Err %v", c.Err())
	}
}

func TestAdmit(t *testing.T) {
	p := newPeripheral(t, radio.Config{})
	if err := p.SetPassKey("123456"); err != nil {
		t.Fatal(err)
	}
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(); !errors.Is(err, radio.ErrNotPaired) {
		t.Errorf("before pairing: %v", err)
	}
	if err := c.Pair("123456", false); err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(); err != nil {
		t.Errorf("after pairing: %v", err)
	}
	c.Drop("test")
	if err := c.Admit(); !errors.Is(err, radio.ErrDisconnected) {
		t.Errorf("after the end: %v", err)
	}
	if _, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:02", ""), resource.NewQueue(1)); err != nil {
		t.Errorf("the device does not advertise again after the end: %v", err)
	}
}

func FuzzParseAD(f *testing.F) {
	a := radio.DefaultAdvertisement("Senseboard", "000123", true, false, true)
	f.Add(a.AppendAdv(nil))
	f.Add(a.AppendScanResp(nil))
	f.Add([]byte{2, 1, 6, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		ads, err := radio.ParseAD(p)
		if err != nil {
			return
		}
		n := 0
		for _, ad := range ads {
			n += 2 + len(ad.Data)
		}
		if n > len(p) {
			t.Fatalf("% x: structures of %d bytes in a packet of %d", p, n, len(p))
		}
		adv, err := radio.ParseAdvertisement(p)
		if err != nil {
			t.Fatalf("% x: ParseAD accepts it, ParseAdvertisement says %v", p, err)
		}
		// what the advertisement says, built again and read back, says the same
		rebuilt := adv.AppendAdv(nil)
		again, err := radio.ParseAdvertisement(rebuilt)
		if err != nil || again.PassKey != adv.PassKey || again.HRS != adv.HRS || again.Bonded != adv.Bonded {
			t.Fatalf("% x: rebuilt % x reads %+v, %v; want %+v", p, rebuilt, again, err, adv)
		}
	})
}

func ExampleParseAdvertisement() {
	a := radio.DefaultAdvertisement("Senseboard", "000123", true, false, true)
	p := a.Packets()
	seen, err := radio.ParseAdvertisement(p.Adv, p.ScanResp)
	fmt.Println(seen.Name, seen.PassKey, seen.HRS, err)
	// Output: Senseboard 000123 true true <nil>
}

// Pairing checks the pass key when the device has one, and takes any
// central's when it has none.
func TestPairChecksThePassKey(t *testing.T) {
	for _, tt := range []struct {
		name       string
		pin, given string
		want       error
	}{
		{"no pass key", "", "", nil},
		{"no pass key, one given", "", "654321", nil},
		{"the pass key", "123456", "123456", nil},
		{"another pass key", "123456", "654321", radio.ErrPassKey},
		{"none given", "123456", "", radio.ErrNoPassKey},
	} {
		p := newPeripheral(t, radio.Config{})
		if tt.pin != "" {
			if err := p.SetPassKey(tt.pin); err != nil {
				t.Fatal(err)
			}
		}
		c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Pair(tt.given, false); !errors.Is(err, tt.want) || (err == nil) != c.Encrypted() {
			t.Errorf("%s: Pair(%q) = %v, encrypted %v; want %v", tt.name, tt.given, err, c.Encrypted(), tt.want)
		}
		c.Disconnect()
	}
}

// SetParams refuses parameters out of range and keeps the ones it had.
func TestSetParamsChecks(t *testing.T) {
	for _, tt := range []struct {
		name string
		cp   radio.ConnParams
		ok   bool
	}{
		{"in range", radio.ConnParams{MinConnInterval: 6, MaxConnInterval: 40, SupTimeout: 400}, true},
		{"min above max", radio.ConnParams{MinConnInterval: 40, MaxConnInterval: 6, SupTimeout: 400}, false},
		{"supervision timeout too short", radio.ConnParams{MinConnInterval: 6, MaxConnInterval: 40, SupTimeout: 5}, false},
	} {
		p := newPeripheral(t, radio.Config{})
		c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
		if err != nil {
			t.Fatal(err)
		}
		before := c.Params()
		err = c.SetParams(tt.cp)
		want := before
		if tt.ok {
			want = tt.cp
		}
		if (err == nil) != tt.ok || c.Params() != want {
			t.Errorf("%s: SetParams(%+v) = %v, params %+v; want ok %v, params %+v", tt.name, tt.cp, err, c.Params(), tt.ok, want)
		}
		c.Disconnect()
	}
}

// ParseAD reads structures up to the packet's end or a zero length, after
// which only zeros may follow, and refuses a structure that runs past the
// end.
func TestParseADBounds(t *testing.T) {
	for _, tt := range []struct {
		name   string
		packet []byte
		n      int // structures; -1: an error
	}{
		{"to the end", []byte{2, radio.ADFlags, 6, 3, radio.ADUUID16Complete, 0x0D, 0x18}, 2},
		{"zeros after the last", []byte{2, radio.ADFlags, 6, 0, 0, 0}, 1},
		{"data after a zero length", []byte{2, radio.ADFlags, 6, 0, 5}, -1},
		{"past the end by one", []byte{3, radio.ADFlags, 6}, -1},
		{"past the end by two", []byte{4, radio.ADFlags, 6}, -1},
	} {
		ads, err := radio.ParseAD(tt.packet)
		if n := len(ads); err != nil && tt.n != -1 || err == nil && n != tt.n {
			t.Errorf("%s: ParseAD(% x) = %d structures, %v; want %d (-1: an error)", tt.name, tt.packet, n, err, tt.n)
		}
	}
}

// ParseAdvertisement reads an empty flags structure as no flags and the
// whole 16-bit UUIDs of a list of odd length.
func TestParseAdvertisementShortData(t *testing.T) {
	a, err := radio.ParseAdvertisement([]byte{1, radio.ADFlags, 4, radio.ADUUID16Complete, 0x0D, 0x18, 0x99})
	if err != nil || a.Flags != 0 || fmt.Sprint(a.Services16) != "[6157]" {
		t.Errorf("ParseAdvertisement = flags %d, 16-bit services %v, %v; want 0, [6157] (0x180D)", a.Flags, a.Services16, err)
	}
}

// AppendAdv leaves out, whole, a structure that would not fit in the
// packet after what dst held, and adds none for an empty list; the scan
// response shortens a name only past 29 bytes.
func TestAppendAdvFits(t *testing.T) {
	uuid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, tt := range []struct {
		name   string
		a      radio.Advertisement
		prefix int // bytes in dst before
		want   int // bytes appended
	}{
		{"flags alone", radio.Advertisement{Flags: 6}, 0, 3},
		{"31 bytes", radio.Advertisement{Flags: 6, Manufacturer: true, Services128: [][16]byte{uuid}, Services16: []uint16{0x180D}}, 0, 31},
		{"a list that does not fit", radio.Advertisement{Flags: 6, Manufacturer: true, Services128: [][16]byte{uuid}, Services16: []uint16{0x180D, 0x180F}}, 0, 27},
		{"after bytes of dst", radio.Advertisement{Flags: 6, Manufacturer: true, Services128: [][16]byte{uuid}, Services16: []uint16{0x180D}}, 5, 31},
	} {
		dst := make([]byte, tt.prefix)
		if got := len(tt.a.AppendAdv(dst)) - tt.prefix; got != tt.want {
			t.Errorf("%s: appended %d bytes; want %d", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n     int
		short bool
	}{{29, false}, {30, true}} {
		a := radio.Advertisement{Name: strings.Repeat("N", tt.n)}
		b := a.AppendScanResp(nil)
		if short := b[1] == radio.ADShortName; short != tt.short || len(b) != 2+min(tt.n, 29) {
			t.Errorf("a name of %d bytes: % x; want shortened %v", tt.n, b, tt.short)
		}
	}
}

// A custom advertising packet's bytes are 0..255, and an empty AdvPacket
// is refused (the default content is null), while an empty scan response
// is allowed.
func TestAdvSettingsPackets(t *testing.T) {
	for _, tt := range []struct {
		name      string
		adv, scan []int
		ok        bool
	}{
		{"bytes 0 and 255", []int{2, 0xFF, 0, 0}, nil, true},
		{"a byte of 256", []int{2, 0xFF, 256}, nil, false},
		{"a byte of -1", []int{2, 0xFF, -1}, nil, false},
		{"an empty advertising packet", []int{}, nil, false},
		{"an empty scan response", []int{2, 1, 6}, []int{}, true},
	} {
		s := radio.AdvSettings{AdvPacket: tt.adv, ScanRespPacket: tt.scan, Interval: radio.MinInterval}
		if err := s.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate = %v; want ok %v", tt.name, err, tt.ok)
		}
	}
}

// The limits of the settings hold at their ends: a central's connection
// interval of 6 to 3200 units, an advertising interval of MinInterval to
// MaxInterval, and the bonding policies up to BondingSameMac.
func TestSettingsLimits(t *testing.T) {
	for _, tt := range []struct {
		interval uint16
		ok       bool
	}{{5, false}, {radio.ConnIntervalMin, true}, {radio.ConnIntervalMax, true}, {radio.ConnIntervalMax + 1, false}} {
		p := newPeripheral(t, radio.Config{})
		central := radio.NewCentral("AA:BB:CC:00:00:01", "")
		central.Interval = tt.interval
		c, err := p.Connect(central, resource.NewQueue(1))
		if (err == nil) != tt.ok {
			t.Errorf("a central asking for an interval of %d units: %v; want ok %v", tt.interval, err, tt.ok)
		}
		if err == nil {
			c.Disconnect()
		}
	}
	for _, tt := range []struct {
		interval uint16
		ok       bool
	}{{radio.MinInterval - 1, false}, {radio.MinInterval, true}, {radio.MaxInterval, true}, {radio.MaxInterval + 1, false}} {
		s := radio.AdvSettings{Interval: tt.interval}
		if err := s.Validate(); (err == nil) != tt.ok {
			t.Errorf("an advertising interval of %d: %v; want ok %v", tt.interval, err, tt.ok)
		}
	}
	if !radio.BondingSameMac.Valid() || (radio.BondingSameMac + 1).Valid() {
		t.Errorf("BondingSameMac valid %v, the one after it %v; want true and false", radio.BondingSameMac.Valid(), (radio.BondingSameMac + 1).Valid())
	}
}

// The advertising timeout stops advertising that many seconds after it
// started, and for good: it does not start again by itself. Settings
// changed while the device advertises count the timeout from then, and
// a timeout of 0 never stops it.
func TestAdvertisingTimeout(t *testing.T) {
	clk := clock.NewVirtual()
	p := newPeripheral(t, radio.Config{Clock: clk})
	advertising := func() bool { _, ok := p.Advertising(); return ok }
	if !advertising() {
		t.Fatal("a new device does not advertise")
	}
	if err := p.SetAdvSettings(radio.AdvSettings{Interval: radio.DefaultInterval, Timeout: 3}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if err := p.SetAdvSettings(radio.AdvSettings{Interval: radio.DefaultInterval, Timeout: 3}); err != nil { // from now
		t.Fatal(err)
	}
	clk.Advance(3*time.Second - time.Millisecond)
	if !advertising() {
		t.Fatal("advertising stopped before its timeout counted from the last settings")
	}
	clk.Advance(time.Millisecond)
	if advertising() {
		t.Fatal("still advertising at its timeout")
	}
	clk.Advance(time.Minute)
	if advertising() {
		t.Fatal("advertising started again by itself")
	}
	if err := p.StartAdvertising(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	if advertising() {
		t.Fatal("advertising started again ran past its timeout")
	}
	if err := p.SetAdvSettings(radio.AdvSettings{Interval: radio.DefaultInterval}); err != nil {
		t.Fatal(err)
	}
	if err := p.StartAdvertising(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if !advertising() {
		t.Error("advertising without a timeout stopped")
	}
}

// A peripheral on a clock of its own, made when its Config gave none,
// closes it: the calls pending on it are dropped. A clock it was given is
// its giver's to close.
func TestCloseClosesThePeripheralsOwnClock(t *testing.T) {
	given := clock.NewReal()
	defer given.Close()
	for _, tt := range []struct {
		name  string
		clock clock.Clock
		own   bool
	}{
		{"own", nil, true},
		{"given", given, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeripheral(t, radio.Config{Clock: tt.clock})
			tm := p.Clock().AfterFunc(time.Hour, func() {})
			p.Close()
			if pending := tm.Stop(); pending == tt.own {
				t.Errorf("after Close a call an hour away was pending %v on the peripheral's clock (its own %v)", pending, tt.own)
			}
		})
	}
}
