package gsp_test

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/gsp"
	"senseboard/gsp/gspwire"
	"senseboard/internal/await"
	"senseboard/senseboardtest"
)

// peer is a central connected to the device's GSP module: it writes
// commands and receives the notifications in order.
type peer struct {
	t     *testing.T
	conn  *gsp.Conn
	notes chan []byte
	mtu   int
}

func connect(t *testing.T, d *senseboardtest.Rig, mtu int) *peer {
	t.Helper()
	if d.Device.GSP == nil {
		t.Fatal("the default profile has no GSP module")
	}
	p := &peer{t: t, notes: make(chan []byte, 1<<16), mtu: mtu}
	p.conn = d.Device.GSP.Connect(mtu, gsp.NotifyFunc(func(b []byte) {
		if len(b) > gspwire.MaxNotification(mtu) {
			t.Errorf("notification of %d bytes on MTU %d", len(b), mtu)
		}
		p.notes <- append([]byte(nil), b...)
	}))
	t.Cleanup(p.conn.Close)
	return p
}

func (p *peer) next() []byte {
	p.t.Helper()
	return await.Within(p.t, p.notes, "the module has sent no notification")
}

// command writes c and returns the COMMAND_RESPONSE for its reference,
// leaving any other notification in order for later.
func (p *peer) command(c gspwire.Command) []byte {
	p.t.Helper()
	p.conn.Write(gspwire.AppendCommand(nil, c))
	var held [][]byte
	defer func() {
		for _, h := range held {
			p.notes <- h
		}
	}()
	for {
		n := p.next()
		if n[0] == gspwire.CommandResponse && n[1] == c.Ref {
			return n
		}
		held = append(held, n)
	}
}

func status(n []byte) uint16 { return binary.LittleEndian.Uint16(n[2:]) }

func TestHello(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	p := connect(t, d, gspwire.DefaultMTU)
	n := p.command(gspwire.Command{Code: gspwire.Hello, Ref: 7})
	if n[0] != gspwire.CommandResponse || n[1] != 7 || n[2] != gspwire.ProtocolVersion {
		t.Fatalf("HELLO answer % x", n)
	}
	f := strings.Split(string(n[3:]), "\x00")
	if len(f) != 6 || f[0] != d.Device.Profile().Serial || f[3] != d.Device.Profile().App.Name || f[4] != gsp.FirmwareVersion || f[2] == "" {
		t.Errorf("HELLO strings %q: want serial, product, DFU address, app name, firmware version", f)
	}
}

func TestGetAndErrors(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	p := connect(t, d, gspwire.MinMTU)
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 1, Path: "/System/Mode"}); status(n) != 200 || len(n) < 5 || n[4] != 5 {
		t.Errorf("GET /System/Mode: % x, want status 200 and mode 5", n)
	}
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 2, Path: "/No/Such"}); status(n) != 404 {
		t.Errorf("GET /No/Such: status %d, want 404", status(n))
	}
	// Malformed commands are answered with 400 on their reference.
	for _, raw := range [][]byte{{byte(gspwire.FetchLog), 3, 1}, {42, 3}, {byte(gspwire.Subscribe), 3}} {
		p.conn.Write(raw)
		if n := p.next(); n[0] != gspwire.CommandResponse || n[1] != 3 || status(n) != 400 {
			t.Errorf("% x: answer % x, want 400 on ref 3", raw, n)
		}
	}
	// An unsubscribe of nothing is 404.
	if n := p.command(gspwire.Command{Code: gspwire.Unsubscribe, Ref: 9}); status(n) != 404 {
		t.Errorf("UNSUBSCRIBE of nothing: %d", status(n))
	}
	// Content without a binary form (here a log's bytes, an array far
	// longer than a uint8 count says) is 406 with no data, which a client
	// tells apart from a 200 whose content is empty.
	for _, c := range []gspwire.Command{
		{Code: gspwire.PutDataLoggerConfig, Ref: 10, Paths: []string{"/Meas/Acc/52"}},
		{Code: gspwire.PutDataLoggerState, Ref: 11, Value: 3},
	} {
		if n := p.command(c); status(n) != 200 {
			t.Fatalf("%v: %d", c.Code, status(n))
		}
	}
	d.Advance(2 * time.Second)
	if n := p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 12, Value: 2}); status(n) != 200 {
		t.Fatalf("stop logging: %d", status(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 13, Path: "/Mem/Logbook/byId/1/Data"}); status(n) != uint16(gsp.StatusNoBinaryForm) || len(n) != 4 {
		t.Errorf("GET of a log's bytes: % x, want status %d alone", n, gsp.StatusNoBinaryForm)
	}
	// /Info/App answers 200 alone, as the sensor does.
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 14, Path: "/Info/App"}); status(n) != 200 || len(n) != 4 {
		t.Errorf("GET /Info/App: % x, want status 200 alone", n)
	}
}

// Streams arrive as DATA, DATA_PART2 and DATA_PART3 parts that join into
// the stream's payload, never longer than the MTU allows.
func TestSubscribeSplitsByMTU(t *testing.T) {
	for _, mtu := range []int{gspwire.MinMTU, 64, gspwire.DefaultMTU} {
		d := senseboardtest.New(t, senseboard.Config{})
		p := connect(t, d, mtu)
		if n := p.command(gspwire.Command{Code: gspwire.Subscribe, Ref: 5, Path: "/Meas/IMU9/104"}); status(n) != 200 {
			t.Fatalf("MTU %d: SUBSCRIBE: % x", mtu, n)
		}
		var payloads [][]byte
		var cur []byte
		for len(payloads) < 3 {
			d.Advance(10 * time.Millisecond)
			select {
			case n := <-p.notes:
				if n[1] != 5 {
					t.Fatalf("notification for ref %d", n[1])
				}
				switch n[0] {
				case gspwire.Data:
					if cur != nil {
						payloads = append(payloads, cur)
					}
					cur = append([]byte(nil), n[2:]...)
				case gspwire.DataPart2, gspwire.DataPart3:
					if cur == nil {
						t.Fatalf("a continuation before DATA")
					}
					cur = append(cur, n[2:]...)
				default:
					t.Fatalf("unexpected notification % x", n)
				}
			default:
			}
		}
		for _, pl := range payloads {
			// uint32 timestamp and 3 arrays of float32 x,y,z, equally long.
			if (len(pl)-4)%36 != 0 || len(pl) == 4 {
				t.Errorf("MTU %d: IMU9 payload of %d bytes", mtu, len(pl))
			}
		}
		if n := p.command(gspwire.Command{Code: gspwire.Unsubscribe, Ref: 5}); status(n) != 200 {
			t.Errorf("UNSUBSCRIBE: %d", status(n))
		}
	}
}
