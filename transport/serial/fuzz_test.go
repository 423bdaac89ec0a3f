package serial_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// exchange sends frames on a stream and reads what comes back until the
// Pong of ping id 99; it fails the test when the device closes the stream
// or the hang protection ends the wait first.
func exchange(t *testing.T, c net.Conn, frames ...[]byte) []wire.Frame {
	t.Helper()
	frames = append(frames, wire.AppendFrame(nil, wire.Ping, 99, nil))
	return readUntil(t, c, func(f wire.Frame) bool { return f.Kind == wire.Pong && f.ID == 99 }, frames...)
}

// readUntil sends frames on a stream and reads what comes back until a
// frame for which last is true; it fails the test when the device closes
// the stream or the hang protection ends the wait first.
func readUntil(t *testing.T, c net.Conn, last func(wire.Frame) bool, frames ...[]byte) []wire.Frame {
	t.Helper()
	go func() {
		for _, b := range frames {
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang protection
	dec := wire.NewDecoder(0)
	buf := make([]byte, 8192)
	var got []wire.Frame
	for {
		n, err := c.Read(buf)
		done := false
		dec.Feed(buf[:n], func(f wire.Frame) {
			f.Payload = append([]byte(nil), f.Payload...)
			got = append(got, f)
			done = done || last(f)
		})
		if done {
			return got
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("no last frame; frames %v", got)
		}
		if err != nil {
			t.Fatalf("the stream closed before the last frame: %v; frames %v", err, got)
		}
	}
}

// answered reports whether a frame of id got an answer: a frame with its
// id that is not a notification.
func answered(frames []wire.Frame, id uint32) bool {
	for _, f := range frames {
		if f.ID == id && f.Kind != wire.Notification && f.Kind != wire.Pong {
			return true
		}
	}
	return false
}

// FuzzStreamFrames sends a frame of any kind and payload to an open
// session, on a TCP connection or on a stream of the radio link (connected
// first, so that pairing, encryption, HRS, NUS and GATT payloads reach
// their handlers): the device answers it, or refuses it, and keeps serving.
func FuzzStreamFrames(f *testing.F) {
	d, err := senseboard.New(senseboard.Config{StateDir: f.TempDir(), Seed: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	srv := &serial.Server{Device: d.Core}
	for _, s := range []struct {
		radio bool
		kind  wire.Kind
		p     string
	}{
		{false, wire.Request, `{"op":"get","path":"/Info"}`},
		{false, wire.Request, `{"op":"put","path":"/Time","params":[{"name":"value","value":1}]}`},
		{false, wire.Request, `{"op":"subscribe","path":"/Meas/HR"}`},
		{false, wire.Request, `{"op":"get","path":"/Info","op":"put"}`},
		{false, wire.Hello, `{"protocol":1,"session":"other"}`},
		{false, wire.Advert, `{}`},
		{true, wire.Pair, `{"passKey":"123456","bond":true}`},
		{true, wire.Encrypt, `{"key":"00112233445566778899aabbccddeeff"}`},
		{true, wire.HRSNotify, `{"notifications":true}`},
		{true, wire.NUSWrite, `{"data":"AQID"}`},
		{true, wire.GATTRead, `{"char":"2a19"}`},
		{true, wire.GATTWrite, `{"char":"34800001-7185-4d5d-b431-630e7050e8f0","data":"AAE="}`},
		{true, wire.Connect, `{"address":"C0:53:42:00:00:01","name":"x"}`},
		{true, wire.Scan, ``},
		{true, wire.Request, `{"op":"get","path":"/Comm/Ble/Adv"}`},
		{true, wire.NUSWrite, `{"data":7}`},
		{true, wire.Definitions, ``},
		{true, wire.Definitions, `{"file":"info.yaml"}`},
		{true, wire.Definitions, `{"file":"../x"}`},
	} {
		f.Add(s.radio, byte(s.kind), []byte(s.p))
	}
	f.Fuzz(func(t *testing.T, radio bool, kind byte, payload []byte) {
		k := wire.Kind(kind)
		if len(payload) > wire.MaxPayload || k == wire.Bye || k == wire.Disconnect || k == wire.Ping {
			return // these end the stream or are the end marker
		}
		dev, central := net.Pipe()
		defer central.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		hello, _ := wire.AppendJSONFrame(nil, wire.Hello, 1, &wire.HelloMsg{Protocol: wire.Version, Client: "fuzz", Session: "fuzz"})
		open := [][]byte{hello}
		if radio {
			wg.Go(func() { srv.ServeRadio(ctx, dev, d.Radio) })
			conn, _ := wire.AppendJSONFrame(nil, wire.Connect, 2, &wire.ConnectMsg{Address: "C0:53:42:00:00:01", Name: "fuzz"})
			open = append(open, conn)
		} else {
			wg.Go(func() { srv.ServeConn(ctx, dev) })
		}
		if got := exchange(t, central, open...); len(got) == 0 || got[0].Kind != wire.Welcome {
			t.Fatalf("no welcome: %v", got)
		}
		got := exchange(t, central, wire.AppendFrame(nil, k, 7, payload))
		asked := k >= wire.Scan && k <= wire.NUSWrite || k >= wire.GATTDiscover && k <= wire.GATTNotify || k == wire.GATTRead || k == wire.Definitions
		if (k == wire.Request || radio && asked) && !answered(got, 7) {
			var m json.RawMessage = payload
			t.Errorf("%s %s: no answer; frames %v", k, m, got)
		}
	})
}
