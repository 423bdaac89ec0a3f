package bridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"senseboard/gsp/gspwire"
)

// readAnswer is the bridge's text answer to a read on the GSP WebSocket.
type readAnswer struct {
	Op, Char, Error string
	Data            []byte
}

// readChar sends a read as a text message and returns the text answer;
// notifications before it are stashed.
func (p *gspClient) readChar(char string) readAnswer {
	p.t.Helper()
	msg, _ := json.Marshal(map[string]string{"op": "read", "char": char})
	if err := p.c.Write(context.Background(), websocket.MessageText, msg); err != nil {
		p.t.Fatal(err)
	}
	for {
		typ, b, err := p.c.Read(context.Background())
		if err != nil {
			p.t.Fatal(err)
		}
		if typ == websocket.MessageBinary {
			p.stash = append(p.stash, b)
			continue
		}
		var a readAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			p.t.Fatalf("answer %s: %v", b, err)
		}
		return a
	}
}

// TestGSPReadOverWebSocket: a text message on the GSP WebSocket reads a
// characteristic: the Battery Level (2a19) is the level a GSP GET of
// /System/Energy/Level answers; reads the device refuses are answered with
// its reason and the session goes on; a text message that is not a read
// ends it.
func TestGSPReadOverWebSocket(t *testing.T) {
	t.Parallel()
	r := newGSPRig(t, "")
	p := r.dial("", nil)
	for _, level := range []float64{0.37, 0.9} {
		r.d.Device.System.SetBattery(level)
		n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 1, Path: "/System/Energy/Level"})
		if gspStatus(n) != 200 || len(n) != 5 {
			t.Fatalf("GET /System/Energy/Level: % x", n)
		}
		for _, char := range []string{"2a19", "00002A19-0000-1000-8000-00805F9B34FB"} {
			a := p.readChar(char)
			if a.Op != "read" || a.Char != char || a.Error != "" || len(a.Data) != 1 || a.Data[0] != n[4] {
				t.Errorf("read %s at %v: %+v, want [%d]", char, level, a, n[4])
			}
		}
	}
	for _, tc := range []struct{ char, want string }{
		{gspwire.CommandUUID, "does not permit"},
		{"ffff", "no such characteristic"},
		{"2a1", `UUID "2a1"`},
	} {
		if a := p.readChar(tc.char); a.Data != nil || !strings.Contains(a.Error, tc.want) {
			t.Errorf("read %s: %+v, want an error with %q", tc.char, a, tc.want)
		}
	}
	if n := p.command(gspwire.Command{Code: gspwire.Hello, Ref: 2}); n[2] != gspwire.ProtocolVersion {
		t.Errorf("HELLO after the reads: % x", n)
	}
	if err := p.c.Write(context.Background(), websocket.MessageText, []byte(`{"op":"notify","char":"2a19"}`)); err != nil {
		t.Fatal(err)
	}
	if code, reason := closeOf(t, p.c); code != websocket.StatusUnsupportedData || !strings.Contains(reason, `text messages are reads {"op":"read","char":"<uuid>"}: op "notify"`) {
		t.Errorf("a text message that is not a read: %d %q", code, reason)
	}
}
