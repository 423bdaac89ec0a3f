package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/bridge"
	"senseboard/bridge/bridgeclient"
	"senseboard/clock"
	"senseboard/internal/loopback"
	"senseboard/link"
	"senseboard/phone"
	"senseboard/profile"
	"senseboard/record"
	"senseboard/replay"
	"senseboard/resource"
	"senseboard/transport/serial"
)

func TestMain(m *testing.M) {
	// go test -artifacts -outputdir DIR: the test framework puts the
	// artifacts (the dashboard's screenshots) in DIR/_artifacts, which it
	// cannot create without DIR.
	flag.Parse()
	if f := flag.Lookup("test.outputdir"); f != nil && f.Value.String() != "" {
		if err := os.MkdirAll(f.Value.String(), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	goleak.VerifyTestMain(chromeStops{m})
}

// chromeStops runs the tests and then ends the browser the dashboard tests
// share, before the check for goroutines left running.
type chromeStops struct{ m *testing.M }

func (c chromeStops) Run() int {
	defer stopChrome()
	return c.m.Run()
}

// rig is a bridge with devices of its own program and of another one (on
// the air), served over HTTP.
type rig struct {
	t      testing.TB
	b      *phone.Phone
	srv    *httptest.Server
	local  map[string]*senseboard.Device
	remote map[string]*senseboard.Device
	ctx    context.Context
	token  string // the bridge's access token, "" for none
	// peripherals are the local devices; stop ends the program of a remote one
	peripherals []phone.Peripheral
	stop        map[string]context.CancelFunc
}

type rigConfig struct {
	local, remote []string // serial numbers
	bridge        phone.Config
	token         string
	allowHosts    []string
	allowOrigins  []string
	profile       string                                    // a built-in profile of the devices; the default when ""
	before        func(serial string, d *senseboard.Device) // runs before the bridge starts
	modules       profile.Modules
	logbook       int // the devices' log storage in bytes; the profile's default when 0
	// onDemand leaves the bridge connecting on demand, as by default;
	// otherwise the rig's bridge connects to every device (ConnectAll)
	onDemand bool
	// smallSendBuffers makes the kernel hold little for a client that
	// does not read, so that the bridge's own limit shows soon
	smallSendBuffers bool
	// speed runs the devices on a virtual clock that many times faster
	// than real time; 0 on real time
	speed float64
}

// smallBuffers sets a small send buffer on each accepted connection.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

func newRig(t testing.TB, rc rigConfig) *rig {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, local: map[string]*senseboard.Device{}, remote: map[string]*senseboard.Device{}, ctx: ctx, token: rc.token,
		stop: map[string]context.CancelFunc{}}
	var wg sync.WaitGroup
	var closers []func()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	})
	var clk clock.Clock
	if rc.speed > 0 {
		vclk := clock.NewVirtual()
		clk = vclk
		wg.Go(func() { vclk.Run(ctx, rc.speed) })
	}
	open := func(serialNo string) *senseboard.Device {
		p := profile.Default()
		if rc.profile != "" {
			named, err := profile.Lookup(rc.profile)
			if err != nil {
				t.Fatal(err)
			}
			p = named
		} else {
			p.Modules.HRS, p.Modules.NUS = rc.modules.HRS, rc.modules.NUS
		}
		p = p.WithSerial(serialNo)
		if rc.logbook > 0 {
			p.Logbook.Capacity = rc.logbook
		}
		d, err := senseboard.New(senseboard.Config{Profile: p, Seed: 1, Clock: clk,
			StateDir: filepath.Join(dir, serialNo)})
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, func() { d.Close() })
		if rc.before != nil {
			rc.before(serialNo, d)
		}
		return d
	}
	cfg := rc.bridge
	if !rc.onDemand {
		cfg.ConnectAll = true // most tests start from connected devices
	}
	for _, s := range rc.local {
		d := open(s)
		srv := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
		r.local[s] = d
		// as a program's bridge reaches its own devices: a scan reads the
		// radio, a connection takes a stream
		cfg.Local = append(cfg.Local, phone.Peripheral{Serial: s, Inject: d.InjectJSON, Faults: d.Faults, Dial: func(context.Context) (net.Conn, error) {
			dev, central := net.Pipe()
			wg.Go(func() { srv.ServeConn(ctx, dev) })
			return central, nil
		}, Scan: func() (link.AdvertMsg, bool) { return srv.Scan(), true }})
	}
	var devices *air.Link // the program of the remote devices
	if len(rc.remote) > 0 {
		var closeLinks func()
		devices, cfg.Air, closeLinks = airLinks(t)
		closers = append(closers, closeLinks)
	}
	for _, s := range rc.remote {
		d := open(s)
		srv := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
		ln, err := devices.Listen(s)
		if err != nil {
			t.Fatal(err)
		}
		ln.SetScan(func() []byte { b, _ := json.Marshal(srv.Scan()); return b }) // as a program's devices advertise
		r.remote[s] = d
		rctx, stop := context.WithCancel(ctx)
		r.stop[s] = stop
		wg.Go(func() { srv.Serve(rctx, ln) })
	}
	r.peripherals = cfg.Local
	if cfg.ScanInterval == 0 {
		cfg.ScanInterval = 20 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		// a guard against hanging, not a bound: on a busy machine an
		// exchange with a device can take longer than the 5 s default
		cfg.Timeout = time.Minute
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(dir, "bridge")
	}
	b, err := phone.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.b = b
	wg.Go(func() { b.Run(ctx) })
	lib := record.NewLibrary(filepath.Join(cfg.StateDir, "recordings"))
	closers = append(closers, lib.Close)
	r.srv = httptest.NewUnstartedServer((&bridge.Server{Phone: b, Recordings: lib, Token: rc.token, AllowHosts: rc.allowHosts, AllowOrigins: rc.allowOrigins}).Handler())
	if rc.smallSendBuffers {
		r.srv.Listener = smallBuffers{r.srv.Listener}
	}
	r.srv.Start()
	closers = append(closers, r.srv.Close)
	return r
}

// recordings lists the bridge's recordings.
func (r *rig) recordings() []bridge.RecordingState {
	r.t.Helper()
	var hdr []string
	if r.token != "" {
		hdr = []string{"Authorization", "Bearer " + r.token}
	}
	status, body := r.get("/api/recordings", hdr...)
	var recs []bridge.RecordingState
	if err := json.Unmarshal([]byte(body), &recs); status != 200 || err != nil {
		r.t.Fatalf("GET /api/recordings: %d %s", status, body)
	}
	return recs
}

// waitFor polls the bridge until a device's state satisfies ok.
func (r *rig) waitFor(serial string, what string, ok func(phone.DeviceState) bool) phone.DeviceState {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a bound
	for {
		st, err := r.b.Device(serial)
		if err == nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("device %s: not %s within a minute: %+v, %v", serial, what, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *rig) connected(serial string) phone.DeviceState {
	r.t.Helper()
	return r.waitFor(serial, "connected", func(s phone.DeviceState) bool { return s.Connected })
}

// call sends an HTTP request to the bridge and returns the status and body;
// hdr are header names and values. Requests other than GET carry JSON
// unless hdr says otherwise.
func (r *rig) call(method, path, body string, hdr ...string) (int, string) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.srv.URL+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (r *rig) post(path, body string, hdr ...string) (int, string) {
	r.t.Helper()
	return r.call(http.MethodPost, path, body, hdr...)
}

func (r *rig) get(path string, hdr ...string) (int, string) {
	r.t.Helper()
	return r.call(http.MethodGet, path, "", hdr...)
}

func (r *rig) dial(opts *bridgeclient.Options) *bridgeclient.Client {
	r.t.Helper()
	c, err := bridgeclient.Dial(r.ctx, r.srv.URL, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

// decode reads a JSON object.
func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}

func TestMessagesOverHTTP(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")

	status, body := r.post("/api/message", `{"type": "get", "path": "/Info", "id": 7}`)
	m := decode(t, body)
	if status != 200 || m["type"] != "response" || m["id"] != "7" || m["device"] != "000123" || m["response"] != 200.0 ||
		m["responsestring"] != "HTTP_CODE_OK" || m["operation"] != "get" || m["uri"] != "/net/000123/Info" {
		t.Fatalf("GET /Info: %d %s", status, body)
	}
	if content, _ := m["content"].(map[string]any); content["serial"] != "000123" {
		t.Errorf("content %v", m["content"])
	}
	if !strings.HasPrefix(body, `{"type":"response","id":"7","device":"000123","response":200,"responsestring":"HTTP_CODE_OK","operation":"get","uri":"/net/000123/Info","content":{`) {
		t.Errorf("field order: %s", body)
	}

	// PUT time, then read it back; paths in any case, with or without /
	const us = 1700000000000000
	if status, body := r.post("/api/message", `{"type": "PUT", "path": "time", "value": 1700000000000000}`); status != 200 || decode(t, body)["response"] != 200.0 {
		t.Fatalf("PUT /Time: %d %s", status, body)
	}
	_, body = r.post("/api/message", `{"type": "get", "path": "/net/000123/TIME"}`)
	if got := decode(t, body)["content"].(float64); got < us || got > us+5e6 {
		t.Errorf("time after PUT: %v", got)
	}
}

func TestBadMessages(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, remote: []string{"000124"}})
	r.connected("000123")
	r.connected("000124")
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"malformed JSON", `{"type": "get", "path": `, 400, "not a JSON message"},
		{"not an object", `[1, 2]`, 400, "not a JSON message"},
		{"unknown field", `{"type": "get", "path": "/Info", "body": 1}`, 400, `unknown field "body"`},
		{"unknown type", `{"type": "fetch", "path": "/Info", "device": "000123"}`, 400, `unknown type "fetch"; a message's type is get, put, post, delete, subscribe or unsubscribe`},
		{"missing type", `{"path": "/Info"}`, 400, "no type"},
		{"missing path", `{"type": "get", "id": "x"}`, 400, `"get" message without a path`},
		{"bad id", `{"type": "get", "path": "/Info", "id": [1]}`, 400, "a string or a number"},
		{"two devices, none named", `{"type": "get", "path": "/Info"}`, 400, "several devices are connected (000123, 000124)"},
		{"device and path disagree", `{"type": "get", "path": "/net/000124/Info", "device": "000123"}`, 400, "the path names device 000124 and device says 000123"},
		{"unknown device", `{"type": "get", "path": "/net/999999/Info"}`, 404, "device 999999: no such device; the bridge sees 000123, 000124"},
		{"subscribe one-shot", `{"type": "subscribe", "path": "/Meas/HR", "device": "000123"}`, 400, "a subscription needs a stream"},
		{"bad JSON value", `{"type": "put", "path": "/Time", "value": 12 34, "device": "000123"}`, 400, "not a JSON message"},
		// encoding/json would read U+FFFD in their place, and the device
		// would answer for a path the client never named
		{"path not UTF-8", "{\"type\": \"get\", \"path\": \"/In\xfffo\", \"device\": \"000123\"}", 400, `"path" is not valid UTF-8: its byte 3 is 0xff`},
		{"path half a surrogate", `{"type": "get", "path": "/Info\ud800", "device": "000123"}`, 400, `"path" is not valid UTF-8: the escape \uD800`},
		{"device not UTF-8", "{\"type\": \"get\", \"path\": \"/Info\", \"device\": \"000123\xc3\"}", 400, `"device" is not valid UTF-8`},
		{"value not UTF-8", "{\"type\": \"put\", \"path\": \"/Comm/Ble/NUS\", \"value\": {\"text\": [\"\xff\"]}}", 400, `"value.text[0]" is not valid UTF-8`},
	}
	for _, tt := range tests {
		status, body := r.post("/api/message", tt.body)
		m := decode(t, body)
		if status != tt.status || m["type"] != "error" || !strings.Contains(m["error"].(string), tt.want) {
			t.Errorf("%s: %d %s; want %d and %q", tt.name, status, body, tt.status, tt.want)
		}
	}
	// a value of the wrong type reaches the device, which says what it wants
	status, body := r.post("/api/message", `{"type": "put", "path": "/Time", "value": "noon", "device": "000123", "id": "t"}`)
	m := decode(t, body)
	if status != 200 || m["response"] != 400.0 || m["id"] != "t" || !strings.Contains(m["error"].(string), "takes int64") {
		t.Errorf("PUT /Time with a string: %d %s", status, body)
	}
	status, body = r.post("/api/message", `{"type": "put", "path": "/Ui/Ind/Visual", "value": {"Color": 1}, "device": "000124"}`)
	if m := decode(t, body); status != 200 || m["response"] != 400.0 {
		t.Errorf("PUT with a wrong record: %d %s", status, body)
	}
	// every other body: a name or path that is not UTF-8 is refused too
	for _, tt := range []struct{ path, body, want string }{
		{"/api/recordings", "{\"paths\": [\"/Meas/Acc/104\"], \"device\": \"000123\", \"name\": \"walk\xe2\x82\"}", `"name" is not valid UTF-8`},
		{"/api/recordings", "{\"paths\": [\"/Meas/Acc/104\", \"/Meas/\xffHR\"], \"device\": \"000123\"}", `"paths[1]" is not valid UTF-8: its byte 6 is 0xff`},
		{"/api/devices/000123/logging", "{\"paths\": [\"/Meas/Acc/5\x802\"]}", `"paths[0]" is not valid UTF-8`},
	} {
		status, body := r.post(tt.path, tt.body)
		if m := decode(t, body); status != 400 || !strings.Contains(fmt.Sprint(m["error"]), tt.want) {
			t.Errorf("POST %s %q: %d %s; want 400 and %q", tt.path, tt.body, status, body, tt.want)
		}
	}
	// too big
	status, body = r.post("/api/message", `{"type": "put", "path": "/Time", "value": "`+strings.Repeat("x", bridge.MaxMessage)+`"}`)
	if status != 413 || !strings.Contains(body, "exceeds 65536 bytes") {
		t.Errorf("oversized message: %d %.100s", status, body)
	}
	// an unknown API
	if status, body := r.get("/api/nothing"); status != 404 || !strings.Contains(body, "no API at GET /api/nothing") {
		t.Errorf("unknown API: %d %s", status, body)
	}
}

func TestParallelSubscriptionsOnOneWebSocket(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	c := r.dial(nil)
	ctx := r.ctx

	acc, resp, err := c.SubscribeMessage(ctx, bridgeclient.Message{Path: "/Meas/Acc/104", ID: "acc"})
	if err != nil || resp.Response != 200 || resp.URI != "/net/000123/Meas/Acc/104" || resp.ID != "acc" {
		t.Fatalf("subscribe Acc: %+v %v", resp, err)
	}
	ecg, _, err := c.SubscribeMessage(ctx, bridgeclient.Message{Path: "/Meas/ECG/125", ID: "ecg"})
	if err != nil {
		t.Fatal(err)
	}
	hr, _, err := c.SubscribeMessage(ctx, bridgeclient.Message{Path: "/Meas/HR", ID: "hr"})
	if err != nil {
		t.Fatal(err)
	}
	// every stream delivers, tagged with its id
	for _, s := range []struct {
		sub   *bridgeclient.Subscription
		field string
	}{{acc, "ArrayAcc"}, {ecg, "Samples"}, {hr, "average"}} {
		select {
		case n := <-s.sub.C():
			if n.ID != s.sub.ID() || !strings.Contains(string(n.Content), s.field) {
				t.Errorf("notification of %s: %+v", s.sub.ID(), n)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no notification of %s", s.sub.ID())
		}
	}
	// the same id again is refused; the first subscription goes on
	if _, _, err := c.SubscribeMessage(ctx, bridgeclient.Message{Path: "/Meas/Gyro/104", ID: "acc"}); err == nil || !strings.Contains(err.Error(), `id "acc" names a subscription of this client already`) {
		t.Errorf("reused id: %v", err)
	}
	// unsubscribe ECG while the others go on
	if resp, err := ecg.Unsubscribe(ctx); err != nil || resp.Response != 200 {
		t.Fatalf("unsubscribe ECG: %+v %v", resp, err)
	}
	st := r.waitFor("000123", "without the ECG stream", func(s phone.DeviceState) bool { return len(s.Streams) == 2 })
	if st.Streams[0] != "/net/000123/Meas/Acc/104" || st.Streams[1] != "/net/000123/Meas/HR" {
		t.Errorf("streams %v", st.Streams)
	}
	drain(acc)
	for range 3 {
		select {
		case <-acc.C():
		case <-time.After(time.Minute):
			t.Fatal("Acc stopped with the ECG subscription")
		}
	}
	// a second client shares the device's Acc stream
	c2 := r.dial(nil)
	acc2, resp, err := c2.SubscribeMessage(ctx, bridgeclient.Message{Path: "meas/acc/104", ID: "mine"})
	if err != nil || resp.Response != 200 || resp.URI != "/net/000123/Meas/Acc/104" {
		t.Fatalf("second client: %+v %v", resp, err)
	}
	if n := <-acc2.C(); n.ID != "mine" {
		t.Errorf("second client's notification: %+v", n)
	}
	c2.Close()
	if _, err := acc.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	hr.Unsubscribe(ctx)
	r.waitFor("000123", "without streams", func(s phone.DeviceState) bool { return len(s.Streams) == 0 })
}

func drain(s *bridgeclient.Subscription) {
	for {
		select {
		case <-s.C():
		default:
			return
		}
	}
}

func TestAuthAndOrigin(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, token: testToken})
	r.connected("000123")
	msg := `{"type": "get", "path": "/Info"}`
	for _, tt := range []struct {
		name   string
		hdr    []string
		status int
		want   string
	}{
		{"no token", nil, 401, "missing access token"},
		{"wrong token", []string{"Authorization", "Bearer guess"}, 401, "wrong access token"},
		{"right token", []string{"Authorization", "Bearer " + testToken}, 200, `"response":200`},
		{"foreign origin", []string{"Authorization", "Bearer " + testToken, "Origin", "http://evil.example"}, 403, "request from a page of http://evil.example refused"},
	} {
		status, body := r.post("/api/message", msg, tt.hdr...)
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
	}
	if status, body := r.get("/api/devices?token=" + testToken); status != 401 || !strings.Contains(body, "?token= is accepted only on the WebSockets (/api/ws, /api/devices/{serial}/gsp), /api/output and recording and log downloads") {
		t.Errorf("token in the query of a plain request: %d %s", status, body)
	}
	if _, err := bridgeclient.Dial(r.ctx, r.srv.URL, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("WebSocket without the token: %v", err)
	}
	c := r.dial(&bridgeclient.Options{Token: testToken})
	if resp, err := c.Get(r.ctx, "/Info"); err != nil || resp.Response != 200 {
		t.Errorf("WebSocket with the token: %+v %v", resp, err)
	}
	// a WebSocket from a page of another origin
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/api/ws?token="+testToken, nil)
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": "http://evil.example"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign-origin WebSocket: %s", resp.Status)
	}

	for _, tt := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true}, {"[::1]:8080", "", true}, {"localhost:8080", "", true},
		{"0.0.0.0:8080", "", false}, {":8080", "", false}, {"192.168.1.20:8080", "", false}, {"0.0.0.0:8080", "t", true},
	} {
		if err := bridge.CheckAddr(tt.addr, tt.token); (err == nil) != tt.ok {
			t.Errorf("CheckAddr(%q, %q) = %v", tt.addr, tt.token, err)
		}
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := (&bridge.Server{Phone: r.b}).Serve(r.ctx, ln); err == nil || !strings.Contains(err.Error(), "access token") {
		t.Errorf("Serve beyond loopback without a token: %v", err)
	}
}

func TestClientThatNeverReadsIsDropped(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}, smallSendBuffers: true})
	r.connected("000123")
	good := r.dial(nil)
	acc, _, err := good.Subscribe(r.ctx, "/Meas/Acc/104")
	if err != nil {
		t.Fatal(err)
	}
	// a raw client subscribes to fast streams and never reads again
	// with a small receive buffer, set before connecting
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", r.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /api/ws HTTP/1.1\r\nHost: "+r.srv.Listener.Addr().String()+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	for _, m := range []string{`{"type":"subscribe","path":"/Meas/IMU9/1666","id":1}`, `{"type":"subscribe","path":"/Meas/ECG/512","id":2}`} {
		conn.Write(maskedFrame([]byte(m)))
	}
	r.waitFor("000123", "streaming IMU9", func(s phone.DeviceState) bool { return len(s.Streams) == 3 })
	// the bridge drops it and ends its subscriptions; the good client goes on
	r.waitFor("000123", "rid of the slow client's streams", func(s phone.DeviceState) bool { return len(s.Streams) == 1 })
	drain(acc)
	select {
	case <-acc.C():
	case <-time.After(time.Minute):
		t.Fatal("the good client starved")
	}
}

// maskedFrame is a client's text frame.
func maskedFrame(p []byte) []byte {
	f := []byte{0x81, 0x80 | byte(len(p)), 1, 2, 3, 4}
	for i, c := range p {
		f = append(f, c^f[2+i%4])
	}
	return f
}

func TestOutputStream(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.srv.URL+"/api/output?path=/Meas/Acc/52&path=/Meas/ECG/125&id=acc", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("output: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	seen := map[string]int{}
	buf := make([]byte, 0, 1<<16)
	for seen["acc"] < 3 || seen["/Meas/ECG/125"] < 3 {
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		if err != nil {
			t.Fatalf("read: %v (seen %v)", err, seen)
		}
		buf = buf[:len(buf)+n]
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			line := string(buf[:i])
			buf = append(buf[:0], buf[i+1:]...)
			id, rest, ok := strings.Cut(strings.TrimPrefix(line, "ID:"), " ")
			uri, payload, ok2 := strings.Cut(rest, " OUTPUT: ")
			if !strings.HasPrefix(line, "ID:") || !ok || !ok2 || !json.Valid([]byte(payload)) {
				t.Fatalf("line %q", line)
			}
			want := map[string]string{"acc": "/net/000123/Meas/Acc/52", "/Meas/ECG/125": "/net/000123/Meas/ECG/125"}[id]
			if uri != want {
				t.Fatalf("line %q: uri %s, want %s", line, uri, want)
			}
			if seen[id] == 0 && !strings.HasPrefix(payload, `{"response":200`) {
				t.Errorf("first line of %s: %s", id, payload)
			}
			seen[id]++
		}
	}
	cancel()
	r.waitFor("000123", "without streams", func(s phone.DeviceState) bool { return len(s.Streams) == 0 })

	if status, body := r.get("/api/output"); status != 400 || !strings.Contains(body, "give one or more path=") {
		t.Errorf("output without paths: %d %s", status, body)
	}
	if status, body := r.get("/api/output?path=/Meas/Acc/52&path=/Meas/Acc/52"); status != 400 || !strings.Contains(body, "given to two subscriptions") {
		t.Errorf("output with the same id twice: %d %s", status, body)
	}
}

// deleteMessage deletes through the bridge.
func (r *rig) message(m string) map[string]any {
	r.t.Helper()
	status, body := r.post("/api/message", m)
	if status != 200 {
		r.t.Fatalf("%s: %d %s", m, status, body)
	}
	return decode(r.t, body)
}

func TestDisconnectByDeletePeers(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	st := r.connected("000123")
	c := r.dial(nil)
	acc, _, err := c.Subscribe(r.ctx, "/Meas/Acc/104")
	if err != nil {
		t.Fatal(err)
	}
	guard := time.After(time.Minute) // a hang guard
	select {
	case <-acc.C():
	case <-guard:
		t.Fatal("after a minute, no notification has come")
	}
	// the client deletes the bridge's own connection while subscribed
	resp, err := c.Send(r.ctx, bridgeclient.Message{Type: "delete", Path: "/Comm/Ble/Peers/" + itoa(*st.Handle)})
	if err != nil || resp.Response != 200 {
		t.Fatalf("DELETE Peers: %+v %v", resp, err)
	}
	for ended := false; !ended; {
		select {
		case _, open := <-acc.C():
			ended = !open
		case <-guard:
			t.Fatal("after a minute, the subscription has not ended with the connection")
		}
	}
	if err := acc.Err(); !errors.Is(err, bridgeclient.ErrEnded) || !strings.Contains(err.Error(), "DELETE /Comm/Ble/Peers") {
		t.Errorf("subscription ended with %v, want ErrEnded with the reason", err)
	}
	st = r.waitFor("000123", "disconnected", func(s phone.DeviceState) bool { return !s.Connected })
	if st.AutoConnect || !strings.Contains(st.Note, "the device dropped the connection (DELETE /Comm/Ble/Peers/") {
		t.Errorf("after DELETE: %+v", st)
	}
	// it stays disconnected, though the device advertises again
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	time.Sleep(100 * time.Millisecond)
	if st, _ := r.b.Device("000123"); st.Connected {
		t.Fatal("the bridge connected again without being asked")
	}
	if _, err := c.Send(r.ctx, bridgeclient.Message{Type: "get", Path: "/Info", Device: "000123"}); err == nil ||
		!strings.Contains(err.Error(), "device 000123 is not connected (disconnected: the device dropped the connection") {
		t.Errorf("request while disconnected: %v", err)
	}
	if _, err := c.Get(r.ctx, "/Info"); err == nil || !strings.Contains(err.Error(), "no device is connected; the bridge sees 000123") {
		t.Errorf("request to no device while disconnected: %v", err)
	}
	// until asked
	if dev, err := c.Connect(r.ctx, "000123"); err != nil || !dev.Connected {
		t.Fatalf("connect: %+v %v", dev, err)
	}
	if resp, err := c.Get(r.ctx, "/Info"); err != nil || resp.Response != 200 {
		t.Errorf("GET after connecting again: %+v %v", resp, err)
	}
	// the bridge's own disconnect
	if dev, err := c.Disconnect(r.ctx, "000123"); err != nil {
		t.Fatalf("disconnect: %+v %v", dev, err)
	}
	st = r.waitFor("000123", "disconnected", func(s phone.DeviceState) bool { return !s.Connected })
	if st.AutoConnect {
		t.Errorf("auto-connect after a disconnect: %+v", st)
	}
	// a device that does not advertise cannot be connected
	r.local["000123"].Do(&resource.Request{Op: resource.Delete, Path: "/Comm/Ble/Adv"})
	r.waitFor("000123", "silent", func(s phone.DeviceState) bool { return s.State == "not advertising" })
	if _, err := c.Connect(r.ctx, "000123"); err == nil || !strings.Contains(err.Error(), "device 000123 is not advertising") {
		t.Errorf("connect while not advertising: %v", err)
	} else if e, ok := err.(*bridgeclient.Error); !ok || e.Status != 409 {
		t.Errorf("status of the refusal: %#v", err)
	}
}

func itoa(n uint16) string { return strconv.Itoa(int(n)) }

func TestReconnect(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, bridge: phone.Config{Reconnect: true}})
	st := r.connected("000123")
	r.local["000123"].Do(&resource.Request{Op: resource.Delete, Path: "/Comm/Ble/Peers/" + itoa(*st.Handle)})
	r.waitFor("000123", "connected again", func(s phone.DeviceState) bool { return s.Connected && *s.Handle != *st.Handle })
}

func TestPassKeyAndBondingPolicy(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, before: func(_ string, d *senseboard.Device) {
		d.Do(&resource.Request{Op: resource.Put, Path: "/Comm/Ble/Security/Pin", Params: []resource.Value{resource.String("123456")}})
		policy, _ := resource.RecordJSON("BondingSettings", []byte(`{"Policy": 2}`))
		d.Do(&resource.Request{Op: resource.Put, Path: "/Comm/Ble/Security/Settings", Params: []resource.Value{policy}})
	}})
	st := r.connected("000123")
	if !st.PassKey || st.Encrypted || st.Bonded {
		t.Errorf("state before pairing: %+v", st)
	}
	c := r.dial(nil)
	if _, err := c.Get(r.ctx, "/Info"); err == nil || !strings.Contains(err.Error(), "device 000123: the device requires an encrypted link (pair with its pass key first)") {
		t.Errorf("request before pairing: %v", err)
	}
	if status, body := r.post("/api/message", `{"type": "get", "path": "/Info"}`); status != 409 || !strings.Contains(body, "pair with its pass key first") {
		t.Errorf("one-shot request before pairing: %d %s; want 409", status, body)
	}
	for _, tt := range []struct{ key, want string }{
		{"", "pairing failed: the device requires its 6-digit pass key"},
		{"654321", "pairing failed: the pass key does not match"},
	} {
		_, err := c.Pair(r.ctx, "000123", tt.key, true)
		if e, ok := err.(*bridgeclient.Error); !ok || e.Status != 409 || !strings.Contains(e.Msg, tt.want) {
			t.Errorf("pair with %q: %v", tt.key, err)
		}
	}
	st2, err := c.Pair(r.ctx, "000123", "123456", true)
	if err != nil || !st2.Encrypted || !st2.Bonded {
		t.Fatalf("pair: %+v %v", st2, err)
	}
	if resp, err := c.Get(r.ctx, "/Info"); err != nil || resp.Response != 200 {
		t.Fatalf("GET after pairing: %+v %v", resp, err)
	}
	// the bond outlives the connection: the bridge encrypts on its own
	c.Disconnect(r.ctx, "000123")
	r.waitFor("000123", "disconnected", func(s phone.DeviceState) bool { return !s.Connected })
	if st, err := c.Connect(r.ctx, "000123"); err != nil || !st.Encrypted {
		t.Fatalf("connect with the bond's keys: %+v %v", st, err)
	}
	c.Disconnect(r.ctx, "000123")
	r.waitFor("000123", "disconnected", func(s phone.DeviceState) bool { return !s.Connected })

	// another phone may not bond: the policy allows one bond
	other, err := phone.New(phone.Config{Local: r.peripherals, Timeout: time.Minute, Address: "C0:53:42:00:00:02", Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	other.Scan(r.ctx)
	if err := other.Pair(r.ctx, "000123", "123456", true); err == nil || err.Error() != "device 000123: pairing refused by bonding policy BondingOnce" {
		t.Errorf("second bond: %v", err)
	}
	other.Disconnect(r.ctx, "000123")
	other.Close()
}

func TestDevicesOfAnotherProgram(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, remote: []string{"000124"}})
	r.connected("000123")
	st := r.connected("000124")
	if st.Local || st.Name != "Senseboard 000124" || st.Address == "" {
		t.Errorf("remote device: %+v", st)
	}
	m := r.message(`{"type": "get", "path": "/net/000124/Info"}`)
	if m["uri"] != "/net/000124/Info" || m["device"] != "000124" {
		t.Errorf("GET over the air: %v", m)
	}
	if status, body := r.post("/api/devices/000124/events", `{"doubleTap": true}`); status != 409 || !strings.Contains(body, "runs in another program") {
		t.Errorf("inject into a remote device: %d %s", status, body)
	}
	// the other program ends: its device goes away, and the bridge says why
	r.stop["000124"]()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := r.b.Device("000124"); err != nil {
			if !errors.Is(err, phone.ErrUnknownDevice) || !strings.Contains(err.Error(), "it went away (it went off the air: it left the air)") {
				t.Errorf("a device that went away: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bridge still sees a device that went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// the list, where the dashboard and scripts look, shows it gone and why
	status, body := r.get("/api/devices")
	var list []phone.DeviceState
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil {
		t.Fatalf("GET /api/devices: %d %s %v", status, body, err)
	}
	var states []string
	for _, st := range list {
		states = append(states, st.Serial+": "+st.State+" "+st.Note)
	}
	if want := "000124: gone gone: it went off the air: it left the air"; len(list) != 2 || states[1] != want || list[1].Advertising || list[1].Connected {
		t.Errorf("GET /api/devices after 000124 went away: %q; want 000123 and %q", states, want)
	}
	// a message that names no device goes to the one connected, not to
	// one that went away
	if m := r.message(`{"type": "get", "path": "/Info"}`); m["device"] != "000123" {
		t.Errorf("a message that names no device: %v", m)
	}
}

func TestBadMessagesOverWebSocket(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	conn, _, err := websocket.Dial(r.ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/api/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	next := func() map[string]any {
		t.Helper()
		for {
			ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
			_, b, err := conn.Read(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if m := decode(t, string(b)); m["type"] != "device" {
				return m
			}
		}
	}
	for _, tt := range []struct{ send, id, want string }{
		{`{"type": "get", "path": `, "", "not a JSON message"},
		{`{"type": "fetch", "path": "/Info", "id": "f"}`, "f", `unknown type "fetch"`},
		{`{"type": "get", "id": 3}`, "3", "without a path"},
		{`{"type": "unsubscribe", "id": "nothing"}`, "nothing", `no subscription of this connection has id "nothing"`},
		{`{"type": "put", "path": "/Time", "value": tru}`, "", "not a JSON message"},
		{`{"type": "subscribe", "path": "/Meas/Temp", "id": "t"}`, "t", ""},
		{`{"type": "subscribe", "path": "/Meas/HR", "id": "t"}`, "t", `id "t" names a subscription of this connection already`},
	} {
		if tt.want == "" {
			conn.Write(r.ctx, websocket.MessageText, []byte(tt.send))
			if m := next(); m["type"] != "response" || m["response"] != 200.0 {
				t.Errorf("%s: %v", tt.send, m)
			}
			continue
		}
		conn.Write(r.ctx, websocket.MessageText, []byte(tt.send))
		m := next()
		if m["type"] != "error" || (tt.id != "" && m["id"] != tt.id) || !strings.Contains(m["error"].(string), tt.want) {
			t.Errorf("%s: %v", tt.send, m)
		}
	}
	conn.Write(r.ctx, websocket.MessageBinary, []byte(`{"type": "get", "path": "/Info"}`))
	if m := next(); m["type"] != "error" || !strings.Contains(m["error"].(string), "text frames") {
		t.Errorf("binary frame: %v", m)
	}
	// the connection still works
	conn.Write(r.ctx, websocket.MessageText, []byte(`{"type": "get", "path": "/Info", "id": "ok"}`))
	if m := next(); m["type"] != "response" || m["id"] != "ok" || m["response"] != 200.0 {
		t.Errorf("GET after bad messages: %v", m)
	}
}

func TestInjectAndDefinitions(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	state := func() float64 {
		m := r.message(`{"type": "get", "path": "/System/States/2"}`)
		return m["content"].(float64)
	}
	if state() != 1 {
		t.Fatalf("electrodes not in contact at the start")
	}
	if status, body := r.post("/api/devices/000123/events", `{"gear": "off"}`); status != 200 || body != "{\"injected\":\"gear\"}\n" {
		t.Fatalf("inject: %d %s", status, body)
	}
	if state() != 0 {
		t.Errorf("electrodes still in contact after gear off")
	}
	for _, tt := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/devices/000123/events", `{"jump": true}`, 400, "unknown event jump"},
		{"/api/devices/000123/events", `{`, 400, "event:"},
		{"/api/devices/999/events", `{"tap": true}`, 404, "no such device"},
		{"/api/devices/999/connect", ``, 404, "no such device"},
		{"/api/devices/000123/pair", `{"pin": 1}`, 400, `unknown field \"pin\"`},
		{"/api/recordings", `{"paths": []}`, 400, "a recording needs paths"},
		{"/api/recordings", `{"paths": ["/Meas/HR"], "format": "xml"}`, 400, "csv or jsonl"},
		{"/api/recordings", `{"paths": ["/Meas/HR"], "name": "../x"}`, 400, "recording name"},
		{"/api/recordings/none/stop", ``, 404, "no such recording"},
	} {
		if status, body := r.post(tt.path, tt.body); status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("POST %s %s: %d %s", tt.path, tt.body, status, body)
		}
	}

	status, body := r.get("/api/definitions")
	var defs []struct {
		Path string `json:"path"`
		Ops  []struct {
			Op     string `json:"op"`
			Params []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"params"`
			Notification map[string]any `json:"notification"`
		} `json:"ops"`
	}
	if err := json.Unmarshal([]byte(body), &defs); status != 200 || err != nil {
		t.Fatalf("definitions: %d %v", status, err)
	}
	found := false
	for _, d := range defs {
		if d.Path != "/Meas/Acc/{SampleRate}" {
			continue
		}
		for _, o := range d.Ops {
			if o.Op == "subscribe" && len(o.Params) == 1 && o.Params[0].Name == "SampleRate" && o.Params[0].In == "path" &&
				o.Notification["properties"] != nil {
				found = true
			}
		}
	}
	if len(defs) < 40 || !found {
		t.Errorf("definitions: %d resources; SUBSCRIBE /Meas/Acc/{SampleRate} with its parameter and notification found: %v", len(defs), found)
	}
	if status, body := r.get("/"); status != 200 || !strings.Contains(body, "<title>senseboard") {
		t.Errorf("dashboard: %d %.80s", status, body)
	}
}

func TestRecordingThroughTheBridge(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	c := r.dial(nil)
	for _, format := range []string{"csv", "jsonl"} {
		rec, err := c.StartRecording(r.ctx, "", format, "/Meas/Acc/104", "/Meas/ECG/250")
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Streams) != 2 || rec.Device != "000123" || rec.Format != format {
			t.Errorf("recording: %+v", rec)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			got := r.recordings()
			if got[len(got)-1].Notifications >= 40 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("recording: %+v", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
		rec, err = c.StopRecording(r.ctx, rec.Name)
		if err != nil || rec.Error != "" {
			t.Fatalf("stop: %+v %v", rec, err)
		}
		wantFiles := map[string]int{"csv": 2, "jsonl": 1}[format]
		if len(rec.Files) != wantFiles {
			t.Fatalf("%s files %v", format, rec.Files)
		}
		// each file downloads from the bridge as it is on disk
		if len(rec.Downloads) != len(rec.Files) {
			t.Fatalf("downloads %v of files %v", rec.Downloads, rec.Files)
		}
		for i, f := range rec.Files {
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(r.srv.URL + "/" + rec.Downloads[i])
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Equal(got, want) || len(want) == 0 ||
				resp.Header.Get("Content-Disposition") != `attachment; filename=`+filepath.Base(f) {
				t.Errorf("download %s: %d %v, %d bytes; want the %d bytes of %s", rec.Downloads[i], resp.StatusCode, resp.Header, len(got), len(want), f)
			}
		}
		if status, body := r.get("/api/recordings/" + rec.Name + "/files/keys.json"); status != 404 || !strings.Contains(body, `file \"keys.json\": no such recording file; its files: `+rec.Name) {
			t.Errorf("a file that is not the recording's: %d %s", status, body)
		}
		var acc, ecg int
		for _, f := range rec.Files {
			p, err := replay.Load(f)
			if err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
			if s := p.Series[replay.Acc]; s != nil {
				acc += s.Len()
				if s.Rate != 104 {
					t.Errorf("%s: Acc rate %v", f, s.Rate)
				}
			}
			if s := p.Series[replay.ECG]; s != nil {
				ecg += s.Len()
				if s.Rate != 250 {
					t.Errorf("%s: ECG rate %v", f, s.Rate)
				}
			}
		}
		if acc == 0 || ecg == 0 || acc%8 != 0 || ecg%16 != 0 || int64(acc/8+ecg/16) != rec.Notifications {
			t.Errorf("%s: %d Acc and %d ECG samples replayed from %d notifications", format, acc, ecg, rec.Notifications)
		}
	}
	r.waitFor("000123", "without streams", func(s phone.DeviceState) bool { return len(s.Streams) == 0 })
}

func TestBLEServices(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, modules: profile.Modules{HRS: true, NUS: true}})
	st := r.connected("000123")
	if !st.HRS || !strings.Contains(st.Adv, "03030D18") || st.ScanResp != "1209"+strings.ToUpper(hexOf("Senseboard 000123")) {
		t.Errorf("advertisement: %+v", st)
	}
	conn, _, err := websocket.Dial(r.ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/api/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	// next returns the next message of a type, with an id when one is
	// given: the answers of earlier messages may come after later events.
	next := func(typ string, id ...string) map[string]any {
		t.Helper()
		for {
			ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
			_, b, err := conn.Read(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			m := decode(t, string(b))
			if m["type"] == typ && (len(id) == 0 || fmt.Sprint(m["id"]) == id[0]) {
				return m
			}
		}
	}
	send := func(m string) {
		t.Helper()
		if err := conn.Write(r.ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	// heart rate from the device to the phone
	if status, body := r.post("/api/devices/000123/hrs", `{"notifications": true}`); status != 200 {
		t.Fatalf("hrs: %d %s", status, body)
	}
	send(`{"type": "post", "path": "/Comm/Ble/HRS", "value": {"average": 72, "rrData": [833]}, "id": 1}`)
	if m := next("hrs"); m["device"] != "000123" || fmt.Sprint(m["content"]) != "map[average:72 rrData:[833]]" {
		t.Errorf("hrs message %v", m)
	}
	// serial service both ways
	send(`{"type": "subscribe", "path": "/Comm/Ble/NUS", "id": "nus"}`)
	if m := next("response", "nus"); m["response"] != float64(200) {
		t.Fatalf("subscribe to NUS: %v", m)
	}
	if status, body := r.post("/api/devices/000123/nus", `{"text": "hi"}`); status != 200 {
		t.Fatalf("nus: %d %s", status, body)
	}
	if m := next("notification"); fmt.Sprint(m["content"]) != "map[Data:[104 105]]" {
		t.Errorf("NUS data the phone wrote: %v", m)
	}
	send(`{"type": "post", "path": "/Comm/Ble/NUS", "value": {"Data": [1, 2, 3]}}`)
	if m := next("nus"); fmt.Sprint(m["content"]) != "map[data:[1 2 3]]" {
		t.Errorf("nus message %v", m)
	}
	for _, tt := range []struct{ path, body, want string }{
		{"/api/devices/000123/hrs", `{}`, "notifications"},
		{"/api/devices/000123/nus", `{"data": [256]}`, "not a byte"},
		{"/api/devices/000123/nus", `{}`, "1 to 244 bytes"},
	} {
		if status, body := r.post(tt.path, tt.body); status < 400 || !strings.Contains(body, tt.want) {
			t.Errorf("POST %s %s: %d %s", tt.path, tt.body, status, body)
		}
	}
}

func hexOf(s string) string { return fmt.Sprintf("%X", s) }

func TestOperationsAfterClose(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, bridge: phone.Config{Manual: true}})
	b, err := phone.New(phone.Config{Local: r.peripherals, Timeout: time.Minute, Address: "C0:53:42:00:00:03", Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	b.Scan(r.ctx)
	if _, err := b.Device("000123"); err != nil {
		t.Fatalf("the scan did not find the device: %v", err)
	}
	b.Close()
	if err := b.Connect(r.ctx, "000123"); !errors.Is(err, phone.ErrClosed) {
		t.Errorf("connect after close: %v, want %v", err, phone.ErrClosed)
	}
	if err := b.Pair(r.ctx, "000123", "", false); !errors.Is(err, phone.ErrClosed) {
		t.Errorf("pair after close: %v, want %v", err, phone.ErrClosed)
	}
}

// Operations with several parameters take an object keyed by the
// parameters' names, in any case; one body parameter is the value itself.
func TestSeveralParameters(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	ok := []struct {
		name, msg string
		content   string // the answer's content as JSON; "" for none
	}{
		{"EEPROM write", `{"type": "put", "path": "/Component/Eeprom/0", "value": {"Addr": 300, "Data": {"bytes": [9, 8, 7]}}}`, ""},
		{"EEPROM read", `{"type": "get", "path": "/Component/Eeprom/0", "value": {"Addr": 300, "Len": 3}}`, `{"bytes":[9,8,7]}`},
		{"names in any case, any order", `{"type": "get", "path": "/Component/Eeprom/0", "value": {"len": 2, "ADDR": 301}}`, `{"bytes":[8,7]}`},
		{"register write", `{"type": "put", "path": "/Component/MAX3000x/Register", "value": {"address": 2, "value": 4660}}`, ""},
		{"register read, one parameter", `{"type": "get", "path": "/Component/MAX3000x/Register", "value": 2}`, `4660`},
	}
	for _, tt := range ok {
		m := r.message(tt.msg)
		if m["response"] != 200.0 {
			t.Errorf("%s: %v", tt.name, m)
			continue
		}
		got, _ := json.Marshal(m["content"])
		if tt.content != "" && string(got) != tt.content {
			t.Errorf("%s: content %s; want %s", tt.name, got, tt.content)
		}
	}
	bad := []struct{ name, value, want string }{
		{"missing", `{"Addr": 300}`, `missing parameter Len (it is required); GET /Component/Eeprom/{EepromIndex} takes Addr (uint32), Len (uint8)`},
		{"unknown", `{"Addr": 300, "Len": 3, "Length": 4}`, `GET /Component/Eeprom/{EepromIndex} has no parameter "Length"; it takes Addr (uint32), Len (uint8)`},
		{"twice", `{"Addr": 300, "addr": 301, "Len": 3}`, `parameter Addr is given twice`},
		{"not an object", `300`, `GET /Component/Eeprom/{EepromIndex} takes 2 parameters: the value is an object {"Addr": ..., "Len": ...}; 300 given`},
	}
	for _, tt := range bad {
		status, body := r.post("/api/message", `{"type": "get", "path": "/Component/Eeprom/0", "value": `+tt.value+`}`)
		m := decode(t, body)
		if status != 400 || m["type"] != "error" || !strings.Contains(m["error"].(string), tt.want) {
			t.Errorf("%s: %d %s; want 400 and %q", tt.name, status, body, tt.want)
		}
	}
	// the device checks each value against its definition
	m := r.message(`{"type": "get", "path": "/Component/Eeprom/0", "value": {"Addr": 300, "Len": 200}}`)
	if m["response"] != 400.0 || !strings.Contains(fmt.Sprint(m["error"]), "Len") {
		t.Errorf("Len out of range: %v", m)
	}
}

// The device's refusals name what was wrong in a few words, without
// echoing a long value back or printing limits in exponent form.
func TestErrorMessagesThroughTheBridge(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	long := strings.Repeat("7", 3000)
	tests := []struct {
		name, msg string
		status    float64
		want      string
	}{
		{"a whole number as 4.0", `{"type": "put", "path": "/Meas/Acc/Config", "value": {"GRange": 4.0}}`, 200, ""},
		{"a fraction for an integer", `{"type": "put", "path": "/Meas/Acc/Config", "value": {"GRange": 4.5}}`, 400, "AccConfig: field GRange takes an integer; 4.5 given"},
		{"a limit in full", `{"type": "put", "path": "/Component/MAX3000x/Register", "value": {"address": 2, "value": 99999999}}`, 400, "out of range (uint32, 0..16777215)"},
		{"a long value clipped", `{"type": "put", "path": "/Ui/Ind/Visual", "value": ` + long + `}`, 400, strings.Repeat("7", 40) + "… (3000 bytes) does not fit"},
	}
	for _, tt := range tests {
		m := r.message(tt.msg)
		e, _ := m["error"].(string)
		if m["response"] != tt.status || !strings.Contains(e, tt.want) || len(e) > 200 {
			t.Errorf("%s: %v; want %v and %q", tt.name, m, tt.status, tt.want)
		}
	}
}

// Two bridges are two phones: each has a central address of its own,
// derived once from its state and kept there, and a device's bonding
// policies tell them apart.
func TestTwoPhonesAndTheBondingPolicies(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	dirB := t.TempDir()
	phoneB := func() *phone.Phone {
		b, err := phone.New(phone.Config{Local: r.peripherals, Timeout: time.Minute, StateDir: dirB, Manual: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := phoneB()
	defer func() { b.Close() }()
	a := r.b
	if a.Address() == b.Address() || a.Address() == phone.DefaultAddress || !regexp.MustCompile(`^[C-F][0-9A-F](:[0-9A-F]{2}){5}$`).MatchString(b.Address()) {
		t.Fatalf("central addresses %s and %s: want two static random addresses", a.Address(), b.Address())
	}
	if _, body := r.get("/api/bridge"); decode(t, body)["address"] != a.Address() {
		t.Errorf("GET /api/bridge: %s; want address %s", body, a.Address())
	}
	// kept in the state: the same phone after a restart
	before := b.Address()
	b.Close()
	b = phoneB()
	if b.Address() != before {
		t.Errorf("central address after a restart %s; was %s", b.Address(), before)
	}
	ctx := r.ctx
	policy := func(n int) {
		t.Helper()
		if m := r.message(`{"type": "put", "path": "/Comm/Ble/Security/Settings", "value": {"Policy": ` + strconv.Itoa(n) + `}}`); m["response"] != 200.0 {
			t.Fatalf("policy %d: %v", n, m)
		}
	}
	// use moves the device's one connection to phone p
	use := func(p, other *phone.Phone) {
		t.Helper()
		other.Disconnect(ctx, "000123")
		for st, err := other.Device("000123"); err == nil && st.Connected; st, err = other.Device("000123") {
			time.Sleep(5 * time.Millisecond) // until the link's end is through
		}
		p.Scan(ctx)
		if err := p.Connect(ctx, "000123"); err != nil {
			t.Fatalf("connect %s: %v", p.Address(), err)
		}
	}
	bondedTo := func() string {
		t.Helper()
		m := r.message(`{"type": "get", "path": "/Comm/Ble/Security/Bonds"}`)
		b, _ := json.Marshal(m["content"])
		return string(b)
	}
	refused := func(p *phone.Phone, name string) {
		t.Helper()
		if err := p.Pair(ctx, "000123", "", true); err == nil || !strings.Contains(err.Error(), "pairing refused by bonding policy "+name) {
			t.Errorf("bond of %s under %s: %v", p.Address(), name, err)
		}
	}

	// 1 BondingDisabled: neither phone bonds
	policy(1)
	refused(a, "BondingDisabled")
	use(b, a)
	refused(b, "BondingDisabled")

	// 2 BondingOnce: the first bond is the only one
	use(a, b)
	policy(2)
	if err := a.Pair(ctx, "000123", "", true); err != nil {
		t.Fatalf("first bond under BondingOnce: %v", err)
	}
	if got := bondedTo(); !strings.Contains(got, a.Address()) {
		t.Errorf("bonds after A bonded: %s", got)
	}
	use(b, a)
	refused(b, "BondingOnce")

	// 3 BondingSameMac: another address seems to bond, but the device keeps
	// the bond of the first; the first bonds again
	use(a, b)
	policy(3)
	use(b, a)
	if err := b.Pair(ctx, "000123", "", true); err != nil {
		t.Errorf("bond of another address under BondingSameMac: %v (it seems to succeed)", err)
	}
	use(a, b)
	if got := bondedTo(); !strings.Contains(got, a.Address()) || strings.Contains(got, b.Address()) {
		t.Errorf("bonds under BondingSameMac after B: %s; want A's %s only", got, a.Address())
	}
	if err := a.Pair(ctx, "000123", "", true); err != nil {
		t.Errorf("the same address bonds again under BondingSameMac: %v", err)
	}
	b.Disconnect(ctx, "000123")
}

// By default the bridge connects to a device when a client uses it and
// releases the connection when nothing has used it for the idle period.
func TestConnectOnDemand(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	const idle = 150 * time.Millisecond
	r := newRig(t, rigConfig{local: []string{"000123"}, remote: []string{"000124"}, onDemand: true, bridge: phone.Config{Idle: idle}})
	for _, s := range []string{"000123", "000124"} {
		r.waitFor(s, "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	}
	// untouched, the device advertises and has no peers, as a real one
	dev := r.local["000123"]
	peers, _ := dev.Do(&resource.Request{Op: resource.Get, Path: "/Comm/Ble/Peers"})
	adv, _ := dev.Do(&resource.Request{Op: resource.Get, Path: "/Comm/Ble/Adv"})
	if b, _ := json.Marshal(peers.Content); peers.Status != 200 || strings.Contains(string(b), "Address") {
		t.Errorf("peers of an untouched device: %d %s", peers.Status, b)
	}
	if b, _ := json.Marshal(adv.Content); adv.Status != 200 || !strings.Contains(string(b), `"isAdvertising":true`) {
		t.Errorf("advertising of an untouched device: %d %s", adv.Status, b)
	}
	// several devices and none in use: a message names one
	if status, body := r.post("/api/message", `{"type": "get", "path": "/Info"}`); status != 400 || !strings.Contains(body, "no device is connected and the bridge sees several (000123, 000124)") {
		t.Errorf("message naming no device: %d %s", status, body)
	}
	// a message connects to the device it names, and only to it
	if m := r.message(`{"type": "get", "path": "/net/000124/Info"}`); m["response"] != 200.0 {
		t.Fatalf("GET over a connection on demand: %v", m)
	}
	if st, _ := r.b.Device("000123"); st.Connected {
		t.Errorf("a device nobody used is connected: %+v", st)
	}
	// unused, the connection goes after the idle period
	st := r.waitFor("000124", "released", func(s phone.DeviceState) bool { return !s.Connected })
	if !strings.Contains(st.Note, "released: no client used the device for 150ms") || st.AutoConnect {
		t.Errorf("after the idle period: %+v", st)
	}
	// a subscription holds the connection however long it runs
	c := r.dial(nil)
	sub, resp, err := c.Subscribe(r.ctx, "/net/000123/Meas/Acc/13")
	if err != nil || resp.Response != 200 {
		t.Fatalf("subscribe: %+v %v", resp, err)
	}
	for range 3 {
		<-sub.C()
	}
	time.Sleep(3 * idle) // several idle periods with the subscription running
	if st, _ := r.b.Device("000123"); !st.Connected {
		t.Errorf("released while subscribed: %+v", st)
	}
	if _, err := sub.Unsubscribe(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.waitFor("000123", "released after the subscription", func(s phone.DeviceState) bool {
		return !s.Connected && strings.Contains(s.Note, "released")
	})
	// one device left in sight: a message without a device uses it
	r.stop["000124"]()
	for _, err := r.b.Device("000124"); err == nil; _, err = r.b.Device("000124") {
		time.Sleep(10 * time.Millisecond)
	}
	if m := r.message(`{"type": "get", "path": "/Info"}`); m["device"] != "000123" || m["response"] != 200.0 {
		t.Errorf("GET /Info with one device in sight: %v", m)
	}
}

// airLinks returns two programs' links to a NATS server of the test's,
// which the first runs, and what closes them.
func airLinks(t testing.TB) (a, b *air.Link, close func()) {
	t.Helper()
	addr := loopback.FreeAddr(t)
	o := air.Options{Interval: 50 * time.Millisecond, Missed: 200, TokenFile: airtest.TokenFile(t)} // no stream ends on a busy machine
	a, err := air.Local(addr, o)
	if err == nil {
		b, err = air.Local(addr, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	return a, b, func() { b.Close(); a.Close() }
}
