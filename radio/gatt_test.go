package radio_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"senseboard/clock"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
)

func TestUUIDForms(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"180D", "0000180d-0000-1000-8000-00805f9b34fb"},
		{"2a37", "00002a37-0000-1000-8000-00805f9b34fb"},
		{"34802252-7185-4D5D-B431-630E7050E8F0", "34802252-7185-4d5d-b431-630e7050e8f0"},
	} {
		u, err := radio.ParseUUID(tt.in)
		if err != nil || u.String() != tt.want {
			t.Errorf("ParseUUID(%q) = %v, %v; want %s", tt.in, u, err, tt.want)
		}
	}
	if radio.UUID16(0x180D) != radio.HRSService {
		t.Error("UUID16(0x180D) is not the heart-rate service")
	}
	for _, bad := range []string{"", "18", "180G", "34802252-7185-4d5d-b431-630e7050e8f", "34802252_7185-4d5d-b431-630e7050e8f0", "3480225x-7185-4d5d-b431-630e7050e8f0"} {
		if _, err := radio.ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) accepted", bad)
		}
	}
}

// echo is a service that notifies back what the central writes, in upper case.
type echo struct {
	c      *radio.Conn
	closed *int
	on     *[]bool
	mtus   *[]int
}

var (
	echoService = radio.MustParseUUID("00000001-0000-4000-8000-000000000000")
	echoIn      = radio.MustParseUUID("00000002-0000-4000-8000-000000000000")
	echoOut     = radio.MustParseUUID("00000003-0000-4000-8000-000000000000")
)

func (e echo) Write(_ radio.UUID, data []byte) error {
	out := make([]byte, len(data))
	for i, b := range data {
		if 'a' <= b && b <= 'z' {
			b -= 'a' - 'A'
		}
		out[i] = b
	}
	return e.c.Notify(echoOut, out)
}
func (e echo) Notifying(_ radio.UUID, on bool) { *e.on = append(*e.on, on) }
func (e echo) Close()                          { *e.closed++ }
func (e echo) MTUChanged(mtu int)              { *e.mtus = append(*e.mtus, mtu) }

func TestGATTWriteAndNotify(t *testing.T) {
	p := newPeripheral(t, radio.Config{})
	closed, switches, mtus := 0, []bool{}, []int{}
	err := p.AddService(&radio.Service{
		UUID: echoService,
		Characteristics: []radio.Characteristic{
			{UUID: echoIn, Props: radio.PropWrite},
			{UUID: echoOut, Props: radio.PropNotify},
		},
		Open: func(c *radio.Conn) radio.Handler { return echo{c, &closed, &switches, &mtus} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddService(&radio.Service{UUID: echoService}); err == nil {
		t.Error("a second service with the same UUID was added")
	}
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	if c.MTU() != radio.DefaultMTU {
		t.Errorf("MTU %d, want %d", c.MTU(), radio.DefaultMTU)
	}
	if err := c.Write(echoIn, []byte("not heard")); err != nil {
		t.Fatal(err)
	}
	if err := c.SetNotify(echoOut, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(echoIn, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := took(c).Notes; len(got) != 1 || got[0].Char != echoOut || string(got[0].Data) != "HELLO" {
		t.Errorf("notifications %v; want HELLO of %s", got, echoOut)
	}
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"MTU below 23", c.SetMTU(22), nil},
		{"write to a notify characteristic", c.Write(echoOut, []byte("x")), radio.ErrNotPermitted},
		{"notify a write characteristic", c.SetNotify(echoIn, true), radio.ErrNotPermitted},
		{"unknown characteristic", c.Write(radio.NUSRX, []byte("x")), radio.ErrNoCharacteristic},
	} {
		if tt.err == nil || tt.want != nil && !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	if err := c.SetMTU(23); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(echoIn, make([]byte, 21)); !errors.Is(err, radio.ErrTooLong) {
		t.Errorf("a write of 21 bytes at MTU 23: %v", err)
	}
	if err := c.Write(echoIn, make([]byte, 20)); err != nil {
		t.Errorf("a write of 20 bytes at MTU 23: %v", err)
	}
	if got := took(c).Notes; len(got) != 1 {
		t.Errorf("%d notifications of the write of 20 bytes; want 1", len(got))
	}
	c.Disconnect()
	c.Write(echoIn, []byte("after"))
	if got := took(c).Notes; len(got) != 0 {
		t.Errorf("%d notifications after the end", len(got))
	}
	if closed != 1 || fmt.Sprint(switches) != "[true]" || fmt.Sprint(mtus) != "[23]" {
		t.Errorf("the service was closed %d times and heard switches %v and MTUs %v", closed, switches, mtus)
	}
	if err := c.Write(echoIn, []byte("x")); !errors.Is(err, radio.ErrDisconnected) {
		t.Errorf("write after the end: %v", err)
	}
}

// TestBatteryServiceReads: the Battery Level reads the battery's level
// now, a uint8 percent (more than 100 is reported as 100); it cannot be
// written or notified, and other characteristics cannot be read.
func TestBatteryServiceReads(t *testing.T) {
	p := newPeripheral(t, radio.Config{NUS: true})
	level := uint8(87)
	if err := p.AddService(radio.NewBatteryService(func() uint8 { return level })); err != nil {
		t.Fatal(err)
	}
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint8{87, 3, 100} {
		level = want
		if b, err := c.Read(radio.BatteryLevel); err != nil || len(b) != 1 || b[0] != want {
			t.Errorf("Battery Level at %d%%: % x, %v", want, b, err)
		}
	}
	level = 250
	if b, err := c.Read(radio.BatteryLevel); err != nil || len(b) != 1 || b[0] != 100 {
		t.Errorf("Battery Level of a model past 100%%: % x, %v", b, err)
	}
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"write to the Battery Level", c.Write(radio.BatteryLevel, []byte{1}), radio.ErrNotPermitted},
		{"notifications of the Battery Level", c.SetNotify(radio.BatteryLevel, true), radio.ErrNotPermitted},
		{"read of a write characteristic", errOf(c.Read(radio.NUSRX)), radio.ErrNotPermitted},
		{"read of an unknown characteristic", errOf(c.Read(radio.HeartRateMeasurement)), radio.ErrNoCharacteristic},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	c.Disconnect()
	if _, err := c.Read(radio.BatteryLevel); !errors.Is(err, radio.ErrDisconnected) {
		t.Errorf("read after the end: %v", err)
	}
}

func errOf(_ []byte, err error) error { return err }

func TestHeartRateServiceNotifies(t *testing.T) {
	h := &hrsHost{}
	p := newPeripheral(t, radio.Config{HRS: true})
	p.Attach(h)
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetNotify(radio.HeartRateMeasurement, true); err != nil {
		t.Fatal(err)
	}
	c.SendHRS(radio.HRSData{Average: 72.5, RRData: []uint16{830, 1000}})
	got := took(c)
	if len(got.Notes) != 1 || got.Notes[0].Char != radio.HeartRateMeasurement || fmt.Sprintf("% X", got.Notes[0].Data) != "10 49 51 03 00 04" {
		t.Errorf("measurement %v; want 10 49 51 03 00 04 of %s", got.Notes, radio.HeartRateMeasurement)
	}
	if len(got.HRS) != 1 || got.HRS[0].Average != 72.5 {
		t.Errorf("typed measurement %+v", got.HRS)
	}
	c.Disconnect()
	if heard := h.heard; fmt.Sprint(heard) != "[true false]" {
		t.Errorf("notification switches %v", heard)
	}
	if got := radio.AppendHeartRateMeasurement(nil, radio.HRSData{Average: 300}); fmt.Sprintf("% X", got) != "01 2C 01" {
		t.Errorf("300 bpm: % X", got)
	}
}

func FuzzParseUUID(f *testing.F) {
	f.Add("180d")
	f.Add("34802252-7185-4d5d-b431-630e7050e8f0")
	f.Add("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := radio.ParseUUID(s)
		if err != nil {
			return
		}
		back, err := radio.ParseUUID(u.String())
		if err != nil || back != u {
			t.Fatalf("%q: %s reads back as %s, %v", s, u, back, err)
		}
	})
}

// counter is a service that notifies how many bytes the central wrote.
type counter struct{ c *radio.Conn }

func (h counter) Write(_ radio.UUID, data []byte) error {
	return h.c.Notify(echoOut, []byte{byte(len(data))})
}
func (counter) Notifying(radio.UUID, bool) {}
func (counter) Close()                     {}

func ExamplePeripheral_AddService() {
	dir, _ := os.MkdirTemp("", "radio-example")
	defer os.RemoveAll(dir)
	store, _ := nvm.Open(dir)
	defer store.Close()
	settings, _ := radio.OpenSettings(store)
	p, _ := radio.New(radio.Config{Address: "0C:8C:DC:00:01:23", Serial: "000123"}, settings)
	defer p.Close()
	p.AddService(&radio.Service{
		UUID: echoService,
		Characteristics: []radio.Characteristic{
			{UUID: echoIn, Props: radio.PropWrite},
			{UUID: echoOut, Props: radio.PropNotify},
		},
		Open: func(c *radio.Conn) radio.Handler { return counter{c} },
	})
	c, _ := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", "phone"), resource.NewQueue(1))
	c.SetNotify(echoOut, true)
	c.Write(echoIn, []byte("hello"))
	var got radio.Taken
	c.Take(&got)
	n := got.Notes[0]
	fmt.Println(n.Char, n.Data, c.MTU())
	c.Disconnect()
	// Output: 00000003-0000-4000-8000-000000000000 [5] 247
}

// hrsHost is a Host that hears the heart-rate notifications switch.
type hrsHost struct{ heard []bool }

func (*hrsHost) OnAir() bool                { return true }
func (*hrsHost) UpdateMode() bool           { return false }
func (*hrsHost) SinceReset() time.Duration  { return time.Hour }
func (*hrsHost) Logf(string, ...any)        {}
func (*hrsHost) Connected(*radio.Conn)      {}
func (*hrsHost) Disconnected(*radio.Conn)   {}
func (h *hrsHost) HRSNotifications(on bool) { h.heard = append(h.heard, on) }
func (*hrsHost) NUSWritten([]byte)          {}

// A heart-rate measurement, and serial data the central has TX
// notifications on for, is a notification of the service's characteristic
// when it fits the MTU (MTU-3 bytes), and is taken among its service's
// items whatever its size.
func TestServicesNotifyWhatFitsTheMTU(t *testing.T) {
	for _, tt := range []struct {
		rr    int // RR intervals: 2 bytes each, after a flag and the rate
		notes int
	}{
		{8, 1},  // 18 bytes
		{9, 1},  // 20 bytes: MTU 23 - 3
		{10, 0}, // 22 bytes
	} {
		p := newPeripheral(t, radio.Config{HRS: true, NUS: true})
		c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetMTU(radio.MinMTU); err != nil {
			t.Fatal(err)
		}
		if err := c.SetHRSNotifications(true); err != nil {
			t.Fatal(err)
		}
		if err := c.SetNotify(radio.NUSTX, true); err != nil {
			t.Fatal(err)
		}
		c.SendHRS(radio.HRSData{Average: 60, RRData: make([]uint16, tt.rr)})
		c.SendNUS(make([]byte, 2+2*tt.rr)) // as many bytes as the measurement
		var got radio.Taken
		c.Take(&got)
		hrs, nus := 0, 0
		for _, n := range got.Notes {
			switch n.Char {
			case radio.HeartRateMeasurement:
				hrs++
			case radio.NUSTX:
				nus++
			}
		}
		if len(got.HRS) != 1 || len(got.NUS) != 1 || hrs != tt.notes || nus != tt.notes {
			t.Errorf("%d bytes at MTU %d: took %d measurements, %d serial packets and %d, %d notifications of them; want 1, 1, %d and %d",
				2+2*tt.rr, radio.MinMTU, len(got.HRS), len(got.NUS), hrs, nus, tt.notes, tt.notes)
		}
		c.Disconnect()
	}
}

// A write of the central, and a notification of the device, carries at
// most MTU-3 bytes, at the smallest MTU as at others.
func TestWriteFitsTheMTU(t *testing.T) {
	for _, tt := range []struct {
		mtu, n int
		want   error
	}{
		{radio.MinMTU, 20, nil},
		{radio.MinMTU, 21, radio.ErrTooLong},
		{100, 97, nil},
		{100, 98, radio.ErrTooLong},
	} {
		p := newPeripheral(t, radio.Config{NUS: true})
		c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetMTU(tt.mtu); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteNUS(make([]byte, tt.n)); !errors.Is(err, tt.want) {
			t.Errorf("a write of %d bytes at MTU %d: %v; want %v", tt.n, tt.mtu, err, tt.want)
		}
		c.Disconnect()

		c = newAirtimeLink(t, profile.Airtime{}, 1, clock.NewVirtual())
		if err := c.SetMTU(tt.mtu); err != nil {
			t.Fatal(err)
		}
		if _, err := c.TryNotify(streamChar, make([]byte, tt.n)); !errors.Is(err, tt.want) {
			t.Errorf("a notification of %d bytes at MTU %d: %v; want %v", tt.n, tt.mtu, err, tt.want)
		}
	}
}

// A notification the central has no room for is lost whole; the next one
// arrives once the central took what waited, with the model off and on.
func TestNotifyAfterALoss(t *testing.T) {
	for _, a := range []profile.Airtime{{}, {Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8}} {
		clk := clock.NewVirtual()
		c := newAirtimeLink(t, a, 1, clk)
		for i := range 257 {
			if err := c.Notify(streamChar, []byte{byte(i)}, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			clk.Advance(c.Interval())
		}
		var got radio.Taken
		c.Take(&got)
		if err := c.Notify(streamChar, []byte{1}, []byte{2}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(c.Interval())
		c.Take(&got)
		if len(got.Notes) != 2 || got.Notes[0].Data[0] != 1 || got.Notes[1].Data[0] != 2 {
			t.Errorf("enabled %v: after a loss, took %v; want the two parts of the notification sent after", a.Enabled, got.Notes)
		}
	}
}

// The rate is one byte up to 255 and two from 256 (flag bit 0).
func TestHeartRateMeasurementRate(t *testing.T) {
	for _, tt := range []struct {
		bpm  float32
		want string
	}{
		{254, "00 fe"},
		{255, "00 ff"},
		{256, "01 00 01"},
	} {
		if got := fmt.Sprintf("% x", radio.AppendHeartRateMeasurement(nil, radio.HRSData{Average: tt.bpm})); got != tt.want {
			t.Errorf("%v bpm: % s; want %s", tt.bpm, got, tt.want)
		}
	}
}
