package phone

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"

	"senseboard/link"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/wire"
)

// scriptedDevice is device 000777 at the other end of the radio link's
// streams: it answers hello, scan, connect and pings, acknowledges the
// GATT operations, and does otherwise what its script says. It counts the
// streams dialled.
type scriptedDevice struct {
	script
	requests chan struct{} // told of each request the device does not answer
	dials    atomic.Int32
	wg       sync.WaitGroup
}

// script is what a scriptedDevice does otherwise than answer.
type script struct {
	refuse         map[wire.Kind]string // refusals of kinds of frame, in their words
	hangUp         map[wire.Kind]bool   // kinds of frame it hangs up on
	refuseRequests string               // the line protocol's error frame for each request
	answerRequests bool                 // 200, no content, for each request; else no answer
	// disconnecting, when not nil, is told of a disconnect, whose answer
	// (closing the stream) the device holds until let is closed
	disconnecting chan struct{}
	let           chan struct{}
}

func (s *scriptedDevice) dial(context.Context) (net.Conn, error) {
	s.dials.Add(1)
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
				switch {
				case s.refuseRequests != "":
					conn.Write(wire.ErrorFrame(f.ID, s.refuseRequests))
				case s.answerRequests:
					b, _ := wire.AppendEnvelope(nil, f.ID, &resource.Envelope{Status: resource.StatusOK, Op: resource.Get, URI: "/net/000777/Info"})
					conn.Write(b)
				default:
					s.requests <- struct{}{}
				}
			case link.Disconnect:
				if s.disconnecting != nil {
					s.disconnecting <- struct{}{}
					<-s.let
				}
				closed = true
			}
		})
		if err != nil || closed {
			return
		}
	}
}

// get uses device 000777 for a GET /Info and returns the error of the use
// or of the request; during runs while the request is under way, unless
// the use failed.
func get(ctx context.Context, ph *Phone, during func()) error {
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
	during()
	return <-done
}
