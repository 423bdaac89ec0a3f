package serial_test

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"

	"senseboard"
	"senseboard/internal/frametest"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// FuzzStreamFrames sends a frame of any kind and payload to an open
// session on a TCP connection: the device answers it, or refuses it, and
// keeps serving.
func FuzzStreamFrames(f *testing.F) {
	d, err := senseboard.New(senseboard.Config{StateDir: f.TempDir(), Seed: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	srv := &serial.Server{Device: d.Core}
	for _, s := range []struct {
		kind wire.Kind
		p    string
	}{
		{wire.Request, `{"op":"get","path":"/Info"}`},
		{wire.Request, `{"op":"put","path":"/Time","params":[{"name":"value","value":1}]}`},
		{wire.Request, `{"op":"subscribe","path":"/Meas/HR"}`},
		{wire.Request, `{"op":"get","path":"/Info","op":"put"}`},
		{wire.Hello, `{"protocol":1,"session":"other"}`},
		{0x31, `{}`}, // a kind of another protocol on the same frames
	} {
		f.Add(byte(s.kind), []byte(s.p))
	}
	f.Fuzz(func(t *testing.T, kind byte, payload []byte) {
		k := wire.Kind(kind)
		if len(payload) > wire.MaxPayload || k == wire.Bye || k == wire.Ping {
			return // these end the stream or are the end marker
		}
		dev, central := net.Pipe()
		defer central.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		wg.Go(func() { srv.ServeConn(ctx, dev) })
		hello, _ := wire.AppendJSONFrame(nil, wire.Hello, 1, &wire.HelloMsg{Protocol: wire.Version, Client: "fuzz", Session: "fuzz"})
		if got := frametest.Exchange(t, central, hello); len(got) == 0 || got[0].Kind != wire.Welcome {
			t.Fatalf("no welcome: %v", got)
		}
		got := frametest.Exchange(t, central, wire.AppendFrame(nil, k, 7, payload))
		if k == wire.Request && !frametest.Answered(got, 7) {
			var m json.RawMessage = payload
			t.Errorf("%s %s: no answer; frames %v", k, m, got)
		}
	})
}
