package serial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"

	"senseboard/provider/ble"
	"senseboard/resource"
	"senseboard/wire"
)

// ServeRadio serves one stream of the radio link: a central in range of
// the device that scans, connects, pairs and then makes requests over its
// connection, which obeys the device's BLE state (advertising, one
// connection at a time, pass key, bonding policy). When the connection
// ends, for whatever reason, the device sends Disconnected and closes the
// stream. ServeRadio returns when the stream closes or ctx ends.
func (s *Server) ServeRadio(ctx context.Context, conn net.Conn, radio *ble.Provider) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	w := &lockedWriter{w: conn}
	dec := wire.NewDecoder(0)
	// reqMu is held while a frame is handled, so that the answer to a
	// request that ends the connection goes out before Disconnected.
	var reqMu sync.Mutex
	var (
		hello   bool
		central *ble.Central
		bc      *ble.Conn
		cur     *session
	)
	defer func() {
		if bc != nil {
			bc.Disconnect()
		}
		if cur != nil {
			cur.end()
		}
	}()
	reply := func(kind wire.Kind, id uint32, v any) { w.Write(jsonFrame(kind, id, v)) }
	fail := func(id uint32, err error) { reply(wire.Error, id, &wire.ErrorMsg{Error: err.Error()}) }
	handle := func(f wire.Frame) {
		switch {
		case f.Kind == wire.Hello:
			h, refusal := parseHello(f)
			if refusal != "" {
				reply(wire.Refuse, f.ID, &wire.RefuseMsg{Session: h.Session, Error: refusal})
				return
			}
			hello = true
			w.Write(s.welcome(h.Session))
		case !hello:
			fail(f.ID, errors.New("no session: send hello first"))
		case f.Kind == wire.Bye:
			conn.Close()
		case f.Kind == wire.Scan:
			m := wire.AdvertMsg{Serial: radio.Serial(), Address: radio.Address()}
			if p, ok := radio.Advertising(); ok {
				m.Advertising, m.Adv, m.ScanResp = true, p.Adv, p.ScanResp
			}
			reply(wire.Advert, f.ID, &m)
		case f.Kind == wire.Connect:
			if bc != nil {
				fail(f.ID, errors.New("connect: this stream is connected already"))
				return
			}
			var m wire.ConnectMsg
			if err := json.Unmarshal(f.Payload, &m); err != nil || m.Address == "" {
				fail(f.ID, fmt.Errorf("connect: want {\"address\": \"XX:XX:XX:XX:XX:XX\", \"name\": ...}: %v", err))
				return
			}
			central = ble.NewCentral(m.Address, m.Name)
			q := resource.NewQueue(QueueSize)
			c, err := radio.Connect(central, q)
			if err != nil {
				q.Close()
				fail(f.ID, err)
				return
			}
			bc = c
			cur = startSession(s.log(), s.Device, w, "", q, bc.Client(), bc.Do)
			cur.onBroken = func() { conn.Close() }
			go func(bc *ble.Conn, done <-chan struct{}) {
				for {
					select {
					case d := <-bc.HRS():
						reply(wire.HRSData, 0, &d)
					case b := <-bc.NUS():
						reply(wire.NUSData, 0, &wire.NUSMsg{Data: b})
					case <-bc.Done():
						reqMu.Lock()
						defer reqMu.Unlock()
						reply(wire.Disconnected, 0, &wire.DisconnectedMsg{Reason: bc.Err().Error()})
						conn.Close()
						return
					case <-done:
						return
					}
				}
			}(bc, cur.done)
			reply(wire.Connected, f.ID, &wire.ConnectedMsg{Handle: bc.Handle()})
		case bc == nil:
			fail(f.ID, fmt.Errorf("%s: not connected; scan and connect first", f.Kind))
		case f.Kind == wire.Pair:
			var m wire.PairMsg
			if err := json.Unmarshal(f.Payload, &m); err != nil {
				fail(f.ID, fmt.Errorf("pair: want {\"passKey\": \"123456\", \"bond\": true}: %v", err))
				return
			}
			if err := bc.Pair(m.PassKey, m.Bond); err != nil {
				fail(f.ID, err)
				return
			}
			var key string
			if m.Bond {
				key, _ = central.Key(radio.Address())
			}
			reply(wire.Paired, f.ID, &wire.PairedMsg{Key: key})
		case f.Kind == wire.Encrypt:
			var m wire.EncryptMsg
			if err := json.Unmarshal(f.Payload, &m); err != nil || m.Key == "" {
				fail(f.ID, fmt.Errorf("encrypt: want {\"key\": ...}: %v", err))
				return
			}
			central.Remember(radio.Address(), m.Key)
			if err := bc.Encrypt(); err != nil {
				fail(f.ID, err)
				return
			}
			reply(wire.Paired, f.ID, &wire.PairedMsg{})
		case f.Kind == wire.HRSNotify:
			var m wire.HRSNotifyMsg
			if err := json.Unmarshal(f.Payload, &m); err != nil {
				fail(f.ID, fmt.Errorf("hrs notify: want {\"on\": true}: %v", err))
				return
			}
			if err := bc.SetHRSNotifications(m.On); err != nil {
				fail(f.ID, err)
				return
			}
			w.Write(wire.AppendFrame(nil, wire.Ack, f.ID, nil))
		case f.Kind == wire.NUSWrite:
			var m wire.NUSMsg
			if err := json.Unmarshal(f.Payload, &m); err != nil {
				fail(f.ID, fmt.Errorf("nus write: want {\"data\": \"<base64>\"}: %v", err))
				return
			}
			if err := bc.WriteNUS(m.Data); err != nil {
				fail(f.ID, err)
				return
			}
			w.Write(wire.AppendFrame(nil, wire.Ack, f.ID, nil))
		case f.Kind == wire.Disconnect:
			bc.Disconnect()
		default:
			cur.handle(f)
		}
	}
	readFrames(conn, func(b []byte) {
		reqMu.Lock()
		defer reqMu.Unlock()
		dec.Feed(b, handle)
		s.reportOversized(dec, w)
	})
	return nil
}

// ServeRadios accepts streams of the radio link on ln and serves each until
// ctx ends; it returns after every stream has closed.
func (s *Server) ServeRadios(ctx context.Context, ln net.Listener, radio *ble.Provider) error {
	return s.accept(ctx, ln, func(conn net.Conn) { s.ServeRadio(ctx, conn, radio) })
}
