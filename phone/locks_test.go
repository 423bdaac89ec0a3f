package phone_test

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"senseboard/internal/await"
	"senseboard/link"
	"senseboard/phone"
	"senseboard/radio"
	"senseboard/wire"
)

// stallingDevice answers the radio link's hello, scan and connect, and
// never answers a request: a device at the end of a very slow link. Each
// request it gets is reported on requests.
type stallingDevice struct {
	requests chan wire.Frame
	wg       sync.WaitGroup
}

func (s *stallingDevice) dial(context.Context) (net.Conn, error) {
	dev, central := net.Pipe()
	s.wg.Go(func() { s.serve(dev) })
	return central, nil
}

func (s *stallingDevice) serve(conn net.Conn) {
	defer conn.Close()
	dec := wire.NewDecoder(0)
	send := func(kind wire.Kind, id uint32, v any) {
		b, _ := wire.AppendJSONFrame(nil, kind, id, v)
		conn.Write(b)
	}
	adv := radio.DefaultAdvertisement("Slow", "000999", false, false, false)
	p := adv.Packets()
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		dec.Feed(buf[:n], func(f wire.Frame) {
			switch f.Kind {
			case wire.Hello:
				var h wire.HelloMsg
				json.Unmarshal(f.Payload, &h)
				send(wire.Welcome, 0, &wire.WelcomeMsg{Protocol: wire.Version, Session: h.Session, Serial: "000999", URIPrefix: "/net/000999", MaxPayload: wire.MaxPayload})
			case link.Scan:
				send(link.Advert, f.ID, &link.AdvertMsg{Serial: "000999", Address: "0C:8C:DC:00:09:99", Advertising: true, Adv: p.Adv, ScanResp: p.ScanResp})
			case link.Connect:
				send(link.Connected, f.ID, &link.ConnectedMsg{Handle: 1})
			case wire.Ping:
				conn.Write(wire.AppendFrame(nil, wire.Pong, f.ID, nil))
			case wire.Request:
				f.Payload = append([]byte(nil), f.Payload...)
				s.requests <- f
			}
		})
		if err != nil {
			return
		}
	}
}

// TestStateDoesNotWaitForASlowSubscribe: while a subscription waits for
// the device's answer, the phone lists its devices and their states.
func TestStateDoesNotWaitForASlowSubscribe(t *testing.T) {
	dev := &stallingDevice{requests: make(chan wire.Frame, 4)}
	ph, err := phone.New(phone.Config{Local: []phone.Peripheral{{Serial: "000999", Dial: dev.dial}}, Timeout: time.Minute, ConnectAll: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.wg.Wait()
	defer ph.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ph.Scan(ctx)
	if s, err := ph.Device("000999"); err != nil || !s.Connected || s.Name != "Slow 000999" {
		t.Fatalf("after the scan: %+v, %v", s, err)
	}
	subscribed := make(chan error, 1)
	go func() {
		u, err := ph.Use(ctx, "000999")
		if err == nil {
			defer u.Done()
			_, _, err = u.Subscribe(ctx, "/Meas/HR", nil, func(phone.Event) {})
		}
		subscribed <- err
	}()
	await.Within(t, dev.requests, "the subscription has not reached the device") // on its way, it will not be answered
	listed := make(chan []phone.DeviceState, 1)
	go func() { listed <- ph.Devices() }()
	select {
	case l := <-listed:
		if len(l) != 1 || !l[0].Connected || len(l[0].Streams) != 0 {
			t.Errorf("devices during the subscribe: %+v", l)
		}
	case err := <-subscribed:
		t.Fatalf("the device list waited for the subscribe, which ended with %v", err)
	}
	if _, err := ph.Device("000999"); err != nil {
		t.Error(err)
	}
	cancel()
	if err := await.Within(t, subscribed, "the subscribe whose context ended still waits"); err == nil {
		t.Error("a subscribe nobody answered succeeded")
	}
}
