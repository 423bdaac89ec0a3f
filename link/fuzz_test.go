package link_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/gsp/gspwire"
	"senseboard/internal/await"
	"senseboard/internal/frametest"
	"senseboard/link"
	"senseboard/radio"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// FuzzStreamFrames sends a frame of any kind and payload to a stream of
// the radio link, connected first so that pairing, encryption, HRS, NUS
// and GATT payloads reach their handlers: the device answers it, or
// refuses it, and keeps serving.
func FuzzStreamFrames(f *testing.F) {
	d, err := senseboard.New(senseboard.Config{StateDir: f.TempDir(), Seed: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	p := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	for _, s := range []struct {
		kind wire.Kind
		p    string
	}{
		{link.Pair, `{"passKey":"123456","bond":true}`},
		{link.Encrypt, `{"key":"00112233445566778899aabbccddeeff"}`},
		{link.HRSNotify, `{"notifications":true}`},
		{link.NUSWrite, `{"data":"AQID"}`},
		{link.GATTRead, `{"char":"2a19"}`},
		{link.GATTWrite, `{"char":"34800001-7185-4d5d-b431-630e7050e8f0","data":"AAE="}`},
		{link.Connect, `{"address":"C0:53:42:00:00:01","name":"x"}`},
		{link.Scan, ``},
		{link.Advert, `{}`},
		{wire.Request, `{"op":"get","path":"/Comm/Ble/Adv"}`},
		{link.NUSWrite, `{"data":7}`},
		{link.Definitions, ``},
		{link.Definitions, `{"file":"info.yaml"}`},
		{link.Definitions, `{"file":"../x"}`},
	} {
		f.Add(byte(s.kind), []byte(s.p))
	}
	f.Fuzz(func(t *testing.T, kind byte, payload []byte) {
		k := wire.Kind(kind)
		if len(payload) > wire.MaxPayload || k == wire.Bye || k == link.Disconnect || k == wire.Ping {
			return // these end the stream or are the end marker
		}
		dev, central := net.Pipe()
		defer central.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		wg.Go(func() { p.ServeConn(ctx, dev) })
		hello, _ := wire.AppendJSONFrame(nil, wire.Hello, 1, &wire.HelloMsg{Protocol: wire.Version, Client: "fuzz", Session: "fuzz"})
		conn, _ := wire.AppendJSONFrame(nil, link.Connect, 2, &link.ConnectMsg{Address: "C0:53:42:00:00:01", Name: "fuzz"})
		if got := frametest.Exchange(t, central, hello, conn); len(got) == 0 || got[0].Kind != wire.Welcome {
			t.Fatalf("no welcome: %v", got)
		}
		got := frametest.Exchange(t, central, wire.AppendFrame(nil, k, 7, payload))
		asked := k >= link.Scan && k <= link.NUSWrite || k >= link.GATTDiscover && k <= link.GATTNotify || k == link.GATTRead || k == link.Definitions
		if (k == wire.Request || asked) && !frametest.Answered(got, 7) {
			var m json.RawMessage = payload
			t.Errorf("%s %s: no answer; frames %v", link.KindName(k), m, got)
		}
	})
}

// FuzzScan gives a central, welcomed, any advertisement (or error, or
// disconnection, or another frame) in answer to a scan: the scan returns
// an advertisement or an error, never crashes or hangs, and takes an
// advertisement only from an Advert.
func FuzzScan(f *testing.F) {
	advert := `{"serial":"000123","address":"F8:21:B0:5A:10:98","advertising":true,"adv":"020106","scanResp":"0909"}`
	f.Add(byte(link.Advert), []byte(advert))
	f.Add(byte(wire.Error), []byte(`{"error":"x"}`))
	f.Add(byte(link.Advert), []byte(`[`))
	f.Add(byte(link.Disconnected), []byte(`{"reason":"gone"}`))
	f.Add(byte(link.Advert), []byte(`{"advertising":"yes","adv":7}`))
	f.Add(byte(link.Connected), []byte(`{"handle":1}`))
	f.Fuzz(func(t *testing.T, scanKind byte, scanPayload []byte) {
		if len(scanPayload) > wire.MaxPayload {
			return
		}
		dev, central := net.Pipe()
		var wg sync.WaitGroup
		defer wg.Wait()
		welcome := `{"protocol":1,"session":"SESSION","serial":"000123","uriPrefix":"/net/000123","maxPayload":65536}`
		wg.Go(func() {
			frametest.Script(dev, map[wire.Kind]frametest.Answer{
				wire.Hello: {Kind: wire.Welcome, Payload: []byte(welcome)},
				link.Scan:  {Kind: wire.Kind(scanKind), Payload: scanPayload},
				wire.Ping:  {Kind: wire.Pong},
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang protection
		defer cancel()
		c, err := (&link.Central{Timeout: await.Guard}).Open(ctx, "fuzz", central, link.Handlers{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A frame the exchange does not take leaves the scan waiting: it
		// gives up soon, which the check below allows, while the hello
		// above has the tests' minute, however busy the machine.
		scan, stop := context.WithTimeout(ctx, 20*time.Millisecond)
		defer stop()
		m, err := c.Scan(scan)
		if err == nil && wire.Kind(scanKind) != link.Advert {
			t.Fatalf("an advertisement %+v from a %s frame", m, link.KindName(wire.Kind(scanKind)))
		}
	})
}

// TestParseNotification: a payload holds the characteristic's 16-byte UUID
// and then the value, which may be empty.
func TestParseNotification(t *testing.T) {
	data := radio.MustParseUUID(gspwire.DataUUID)
	for _, tt := range []struct {
		name    string
		payload []byte
		value   string // "" with ok: an empty value
		ok      bool
	}{
		{"empty", nil, "", false},
		{"a byte short of the UUID", data[:15], "", false},
		{"the UUID alone", data[:], "", true},
		{"the UUID and a value", append(data[:], 2, 1), "\x02\x01", true},
	} {
		char, value, err := link.ParseNotification(tt.payload)
		switch {
		case !tt.ok:
			if !errors.Is(err, link.ErrNotification) {
				t.Errorf("%s: %v, want ErrNotification", tt.name, err)
			}
		case err != nil || char != data || string(value) != tt.value:
			t.Errorf("%s: %v %q %v, want %v %q", tt.name, char, value, err, data, tt.value)
		}
	}
}

// FuzzParseNotification: a GATTNotification payload that parses is the
// characteristic and the value AppendNotification framed; one too short
// for the UUID is refused with ErrNotification.
func FuzzParseNotification(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 15))
	data := radio.MustParseUUID(gspwire.DataUUID)
	f.Add(append(data[:], 2, 1, 0))
	f.Fuzz(func(t *testing.T, payload []byte) {
		char, value, err := link.ParseNotification(payload)
		if err != nil {
			if !errors.Is(err, link.ErrNotification) || len(payload) >= 16 {
				t.Fatalf("%x: %v", payload, err)
			}
			return
		}
		var got []wire.Frame
		wire.NewDecoder(0).Feed(link.AppendNotification(nil, char, value), func(f wire.Frame) { got = append(got, f) })
		if len(got) != 1 || got[0].Kind != link.GATTNotification || string(got[0].Payload) != string(payload) {
			t.Fatalf("%x framed again: %v", payload, got)
		}
	})
}
