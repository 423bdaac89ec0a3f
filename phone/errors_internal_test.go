package phone

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"senseboard/air"
	"senseboard/client"
	"senseboard/link"
	"senseboard/resource"
	"senseboard/wire"
)

// scriptedPhone starts a phone, Manual or not, that sees device 000777 of
// script s and has scanned it; the phone closes, and the device's
// goroutines end, when the test ends.
func scriptedPhone(t *testing.T, s script, manual bool) (*Phone, *scriptedDevice) {
	t.Helper()
	dev := &scriptedDevice{script: s, requests: make(chan struct{}, 1)}
	ph, err := New(Config{Local: []Peripheral{{Serial: "000777", Dial: dev.dial}}, Manual: manual, Idle: time.Hour, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.wg.Wait)
	t.Cleanup(func() { ph.Close() })
	ph.Scan(context.Background())
	return ph, dev
}

// An error of the phone names its device once, whichever layer it comes
// from: the device's refusals (the radio's, which name the device in
// their own words, and the others), the link's end, the phone's own
// ending of a connection (Bluetooth off, a device that went away).
func TestErrorsNameTheDeviceOnce(t *testing.T) {
	ctx := context.Background()
	var remote *client.RemoteError
	isRemote := func(err error) bool { return errors.As(err, &remote) }
	// request starts a GET /Info, which the device holds, and returns
	// its error once end has ended the connection
	request := func(ph *Phone, dev *scriptedDevice, end func(ph *Phone)) error {
		return get(ctx, ph, func() { <-dev.requests; end(ph) })
	}
	for _, tt := range []struct {
		name   string
		dev    script
		manual bool
		do     func(*Phone, *scriptedDevice) error
		is     func(error) bool // the sentinel, or the type, of the error
		want   string           // a part of its text
	}{
		{"the radio refuses to connect, in words that name the device",
			script{refuse: map[wire.Kind]string{link.Connect: "device 000777 is not advertising"}}, true,
			func(ph *Phone, _ *scriptedDevice) error { return ph.Connect(ctx, "000777") },
			isRemote, "device 000777 is not advertising"},
		{"the same, on a use that connects",
			script{refuse: map[wire.Kind]string{link.Connect: "device 000777: connection failed to be established"}}, false,
			func(ph *Phone, _ *scriptedDevice) error { _, err := ph.Use(ctx, "000777"); return err },
			isRemote, "device 000777: connection failed to be established"},
		{"the device refuses to pair",
			script{refuse: map[wire.Kind]string{link.Pair: "pairing refused by bonding policy BondingOnce"}}, false,
			func(ph *Phone, _ *scriptedDevice) error { return ph.Pair(ctx, "000777", "", false) },
			isRemote, "device 000777: pairing refused by bonding policy BondingOnce"},
		{"the link ends during the pairing",
			script{hangUp: map[wire.Kind]bool{link.Pair: true}}, false,
			func(ph *Phone, _ *scriptedDevice) error { return ph.Pair(ctx, "000777", "", false) },
			func(err error) bool { return errors.Is(err, client.ErrClosed) }, "device 000777: "},
		{"the caller gives up on a pairing, which connects first",
			script{}, false,
			func(ph *Phone, _ *scriptedDevice) error {
				ctx, cancel := context.WithCancel(ctx)
				cancel()
				return ph.Pair(ctx, "000777", "", false)
			},
			func(err error) bool { return errors.Is(err, context.Canceled) }, "device 000777: "},
		{"the device refuses the GSP client's MTU",
			script{refuse: map[wire.Kind]string{link.GATTMTU: "ATT MTU 10 is outside 23..247"}}, false,
			func(ph *Phone, _ *scriptedDevice) error {
				_, err := ph.OpenGSP(ctx, "000777", 10, func([]byte) {})
				return err
			},
			isRemote, "device 000777: ATT MTU 10 is outside 23..247"},
		{"the device refuses its definitions",
			script{refuse: map[wire.Kind]string{link.Definitions: "definitions: the device has none"}}, false,
			func(ph *Phone, _ *scriptedDevice) error { _, err := ph.Definitions(ctx, "000777"); return err },
			isRemote, "device 000777: definitions: the device has none"},
		{"the device refuses a request",
			script{refuseRequests: "the request is malformed"}, false,
			func(ph *Phone, _ *scriptedDevice) error {
				u, err := ph.Use(ctx, "000777")
				if err != nil {
					return err
				}
				defer u.Done()
				_, err = u.Do(ctx, resource.Get, "/Info")
				return err
			},
			isRemote, "device 000777: the request is malformed"},
		{"the phone's Bluetooth turns off during a request",
			script{}, false,
			func(ph *Phone, dev *scriptedDevice) error {
				return request(ph, dev, func(ph *Phone) { ph.BluetoothOff(time.Hour, nil) })
			},
			func(err error) bool { return errors.Is(err, ErrBluetoothOff) }, "device 000777: the phone's Bluetooth is off"},
		{"the device goes away during a request",
			script{}, false,
			func(ph *Phone, dev *scriptedDevice) error {
				return request(ph, dev, func(ph *Phone) {
					d, _ := ph.device("000777")
					ph.forget(d, "it is out of reach")
				})
			},
			func(err error) bool { return errors.Is(err, client.ErrClosed) }, "device 000777: it went away (it is out of reach)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ph, dev := scriptedPhone(t, tt.dev, tt.manual)
			err := tt.do(ph, dev)
			if err == nil || !tt.is(err) {
				t.Fatalf("%v: not the error wanted", err)
			}
			if n := strings.Count(err.Error(), "000777"); n != 1 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%q: names the device %d times; want once, in %q", err, n, tt.want)
			}
		})
	}
}

// A device's refusal of a log call says its status, and its reason when
// it gives one, with no space left where a reason would be, in the words
// of the load's refusals ("status 404: no log 3").
func TestDeviceRefusalText(t *testing.T) {
	for _, tt := range []struct {
		err  DeviceRefusal
		want string
	}{
		{DeviceRefusal{Device: "000777", Op: resource.Subscribe, Path: "/Mem/Logbook/byId/3/Data", Status: 404, Reason: "no log 3"},
			"device 000777: SUBSCRIBE /Mem/Logbook/byId/3/Data: status 404: no log 3"},
		{DeviceRefusal{Device: "000777", Op: resource.Subscribe, Path: "/Mem/Logbook/byId/3/Data", Status: 501},
			"device 000777: SUBSCRIBE /Mem/Logbook/byId/3/Data: status 501"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%q; want %q", got, tt.want)
		}
	}
}

// A device's note, shown beside the device, does not name it again, nor
// does an error that gives the note: the name the link puts in front of
// its errors is left out, and where the device's own words name it, it is
// "the device".
func TestNotesDoNotNameTheDevice(t *testing.T) {
	ctx := context.Background()
	use := func(ph *Phone) error {
		u, err := ph.Use(ctx, "000777")
		if err == nil {
			u.Done()
		}
		return err
	}
	for _, tt := range []struct {
		name   string
		dev    script
		manual bool
		do     func(*Phone, *scriptedDevice) error
		note   string
		then   func(*Phone) error // an error that gives the note, or nil
		want   string             // its text
	}{
		{"the radio refuses to connect, in words that name the device",
			script{refuse: map[wire.Kind]string{link.Connect: "device 000777 is not advertising"}}, true,
			func(ph *Phone, _ *scriptedDevice) error { return ph.Connect(ctx, "000777") },
			"connect: the device is not advertising",
			use, "device 000777 is not connected (connect: the device is not advertising); connect first"},
		{"the same, after a colon",
			script{refuse: map[wire.Kind]string{link.Connect: "device 000777: connection failed to be established"}}, true,
			func(ph *Phone, _ *scriptedDevice) error { return ph.Connect(ctx, "000777") },
			"connect: connection failed to be established",
			use, "device 000777 is not connected (connect: connection failed to be established); connect first"},
		{"the device refuses to pair",
			script{refuse: map[wire.Kind]string{link.Pair: "pairing refused by bonding policy BondingOnce"}}, false,
			func(ph *Phone, _ *scriptedDevice) error { return ph.Pair(ctx, "000777", "", false) },
			"pair: pairing refused by bonding policy BondingOnce", nil, ""},
		{"the device refuses the keys of a bond",
			script{refuse: map[wire.Kind]string{link.Encrypt: "the keys do not match"}}, false,
			func(ph *Phone, _ *scriptedDevice) error {
				if err := ph.setKey("0C:8C:DC:00:07:77", "00112233445566778899aabbccddeeff"); err != nil {
					return err
				}
				return ph.Connect(ctx, "000777")
			},
			"the device refused the keys of the bond (the keys do not match); pair again", nil, ""},
		{"the device no longer answers a scan",
			script{}, false,
			func(ph *Phone, dev *scriptedDevice) error {
				dev.refuse = map[wire.Kind]string{link.Scan: "the radio is busy"}
				ph.Scan(ctx)
				return nil
			},
			"gone: it does not answer: the radio is busy",
			func(ph *Phone) error { _, err := ph.Device("000777"); return err },
			"device 000777: no such device: it went away (it does not answer: the radio is busy)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ph, dev := scriptedPhone(t, tt.dev, tt.manual)
			tt.do(ph, dev) // its error names the device once (TestErrorsNameTheDeviceOnce)
			note := "no device 000777"
			for _, st := range ph.Devices() {
				if st.Serial == "000777" {
					note = st.Note
				}
			}
			if note != tt.note {
				t.Errorf("the note %q; want %q", note, tt.note)
			}
			if tt.then == nil {
				return
			}
			if err := tt.then(ph); err == nil || err.Error() != tt.want {
				t.Errorf("%v; want %q", err, tt.want)
			}
		})
	}
}

// A device that the carrier cannot reach: its note says "the device"
// where the carrier's error names it after its own name ("air: device
// 000777 is not on the air", as air.Link.Dial words it), and so does an
// error that gives the note, which names the device once.
func TestNoteOfADeviceNotReached(t *testing.T) {
	ctx := context.Background()
	notOnAir := fmt.Errorf("air: device 000777 %w", air.ErrNotOnAir)
	ph, err := New(Config{Local: []Peripheral{{Serial: "000777",
		Dial: func(context.Context) (net.Conn, error) { return nil, notOnAir },
		Scan: func() (link.AdvertMsg, bool) {
			return link.AdvertMsg{Serial: "000777", Address: "0C:8C:DC:00:07:77", Advertising: true}, true
		},
	}}, Manual: true, Idle: time.Hour, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer ph.Close()
	ph.Scan(ctx)
	if err := ph.Connect(ctx, "000777"); !errors.Is(err, air.ErrNotOnAir) || strings.Count(err.Error(), "000777") != 1 {
		t.Errorf("connect: %v; want %v, naming the device once", err, air.ErrNotOnAir)
	}
	st, err := ph.Device("000777")
	if want := "connect: air: the device is not on the air"; err != nil || st.Note != want {
		t.Errorf("the note %q (%v); want %q", st.Note, err, want)
	}
	_, err = ph.Use(ctx, "000777")
	if want := "device 000777 is not connected (connect: air: the device is not on the air); connect first"; err == nil || err.Error() != want {
		t.Errorf("use: %v; want %q", err, want)
	}
}

// unnamed takes the device's name out of an error's words once, wherever
// it stands, and nothing else: not another device's name that begins as
// the device's does.
func TestUnnamed(t *testing.T) {
	d := &peer{serial: "000777"}
	for _, tt := range []struct{ err, want string }{
		{"device 000777: pairing refused by bonding policy BondingOnce", "pairing refused by bonding policy BondingOnce"},
		{"device 000777 is not advertising", "the device is not advertising"},
		{"air: device 000777: the device's program refused the stream", "air: the device's program refused the stream"},
		{"air: device 000777 is not on the air", "air: the device is not on the air"},
		{"device 000777: device 000777 is not advertising", "device 000777 is not advertising"},
		{"device 0007770: no such device", "device 0007770: no such device"},
		{"device 0007770 is not advertising", "device 0007770 is not advertising"},
		{"the radio is busy", "the radio is busy"},
	} {
		if got := d.unnamed(errors.New(tt.err)); got != tt.want {
			t.Errorf("%q: %q; want %q", tt.err, got, tt.want)
		}
	}
}
