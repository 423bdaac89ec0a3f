package gsp_test

import (
	"strings"
	"testing"

	"senseboard"
	"senseboard/gsp/gspwire"
	"senseboard/provider/debug"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// A malformed command is logged as a warning that names the protocol
// once: "gsp: FETCH_LOG: malformed command payload: …".
func TestMalformedCommandWarning(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	d.Expect(200, resource.Put, "/System/Debug/Config",
		senseboardtest.Record(t, "DebugMessageConfig", `{"SystemMessages": true, "DebugMessages": true}`))
	warn := d.Subscribe("/System/Debug/WARNING")
	p := connect(t, d, gspwire.DefaultMTU)
	p.conn.Write([]byte{byte(gspwire.FetchLog), 3, 1})
	if n := p.next(); n[0] != gspwire.CommandResponse || status(n) != 400 {
		t.Fatalf("answer % x, want 400", n)
	}
	d.Advance(debug.DrainInterval)
	var got []string
	for _, c := range warn.Contents() {
		got = append(got, c.(*debug.Message).Message)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "gsp: FETCH_LOG: malformed command payload: ") {
		t.Errorf("warnings %q, want one that begins %q", got, "gsp: FETCH_LOG: malformed command payload: ")
	}
}
