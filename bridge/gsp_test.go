package bridge_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"senseboard"
	"senseboard/bridge"
	"senseboard/bridge/bridgeclient"
	"senseboard/gsp/gspwire"
	"senseboard/link"
	"senseboard/phone"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/sbem"
	"senseboard/senseboardtest"
	"senseboard/transport/serial"
)

// gspRig is a bridge that reaches one device on a virtual clock, served
// over HTTP, connecting on demand as by default.
type gspRig struct {
	t      testing.TB
	d      *senseboardtest.Rig
	b      *phone.Phone
	srv    *httptest.Server
	serial string
	onAir  bool // the radio's throughput model is on
}

// newGSPRig is a rig whose radio takes everything at once: the protocol
// is under test, not the radio's throughput.
func newGSPRig(t testing.TB, token string) *gspRig { return newGSPRigWith(t, token, false) }

// gspInterval is the connection interval the bridge asks for, as a phone
// does: the device grants its shortest, 30 ms, whose 133 packets a second
// carry the seven streams of TestGSPOverWebSocket (about 108 a second);
// its slowest, 50 ms, carries 80 (docs/behaviour.md).
const gspInterval = 7500 * time.Microsecond

// newGSPRigWith is a rig with the radio's throughput model on or off
// (onAir), at the default profile's settings otherwise. With it on, what
// the device sends leaves at the connection events, which come with the
// device's time: the rig's clients let time pass while they wait.
func newGSPRigWith(t testing.TB, token string, onAir bool) *gspRig {
	t.Helper()
	a := profile.DefaultAirtime
	a.Enabled = onAir
	return newGSPRigAir(t, token, a)
}

// newGSPRigAir is a rig whose radio has the throughput model a.
func newGSPRigAir(t testing.TB, token string, a profile.Airtime) *gspRig {
	t.Helper()
	p := profile.Default()
	p.BLE.Airtime = a
	d := senseboardtest.New(t, senseboard.Config{Profile: p})
	r := &gspRig{t: t, d: d, serial: "000123", onAir: a.Enabled}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	srv := &link.Peripheral{Server: &serial.Server{Device: d.Device.Core}, Radio: d.Device.Radio}
	b, err := phone.New(phone.Config{
		ConnInterval: gspInterval,
		Timeout:      time.Minute, // a guard against hanging: a busy machine can take longer than the 5 s default
		StateDir:     t.TempDir(),
		ScanInterval: 20 * time.Millisecond,
		Local: []phone.Peripheral{{Serial: r.serial, Dial: func(context.Context) (net.Conn, error) {
			dev, central := net.Pipe()
			wg.Go(func() { srv.ServeConn(ctx, dev) })
			return central, nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.b = b
	wg.Go(func() { b.Run(ctx) })
	r.srv = httptest.NewServer((&bridge.Server{Phone: b, Token: token}).Handler())
	t.Cleanup(func() {
		r.srv.Close()
		cancel()
		wg.Wait()
	})
	for { // the first scan finds the device
		if _, err := b.Device(r.serial); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r
}

// url returns the GSP WebSocket's address with a query.
func (r *gspRig) url(query string) string {
	u := "ws" + strings.TrimPrefix(r.srv.URL, "http") + "/api/devices/" + r.serial + "/gsp"
	if query != "" {
		u += "?" + query
	}
	return u
}

// gspClient is a minimal GSP client written from the public description of
// the protocol: it writes commands and reads notifications, here over the
// bridge's WebSocket instead of GATT.
type gspClient struct {
	t     testing.TB
	c     *websocket.Conn
	mtu   int
	stash [][]byte // notifications read while waiting for a response

	// With the throughput model on: the messages a reader takes from the
	// WebSocket, and the device's clock, which read advances while none
	// comes.
	msgs    chan wsMessage
	advance func()
}

// wsMessage is a message read from the WebSocket, or why reading ended.
type wsMessage struct {
	typ websocket.MessageType
	b   []byte
	err error
}

func (r *gspRig) dial(query string, hdr http.Header) *gspClient {
	r.t.Helper()
	c, _, err := websocket.Dial(context.Background(), r.url(query), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		r.t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	r.t.Cleanup(func() { c.CloseNow() })
	mtu := gspwire.DefaultMTU
	fmt.Sscanf(query, "mtu=%d", &mtu)
	p := &gspClient{t: r.t, c: c, mtu: mtu}
	if r.onAir {
		p.msgs = make(chan wsMessage, 64)
		p.advance = func() { r.d.Advance(5 * time.Millisecond) }
		go func() { // ends when the WebSocket closes; the cleanup waits
			defer close(p.msgs)
			for {
				typ, b, err := c.Read(context.Background())
				p.msgs <- wsMessage{typ, b, err}
				if err != nil {
					return
				}
			}
		}()
		r.t.Cleanup(func() {
			c.CloseNow()
			for range p.msgs { // until the reader has ended
			}
		})
	}
	return p
}

// dialReady opens a GSP WebSocket and checks that it is served: the
// device's previous GSP client, which has just closed, hands the device
// over instead of refusing this one.
func (r *gspRig) dialReady() *gspClient {
	r.t.Helper()
	p := r.dial("", nil)
	p.write(gspwire.Command{Code: gspwire.Hello, Ref: 200})
	if n := p.read(); n[0] != gspwire.CommandResponse || n[1] != 200 {
		r.t.Fatalf("HELLO after the previous client closed: % x", n)
	}
	return p
}

func (p *gspClient) write(cmd gspwire.Command) {
	p.t.Helper()
	if err := p.c.Write(context.Background(), websocket.MessageBinary, gspwire.AppendCommand(nil, cmd)); err != nil {
		p.t.Fatal(err)
	}
}

// read returns the next notification, which must fit the MTU.
func (p *gspClient) read() []byte {
	p.t.Helper()
	var typ websocket.MessageType
	var b []byte
	var err error
	if p.msgs == nil {
		typ, b, err = p.c.Read(context.Background())
	} else {
		m := p.wait()
		typ, b, err = m.typ, m.b, m.err
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if typ != websocket.MessageBinary || len(b) < 2 || len(b) > p.mtu-3 {
		p.t.Fatalf("notification %v of %d bytes at MTU %d: % x", typ, len(b), p.mtu, b)
	}
	return b
}

// wait returns the next message of the WebSocket, letting the device's
// time pass while none comes: the device's notifications leave at its
// connection events.
func (p *gspClient) wait() wsMessage {
	t := time.NewTimer(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case m := <-p.msgs:
			return m
		case <-t.C:
			p.advance()
			t.Reset(2 * time.Millisecond)
		}
	}
}

// command writes a command and returns its COMMAND_RESPONSE; the
// notifications before it are stashed.
func (p *gspClient) command(cmd gspwire.Command) []byte {
	p.t.Helper()
	p.write(cmd)
	for {
		n := p.read()
		if n[0] == gspwire.CommandResponse && n[1] == cmd.Ref {
			return n
		}
		p.stash = append(p.stash, n)
	}
}

func gspStatus(n []byte) int { return int(binary.LittleEndian.Uint16(n[2:])) }

// joined joins DATA and the parts that follow it, per reference.
func joined(notes [][]byte) map[uint8][][]byte {
	out := map[uint8][][]byte{}
	for _, n := range notes {
		ref := n[1]
		switch n[0] {
		case gspwire.Data:
			out[ref] = append(out[ref], append([]byte(nil), n[2:]...))
		case gspwire.DataPart2, gspwire.DataPart3:
			if l := len(out[ref]); l > 0 {
				out[ref][l-1] = append(out[ref][l-1], n[2:]...)
			}
		}
	}
	return out
}

// TestGSPOverWebSocket runs a GSP client's whole session over the bridge's
// WebSocket, as a script or web app does over GATT: HELLO, streams at
// several rates, UTC time, offline recording, listing, fetching and
// decoding the log, and clearing the logbook. The radio's throughput
// model is on, over a connection at the interval the bridge asks for
// (gspInterval): what the device sends leaves at the connection events,
// and the streams arrive whole.
func TestGSPOverWebSocket(t *testing.T) {
	t.Parallel()
	r := newGSPRigWith(t, "", true)
	p := r.dial("", nil)

	hello := p.command(gspwire.Command{Code: gspwire.Hello, Ref: 100})
	if hello[2] != gspwire.ProtocolVersion || !strings.Contains(string(hello), r.serial+"\x00") {
		t.Fatalf("HELLO % x", hello)
	}
	if st, _ := r.b.Device(r.serial); !st.Connected {
		t.Fatalf("the GSP WebSocket did not connect the device: %+v", st)
	}
	if n := p.command(gspwire.Command{Code: gspwire.PutUTCTime, Ref: 101, Time: 1_763_900_000_000_000}); gspStatus(n) != 200 {
		t.Fatalf("PUT_UTCTIME: %d", gspStatus(n))
	}

	subs := map[uint8]string{1: "/Meas/Acc/13", 2: "/Meas/Acc/104", 3: "/Meas/IMU9/52", 4: "/Meas/IMU9/208",
		5: "/Meas/ECG/125", 6: "/Meas/ECG/125/mV", 7: "/Meas/HR"}
	// Each stream runs from its SUBSCRIBE to its UNSUBSCRIBE, each answered
	// at a connection event: between these two spans of device time.
	firstSub := r.d.Clock.Now()
	for ref := uint8(1); ref <= 7; ref++ {
		// 2xx: /Meas/HR answers 204 until its first interval is known.
		if n := p.command(gspwire.Command{Code: gspwire.Subscribe, Ref: ref, Path: subs[ref]}); gspStatus(n)/100 != 2 {
			t.Fatalf("SUBSCRIBE %s: %d", subs[ref], gspStatus(n))
		}
	}
	lastSub := r.d.Clock.Now()
	for i := range 50 { // 5 s of device time
		r.d.Advance(100 * time.Millisecond)
		p.command(gspwire.Command{Code: gspwire.Get, Ref: 150 + uint8(i%50), Path: "/System/Energy/Level"}) // all sent so far has come
	}
	firstUnsub := r.d.Clock.Now()
	for ref := uint8(1); ref <= 7; ref++ {
		if n := p.command(gspwire.Command{Code: gspwire.Unsubscribe, Ref: ref}); gspStatus(n) != 200 {
			t.Errorf("UNSUBSCRIBE %s: %d", subs[ref], gspStatus(n))
		}
	}
	shortest, longest := (firstUnsub - lastSub).Seconds(), (r.d.Clock.Now() - firstSub).Seconds()
	payloads := joined(p.stash)
	p.stash = nil
	for _, tc := range []struct {
		ref       uint8
		head, per int // bytes before the samples, bytes per sample
		rate      float64
	}{
		{1, 4, 12, 13}, {2, 4, 12, 104}, {3, 4, 36, 52}, {4, 4, 36, 208}, {5, 4, 4, 125}, {6, 4, 2, 125},
	} {
		n := 0
		for _, pl := range payloads[tc.ref] {
			if (len(pl)-tc.head)%tc.per != 0 {
				t.Errorf("%s: payload of %d bytes", subs[tc.ref], len(pl))
			}
			n += (len(pl) - tc.head) / tc.per
		}
		// The last batch may still be filling; nothing is lost.
		if got := float64(n); got < shortest*tc.rate*0.9 || got > longest*tc.rate*1.02 {
			t.Errorf("%s: %.0f samples in %.2f to %.2f s of device time at %v Hz", subs[tc.ref], got, shortest, longest, tc.rate)
		}
	}
	if len(payloads[7]) == 0 {
		t.Error("no heart rate notification in 5 s")
	}

	// Offline recording, listed, fetched, decoded and cleared.
	cfg := gspwire.Command{Code: gspwire.PutDataLoggerConfig, Ref: 102, Paths: []string{"/Meas/Acc/52", "/Meas/ECG/200/mV", "/Time/Detailed"}}
	if n := p.command(cfg); gspStatus(n) != 200 {
		t.Fatalf("PUT_DATALOGGER_CONFIG: %d", gspStatus(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 103, Value: 3}); gspStatus(n) != 200 {
		t.Fatalf("start logging: %d", gspStatus(n))
	}
	for range 100 { // 10 s
		r.d.Advance(100 * time.Millisecond)
	}
	if n := p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 104, Value: 2}); gspStatus(n) != 200 {
		t.Fatalf("stop logging: %d", gspStatus(n))
	}
	n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 105, Path: "/Mem/Logbook/entries"})
	if gspStatus(n) != 200 || len(n) != 5+16 || n[4] != 1 {
		t.Fatalf("entries % x", n)
	}
	id := binary.LittleEndian.Uint32(n[5:])
	size := binary.LittleEndian.Uint64(n[13:])
	if n := p.command(gspwire.Command{Code: gspwire.FetchLog, Ref: 106, LogID: id}); gspStatus(n) != 200 {
		t.Fatalf("FETCH_LOG: %d", gspStatus(n))
	}
	file := make([]byte, 0, size)
	for {
		n := p.read()
		if n[0] != gspwire.Data || n[1] != 106 || len(n) < 6 {
			t.Fatalf("during FETCH_LOG: % x", n)
		}
		if off := binary.LittleEndian.Uint32(n[2:]); int(off) != len(file) {
			t.Fatalf("chunk at offset %d, want %d", off, len(file))
		}
		if len(n) == 6 {
			break
		}
		file = append(file, n[6:]...)
	}
	if uint64(len(file)) != size {
		t.Fatalf("fetched %d bytes of a log of %d", len(file), size)
	}
	recs, err := sbem.Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, rec := range recs {
		for _, v := range rec.Values {
			count[v.Path]++
		}
	}
	if c := count["MeasAcc.ArrayAcc.x"]; c < 500 || c > 530 {
		t.Errorf("%d Acc samples in 10 s at 52 Hz", c)
	}
	if c := count["MeasECGmV.Samples"]; c < 1950 || c > 2010 {
		t.Errorf("%d ECG samples in 10 s at 200 Hz", c)
	}
	if count["TimeDetailed.utcTime"] != 1 {
		t.Errorf("%d time records", count["TimeDetailed.utcTime"])
	}
	if n := p.command(gspwire.Command{Code: gspwire.ClearLogbook, Ref: 107}); gspStatus(n) != 200 {
		t.Fatalf("CLEAR_LOGBOOK: %d", gspStatus(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 108, Path: "/Mem/Logbook/Entries"}); gspStatus(n) != 200 || fmt.Sprint(n[4:]) != "[0]" {
		t.Errorf("entries after clearing % x", n)
	}
	p.c.Close(websocket.StatusNormalClosure, "")
}

// At MTU 23 a notification carries 20 bytes: a stream's payload comes as
// DATA, DATA_PART2 and DATA_PART3s that join into whole payloads.
func TestGSPSmallMTU(t *testing.T) {
	r := newGSPRig(t, "")
	p := r.dial("mtu=23", nil)
	if n := p.command(gspwire.Command{Code: gspwire.Subscribe, Ref: 9, Path: "/Meas/IMU9/52"}); gspStatus(n) != 200 {
		t.Fatalf("SUBSCRIBE: %d", gspStatus(n))
	}
	for range 10 {
		r.d.Advance(100 * time.Millisecond)
	}
	p.command(gspwire.Command{Code: gspwire.Unsubscribe, Ref: 9})
	var seq []byte
	for _, n := range p.stash {
		if n[1] == 9 {
			seq = append(seq, n[0])
		}
	}
	if len(seq) == 0 {
		t.Fatal("no notification")
	}
	// Each payload: DATA, DATA_PART2, then DATA_PART3 for the rest.
	for i, c := range seq {
		var want byte
		switch {
		case c == gspwire.Data:
			continue
		case i > 0 && seq[i-1] == gspwire.Data:
			want = gspwire.DataPart2
		default:
			want = gspwire.DataPart3
		}
		if i == 0 || c != want {
			t.Fatalf("part %d is %d after %v, want %d", i, c, seq[:i], want)
		}
	}
	payloads := joined(p.stash)[9]
	samples, last := 0, uint32(0)
	for i, pl := range payloads {
		if len(pl) <= 20 || (len(pl)-4)%36 != 0 {
			t.Fatalf("joined payload of %d bytes; want a timestamp and samples of 36 bytes, longer than one notification", len(pl))
		}
		if ts := binary.LittleEndian.Uint32(pl); i > 0 && ts <= last {
			t.Errorf("timestamp %d after %d", ts, last)
		} else {
			last = ts
		}
		samples += (len(pl) - 4) / 36
	}
	if samples < 45 || samples > 53 {
		t.Errorf("%d IMU9 samples in 1 s at 52 Hz", samples)
	}
}

// dialError opens the GSP WebSocket and returns the HTTP status and body
// error of a refused handshake.
func dialError(t *testing.T, url string, hdr http.Header) (int, string) {
	t.Helper()
	c, resp, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: hdr})
	if err == nil {
		c.CloseNow()
		t.Fatalf("%s: the handshake succeeded", url)
	}
	if resp == nil {
		t.Fatalf("%s: %v", url, err)
	}
	var body struct{ Error string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %d without a JSON error: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode, body.Error
}

// The GSP WebSocket refuses a bad MTU, another origin and a missing token,
// with what is allowed.
func TestGSPRefusals(t *testing.T) {
	const token = "0123456789abcdef0123"
	r := newGSPRig(t, token)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	for _, tc := range []struct {
		name, query string
		hdr         http.Header
		status      int
		want        string
	}{
		{"mtu too small", "mtu=22", auth, 400, "mtu \"22\": the ATT MTU is a whole number of bytes from 23 to 517 (default 247)"},
		{"mtu too large", "mtu=518", auth, 400, "from 23 to 517"},
		{"mtu not a number", "mtu=big", auth, 400, "from 23 to 517"},
		{"mtu twice", "mtu=23&mtu=30", auth, 400, "mtu given 2 times"},
		{"unknown parameter", "mtus=23", auth, 400, "unknown query parameter \"mtus\""},
		{"no token", "", nil, 401, "missing access token"},
		{"wrong token", "token=0123456789abcdef0124", nil, 401, "wrong access token"},
		{"foreign origin", "token=" + token, http.Header{"Origin": {"http://evil.example"}}, 403, "request from a page of http://evil.example refused"},
		{"cross-site", "", http.Header{"Authorization": {"Bearer " + token}, "Sec-Fetch-Site": {"cross-site"}}, 403, "Sec-Fetch-Site: cross-site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := dialError(t, r.url(tc.query), tc.hdr)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d with %q", status, body, tc.status, tc.want)
			}
		})
	}
	u := "ws" + strings.TrimPrefix(r.srv.URL, "http") + "/api/devices/000999/gsp"
	if status, body := dialError(t, u, auth); status != 404 || !strings.Contains(body, "the bridge sees 000123") {
		t.Errorf("unknown device: %d %s", status, body)
	}
	// The token as a query parameter, as a browser's WebSocket sends it.
	p := r.dial("mtu=64&token="+token, nil)
	if n := p.command(gspwire.Command{Code: gspwire.Hello, Ref: 1}); n[2] != gspwire.ProtocolVersion || len(n) > 61 {
		t.Errorf("HELLO at MTU 64: % x", n)
	}
}

// closeOf reads until the WebSocket closes and returns its close status
// and reason.
func closeOf(t *testing.T, c *websocket.Conn) (websocket.StatusCode, string) {
	t.Helper()
	for {
		_, _, err := c.Read(context.Background())
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("the WebSocket ended without a close frame: %v", err)
		}
		return ce.Code, ce.Reason
	}
}

// One GSP client per device: a second is refused while the first is
// open, and welcome once it closed; its streams end with it. Text
// messages that are not reads end the WebSocket, and so does the end of the
// connection to the device.
func TestGSPOneClientAndClosing(t *testing.T) {
	r := newGSPRig(t, "")
	first := r.dial("", nil)
	if n := first.command(gspwire.Command{Code: gspwire.Subscribe, Ref: 1, Path: "/Meas/Acc/13"}); gspStatus(n) != 200 {
		t.Fatalf("SUBSCRIBE: %d", gspStatus(n))
	}
	second := r.dial("", nil)
	if code, reason := closeOf(t, second.c); code != websocket.StatusTryAgainLater || !strings.Contains(reason, "device 000123 has a GSP client already") {
		t.Errorf("second client: %d %q", code, reason)
	}

	// Text that is not a read is refused.
	if err := first.c.Write(context.Background(), websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if code, reason := closeOf(t, first.c); code != websocket.StatusUnsupportedData || !strings.Contains(reason, "text messages are reads") {
		t.Errorf("text message: %d %q", code, reason)
	}

	// The first client's stream ended with it: the next client's
	// SUBSCRIBE on the same reference is not a conflict, and nothing of
	// the first (its UNSUBSCRIBE's answer) reaches the next.
	third := r.dialReady()
	if n := third.command(gspwire.Command{Code: gspwire.Subscribe, Ref: 1, Path: "/Meas/Acc/13"}); gspStatus(n) != 200 {
		t.Errorf("SUBSCRIBE after the first client closed: %d", gspStatus(n))
	}

	// A write longer than the MTU allows.
	big := make([]byte, 245)
	big[0], big[1] = byte(gspwire.Get), 3
	if err := third.c.Write(context.Background(), websocket.MessageBinary, big); err != nil {
		t.Fatal(err)
	}
	if code, reason := closeOf(t, third.c); code != websocket.StatusMessageTooBig || !strings.Contains(reason, "at MTU 247 a write carries at most 244 bytes") {
		t.Errorf("long write: %d %q", code, reason)
	}

	// The device drops the connection.
	fourth := r.dialReady()
	st, _ := r.b.Device(r.serial)
	if st.Handle == nil {
		t.Fatalf("not connected: %+v", st)
	}
	r.d.Expect(resource.StatusOK, resource.Delete, fmt.Sprintf("/Comm/Ble/Peers/%d", *st.Handle))
	if code, reason := closeOf(t, fourth.c); code != bridge.StatusGSPDisconnected || !strings.Contains(reason, "device 000123: disconnected") {
		t.Errorf("device disconnected: %d %q", code, reason)
	}
}

// TestGSPCloseReleases: a GSP client's end ends the device's connection at
// once, as a central's disconnect does, whatever the idle period; unless
// another client holds the device, whose connection then goes on.
func TestGSPCloseReleases(t *testing.T) {
	r := newGSPRig(t, "") // the idle period is the default minute
	waitState := func(what string, ok func(phone.DeviceState) bool) phone.DeviceState {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) { // a guard, not a bound
			if st, err := r.b.Device(r.serial); err == nil && ok(st) {
				return st
			} else if time.Now().After(deadline) {
				t.Fatalf("device %s not %s: %+v", r.serial, what, st)
			}
		}
	}
	first := r.dialReady()
	first.c.Close(websocket.StatusNormalClosure, "")
	st := waitState("released", func(s phone.DeviceState) bool { return s.Advertising && !s.Connected })
	if st.Note != "released: its GSP client disconnected" || st.AutoConnect {
		t.Errorf("after the GSP client left: %+v", st)
	}

	// a subscription of the API holds the device: the connection stays
	c, err := bridgeclient.Dial(context.Background(), r.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, _, err := c.SubscribeMessage(context.Background(), bridgeclient.Message{Path: "/Meas/Acc/13", Device: r.serial})
	if err != nil {
		t.Fatal(err)
	}
	held := waitState("connected", func(s phone.DeviceState) bool { return s.Connected })
	second := r.dialReady()
	second.c.Close(websocket.StatusNormalClosure, "")
	r.dialReady() // served once the second client has ended
	if st := waitState("connected", func(s phone.DeviceState) bool { return s.Connected }); *st.Handle != *held.Handle || sub.Err() != nil {
		t.Errorf("the connection a subscription holds: handle %d, then %d (%s); the subscription: %v", *held.Handle, *st.Handle, st.Note, sub.Err())
	}
}

// A client that walks away in the middle of a FETCH_LOG leaves the rest
// of the log queued on the device; the next client is let in at once, and
// gets nothing of it. The radio here is so slow (one short packet per
// connection event) that the rest of the log would take a minute of
// device time or more, far more than passes while the next client waits:
// had the phone waited for it, the next client would have been refused
// (1013). What the radio's transmit queue holds goes out first, so it
// holds two notifications, 0.6 s of device time at MTU 247.
func TestGSPNextClientAfterOneLeftMidFetch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mtu     int
		logging time.Duration // of IMU9 at 833 Hz
	}{{247, 3 * time.Second}, {23, 600 * time.Millisecond}} {
		slow := profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: profile.MinDataLength, TXQueue: profile.MinTXQueue}
		r := newGSPRigAir(t, "", slow)
		query := fmt.Sprintf("mtu=%d", tc.mtu)
		first := r.dial(query, nil)
		for _, c := range []gspwire.Command{
			{Code: gspwire.PutDataLoggerConfig, Ref: 1, Paths: []string{"/Meas/IMU9/833"}},
			{Code: gspwire.PutDataLoggerState, Ref: 2, Value: 3},
		} {
			if n := first.command(c); gspStatus(n) != 200 {
				t.Fatalf("MTU %d: %v: %d", tc.mtu, c.Code, gspStatus(n))
			}
		}
		r.d.Advance(tc.logging)
		if n := first.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 3, Value: 2}); gspStatus(n) != 200 {
			t.Fatalf("MTU %d: stop logging: %d", tc.mtu, gspStatus(n))
		}
		if n := first.command(gspwire.Command{Code: gspwire.FetchLog, Ref: 4, LogID: 1}); gspStatus(n) != 200 {
			t.Fatalf("MTU %d: FETCH_LOG: %d", tc.mtu, gspStatus(n))
		}
		for n := first.read(); n[0] != gspwire.Data || n[1] != 4; n = first.read() { // the log is coming
		}
		first.c.CloseNow() // walks away

		next := r.dial(query, nil)
		n := next.command(gspwire.Command{Code: gspwire.Hello, Ref: 200})
		if n[2] != gspwire.ProtocolVersion {
			t.Errorf("MTU %d: the next client's HELLO: % x", tc.mtu, n)
		}
		if n := next.command(gspwire.Command{Code: gspwire.Get, Ref: 201, Path: "/System/Mode"}); gspStatus(n) != 200 {
			t.Errorf("MTU %d: the next client's GET: %d", tc.mtu, gspStatus(n))
		}
		for _, n := range next.stash {
			t.Errorf("MTU %d: the next client got % x, which the first left", tc.mtu, n)
		}
	}
}

// PUT_SYSTEMMODE is answered before the device switches, as the firmware
// does and as movesense-py's `movesense stop` waits for: the answer (202)
// reaches the GSP WebSocket before the close that the reset or the power
// off brings, with the radio's throughput model on, where the answer waits
// for a connection event that comes after the switch.
func TestGSPSystemModeAnsweredBeforeTheSwitch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   uint8
		reason string
	}{{5, "the device reset"}, {12, "the device reset"}, {1, "the device turned off"}} {
		r := newGSPRigWith(t, "", true)
		p := r.dial("", nil)
		p.command(gspwire.Command{Code: gspwire.Hello, Ref: 100})
		p.write(gspwire.Command{Code: gspwire.PutSystemMode, Ref: 107, Value: tc.mode})
		var got []string
		for {
			m := p.wait()
			if m.err != nil {
				var ce websocket.CloseError
				if !errors.As(m.err, &ce) || ce.Code != bridge.StatusGSPDisconnected || !strings.Contains(ce.Reason, tc.reason) {
					t.Errorf("mode %d: the WebSocket ended with %v; want %d and %q", tc.mode, m.err, bridge.StatusGSPDisconnected, tc.reason)
				}
				break
			}
			got = append(got, fmt.Sprintf("% x", m.b))
		}
		if want := "01 6b ca 00"; !slices.Contains(got, want) { // COMMAND_RESPONSE on 107: 202
			t.Errorf("mode %d: before the close came %q; want the answer %q", tc.mode, got, want)
		}
	}
}

// FuzzGSPWrites writes any command through the bridge's GSP WebSocket: the
// session goes on, every notification fits the MTU, and a HELLO written
// after it is answered. Mode changes are left out: they reset or switch off
// the device, which ends the session as documented.
func FuzzGSPWrites(f *testing.F) {
	for _, c := range []gspwire.Command{
		{Code: gspwire.Hello, Ref: 1}, {Code: gspwire.Get, Ref: 2, Path: "/Info"}, {Code: gspwire.Subscribe, Ref: 3, Path: "/Meas/Acc/13"},
		{Code: gspwire.Unsubscribe, Ref: 3}, {Code: gspwire.FetchLog, Ref: 4, LogID: 1}, {Code: gspwire.ClearLogbook, Ref: 5},
		{Code: gspwire.PutDataLoggerConfig, Ref: 6, Paths: []string{"/Meas/ECG/125/mV"}}, {Code: gspwire.PutUTCTime, Ref: 8, Time: 1},
		{Code: gspwire.PutDataLoggerState, Ref: 9, Value: 3}, {Code: gspwire.Get, Ref: 10, Path: "/Mem/Logbook/Entries"},
	} {
		f.Add(gspwire.AppendCommand(nil, c))
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add([]byte{99, 1, 2})
	r := newGSPRig(f, "")
	p := r.dial("mtu=40", nil)
	f.Fuzz(func(t *testing.T, cmd []byte) {
		if len(cmd) > 0 && cmd[0] == byte(gspwire.PutSystemMode) {
			t.Skip("mode changes end the session")
		}
		p.t = t
		if len(cmd) > 37 {
			cmd = cmd[:37] // MTU 40 - 3: longer writes close the session (1009)
		}
		if err := p.c.Write(context.Background(), websocket.MessageBinary, cmd); err != nil {
			t.Fatal(err)
		}
		p.command(gspwire.Command{Code: gspwire.Hello, Ref: 0xFE}) // read fails the test on a notification longer than 37 bytes
		p.stash = nil
	})
}

// The bridge's connection interval is one the link layer has: 7.5 ms to
// 4 s in steps of 1.25 ms.
func TestBridgeConnInterval(t *testing.T) {
	for _, bad := range []time.Duration{5 * time.Millisecond, 7600 * time.Microsecond, 5 * time.Second} {
		if _, err := phone.New(phone.Config{ConnInterval: bad}); !errors.Is(err, phone.ErrConfig) {
			t.Errorf("interval %v: %v, want ErrConfig", bad, err)
		}
	}
	b, err := phone.New(phone.Config{ConnInterval: 15 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}
