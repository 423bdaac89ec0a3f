package phone

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/link"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/wire"
)

// scriptedDevice is a device at the other end of the radio link's
// streams: it answers hello, scan and connect, acknowledges the GATT
// operations, refuses the kinds of frame in refuse with their words,
// hangs up on the kinds in hangUp, and answers each request with the
// line protocol's error frame when refuseRequests is set, else not at
// all, saying so on requests.
type scriptedDevice struct {
	script
	requests chan struct{}
	wg       sync.WaitGroup
}

// script is what a scriptedDevice does otherwise than answer.
type script struct {
	refuse         map[wire.Kind]string
	hangUp         map[wire.Kind]bool
	refuseRequests string
}

func (s *scriptedDevice) dial(context.Context) (net.Conn, error) {
	dev, central := net.Pipe()
	s.wg.Go(func() { s.serve(dev) })
	return central, nil
}

func (s *scriptedDevice) serve(conn net.Conn) {
	defer conn.Close()
	dec := wire.NewDecoder(0)
	send := func(kind wire.Kind, id uint32, v any) {
		b, _ := wire.AppendJSONFrame(nil, kind, id, v)
		conn.Write(b)
	}
	adv := radio.DefaultAdvertisement("Scripted", "000777", false, false, false)
	p := adv.Packets()
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		closed := false
		dec.Feed(buf[:n], func(f wire.Frame) {
			if msg, ok := s.refuse[f.Kind]; ok {
				conn.Write(wire.ErrorFrame(f.ID, msg))
				return
			}
			if s.hangUp[f.Kind] {
				closed = true
				return
			}
			switch f.Kind {
			case wire.Hello:
				var m wire.HelloMsg
				json.Unmarshal(f.Payload, &m)
				send(wire.Welcome, 0, &wire.WelcomeMsg{Protocol: wire.Version, Session: m.Session, Serial: "000777", URIPrefix: "/net/000777", MaxPayload: wire.MaxPayload})
			case link.Scan:
				send(link.Advert, f.ID, &link.AdvertMsg{Serial: "000777", Address: "0C:8C:DC:00:07:77", Advertising: true, Adv: p.Adv, ScanResp: p.ScanResp})
			case link.Connect:
				send(link.Connected, f.ID, &link.ConnectedMsg{Handle: 1})
			case link.GATTMTU, link.GATTNotify, link.GATTWrite:
				conn.Write(wire.AppendFrame(nil, link.Ack, f.ID, nil))
			case wire.Ping:
				conn.Write(wire.AppendFrame(nil, wire.Pong, f.ID, nil))
			case wire.Request:
				if s.refuseRequests != "" {
					conn.Write(wire.ErrorFrame(f.ID, s.refuseRequests))
					return
				}
				s.requests <- struct{}{}
			}
		})
		if err != nil || closed {
			return
		}
	}
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
		u, err := ph.Use(ctx, "000777")
		if err != nil {
			return err
		}
		defer u.Done()
		done := make(chan error, 1)
		go func() {
			_, err := u.Do(ctx, resource.Get, "/Info")
			done <- err
		}()
		<-dev.requests
		end(ph)
		return <-done
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
			dev := &scriptedDevice{script: tt.dev, requests: make(chan struct{}, 1)}
			ph, err := New(Config{Local: []Peripheral{{Serial: "000777", Dial: dev.dial}}, Manual: tt.manual, Idle: time.Hour, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.wg.Wait()
			defer ph.Close()
			ph.Scan(ctx)
			err = tt.do(ph, dev)
			if err == nil || !tt.is(err) {
				t.Fatalf("%v: not the error wanted", err)
			}
			if n := strings.Count(err.Error(), "000777"); n != 1 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%q: names the device %d times; want once, in %q", err, n, tt.want)
			}
		})
	}
}
