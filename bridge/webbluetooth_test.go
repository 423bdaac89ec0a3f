package bridge_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"senseboard/bridge/bridgeclient"
	"senseboard/phone"
	"senseboard/resource"
)

// The tests of the bridge's navigator.bluetooth (web/webbluetooth.js) run
// the project's own web app (testdata/webapp), written as for real sensors,
// in headless Chromium, from an origin of its own that the bridge allows.

// gspService is the GSP service's UUID, which apps list in optionalServices.
const gspService = "34802252-7185-4d5d-b431-630e7050e8f0"

// webApp serves the test web app from an origin of its own: / with the
// bridge's script tag, /plain.html without it (for init scripts).
type webApp struct {
	srv    *httptest.Server
	origin string
	bridge atomic.Value // the bridge's address, for the script tag
}

// newWebApp serves the app; host is the name its origin has, localhost or
// 127.0.0.1, the bridge's being 127.0.0.1.
func newWebApp(t *testing.T, host string) *webApp {
	t.Helper()
	a := &webApp{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Base(r.URL.Path)
		if name == "/" || name == "plain.html" {
			name = "index.html"
		}
		b, err := os.ReadFile(filepath.Join("testdata", "webapp", name))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		switch {
		case r.URL.Path == "/plain.html":
			b = []byte(strings.Replace(string(b), `<script src="BRIDGE/webbluetooth.js"></script>`, "", 1))
		case name == "index.html":
			b = []byte(strings.Replace(string(b), "BRIDGE", a.bridge.Load().(string), 1))
		}
		http.ServeContent(w, r, name, time.Time{}, strings.NewReader(string(b)))
	}))
	t.Cleanup(a.srv.Close)
	_, port, _ := net.SplitHostPort(a.srv.Listener.Addr().String())
	a.origin = "http://" + host + ":" + port
	return a
}

// use points the app's script tag at the rig's bridge.
func (a *webApp) use(r *rig) { a.bridge.Store(r.srv.URL) }

// settle is the expression js, a promise, turned into {ok} or {err} with
// the error's name and message.
func settle(js string) string {
	return `(async () => (` + js + `))().then((ok) => ({ok}), (e) => ({err: e.name + ': ' + e.message}))`
}

// await returns what the promise js resolves with; a rejection ends the
// test with the error's name and message.
func await[T any](p *page, js string) T {
	p.t.Helper()
	r := evaluate[struct {
		OK  T       `json:"ok"`
		Err *string `json:"err"`
	}](p, js, settle(js), chromedp.EvalAwaitPromise)
	if r.Err != nil {
		p.t.Fatalf("%s: %s", js, *r.Err)
	}
	return r.OK
}

// rejection returns the name and message of the error the promise js
// rejects with; resolving ends the test.
func rejection(p *page, js string) string {
	p.t.Helper()
	r := evaluate[struct {
		Err *string `json:"err"`
	}](p, js, settle(js), chromedp.EvalAwaitPromise)
	if r.Err == nil {
		p.t.Fatalf("%s resolved; want a rejection", js)
	}
	return *r.Err
}

// consoleLog keeps what a page writes on its console.
type consoleLog struct {
	mu    sync.Mutex
	lines []string
}

func watchConsole(p *page) *consoleLog {
	p.t.Helper()
	c := &consoleLog{}
	p.must("listen to the console", chromedp.Listen(p.ctx, func(ev any) {
		e, ok := ev.(*runtime.EventConsoleAPICalled)
		if !ok {
			return
		}
		var parts []string
		for _, a := range e.Args {
			var s string
			if json.Unmarshal([]byte(a.Value), &s) != nil {
				s = a.Description
			}
			parts = append(parts, s)
		}
		c.mu.Lock()
		c.lines = append(c.lines, string(e.Type)+": "+strings.Join(parts, " "))
		c.mu.Unlock()
	}))
	return c
}

func (c *consoleLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// initScript makes the bridge's script run in each document of the page
// before the app's own, as test tools' init scripts do, with the bridge's
// address set first; docs/webbluetooth.md shows the same.
func initScript(p *page, bridgeURL string) {
	p.t.Helper()
	resp, err := http.Get(bridgeURL + "/webbluetooth.js")
	p.must("get the script", err)
	src, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.must("read the script", err)
	_, err = chromedp.Call(p.ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
		Source: fmt.Sprintf("globalThis.senseboardBridge = %q;\n%s", bridgeURL, src),
	})
	p.must("add the init script", err)
}

// openApp loads the app's page and waits for it.
func openApp(p *page, url string) {
	p.t.Helper()
	p.do("open the app", chromedp.Navigate(url))
	p.poll("the app", `typeof app === 'object' && 'bluetooth' in navigator`)
}

// appStream is what the app's stream() returns.
type appStream struct {
	Status, Unsubscribed int
	Items                []struct {
		Timestamp uint32
		Samples   []int32
		XYZ       []float32
	}
	Parts, Longest int
}

// TestWebBluetoothApp runs the app against a device that looks like a
// current sensor, from a page of another site that the bridge allows and
// that loads the script with a tag: HELLO, GET /Info, ECG and Acc streams,
// the battery and heart rate services, the data logger and a log's fetch,
// each checked against the bridge's JSON API; notifications at MTU 517
// whole; and the app's disconnect ends the device's connection at once.
func TestWebBluetoothApp(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	browser := chromium(t)
	app := newWebApp(t, "localhost") // another site than 127.0.0.1
	r := newRig(t, rigConfig{local: []string{"000123"}, onDemand: true, profile: "movesense", allowOrigins: []string{app.origin},
		bridge: phone.Config{Idle: time.Hour}}) // only a disconnect releases the device
	app.use(r)
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	p := browse(t, r, browser)
	openApp(p, app.origin+"/")
	p.do("connect", chromedp.Click(`#connect`)) // one device matches: no chooser
	p.poll("connected", `document.querySelector('#out').textContent.includes('connected to Movesense 000123')`)
	r.connected("000123")

	info := r.message(`{"type": "get", "device": "000123", "path": "/Info"}`)["content"].(map[string]any)
	var addresses = map[string]string{}
	for _, a := range info["addressInfo"].([]any) {
		addresses[a.(map[string]any)["name"].(string)] = a.(map[string]any)["address"].(string)
	}
	hello := await[struct {
		Version                                   int
		Serial, Product, DFU, AppName, AppVersion string
	}](p, `app.hello()`)
	appInfo := r.message(`{"type": "get", "device": "000123", "path": "/Info/App"}`)["content"].(map[string]any)
	if hello.Version != 1 || hello.Serial != info["serial"] || hello.Product != info["productName"] || hello.DFU != addresses["DFU-BLE"] ||
		hello.AppName != appInfo["name"] || hello.AppVersion == "" {
		t.Errorf("HELLO %+v; /Info %v, /Info/App %v", hello, info, appInfo)
	}
	got := await[map[string]any](p, `app.info()`)
	if got["status"] != 200.0 || got["rest"] != 0.0 {
		t.Errorf("GET /Info over GSP: status %v, %v bytes left", got["status"], got["rest"])
	}
	for k, want := range info {
		if want == nil || k == "brandName" { // null fields are left out
			continue
		}
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("GET /Info over GSP: %s %v, the JSON API says %v", k, got[k], want)
		}
	}

	level := r.message(`{"type": "get", "device": "000123", "path": "/System/Energy/Level"}`)["content"].(float64)
	if b := await[float64](p, `app.battery()`); b != level {
		t.Errorf("Battery Level %v, /System/Energy/Level %v", b, level)
	}
	if g := await[[]float64](p, `app.get('/System/Energy/Level').then((r) => [r.status, r.body[0]])`); !slices.Equal(g, []float64{200, level}) {
		t.Errorf("GET /System/Energy/Level over GSP: %v, the JSON API %v", g, level)
	}

	// ECG and Acc over GSP and, at the same time, over the JSON API
	c := r.dial(nil)
	jsonECG, _, err := c.SubscribeMessage(r.ctx, bridgeclient.Message{Path: "/Meas/ECG/125", Device: "000123"})
	if err != nil {
		t.Fatal(err)
	}
	jsonAcc, _, err := c.SubscribeMessage(r.ctx, bridgeclient.Message{Path: "/Meas/Acc/13", Device: "000123"})
	if err != nil {
		t.Fatal(err)
	}
	streams := await[[]appStream](p, `Promise.all([app.stream('/Meas/ECG/125', 8), app.stream('/Meas/Acc/13', 4)])`)
	for i, s := range streams {
		if s.Status != 200 || s.Unsubscribed != 200 || s.Parts != 0 {
			t.Errorf("stream %d: %+v", i, s)
		}
	}
	ecg := map[uint32][]int32{}
	collect(t, jsonECG, streams[0].Items[len(streams[0].Items)-1].Timestamp, func(m json.RawMessage) uint32 {
		var n struct {
			Timestamp uint32
			Samples   []int32
		}
		json.Unmarshal(m, &n)
		ecg[n.Timestamp] = n.Samples
		return n.Timestamp
	})
	for _, it := range streams[0].Items {
		if want, ok := ecg[it.Timestamp]; !ok || !slices.Equal(it.Samples, want) {
			t.Errorf("ECG at %d: %v over GSP, %v over the JSON API", it.Timestamp, it.Samples, want)
		}
	}
	acc := map[uint32][]float32{}
	collect(t, jsonAcc, streams[1].Items[len(streams[1].Items)-1].Timestamp, func(m json.RawMessage) uint32 {
		var n struct {
			Timestamp uint32
			ArrayAcc  []struct{ X, Y, Z float32 }
		}
		json.Unmarshal(m, &n)
		for _, s := range n.ArrayAcc {
			acc[n.Timestamp] = append(acc[n.Timestamp], s.X, s.Y, s.Z)
		}
		return n.Timestamp
	})
	for _, it := range streams[1].Items {
		if want, ok := acc[it.Timestamp]; !ok || !slices.Equal(it.XYZ, want) {
			t.Errorf("Acc at %d: %v over GSP, %v over the JSON API", it.Timestamp, it.XYZ, want)
		}
	}
	c.Close()

	// at Chrome's MTU of 517, IMU9 at 104 Hz comes whole (at 247 in parts)
	imu := await[appStream](p, `app.stream('/Meas/IMU9/104', 3)`)
	if imu.Status != 200 || imu.Parts != 0 || imu.Longest <= 247-3 || imu.Longest > 517-3 {
		t.Errorf("IMU9 at 104 Hz: %d parts, the longest notification %d bytes; want whole ones of 245..514 bytes", imu.Parts, imu.Longest)
	}

	// the heart rate service notifies what the device measures, as a
	// current sensor's firmware feeds it (modules.hrsFeed): each
	// measurement has the bpm and RR interval of a /Meas/HR notification
	hc := r.dial(nil)
	jsonHR, _, err := hc.SubscribeMessage(r.ctx, bridgeclient.Message{Path: "/Meas/HR", Device: "000123"})
	if err != nil {
		t.Fatal(err)
	}
	evaluate[bool](p, "heart rate", `window.hr = app.heartRate(3), true`)
	p.poll("three heart rates", `app.heartRates.length >= 3`)
	hr := await[[]struct {
		BPM int
		RR  []float64
	}](p, `hr`)
	measured := map[int]float32{} // average by RR interval, ms
	// find returns the average measured with an interval of rr ms, which
	// the service's units of 1/1024 s leave within a millisecond
	find := func(rr int) (float32, bool) {
		for _, v := range []int{rr, rr + 1, rr - 1} {
			if avg, ok := measured[v]; ok {
				return avg, true
			}
		}
		return 0, false
	}
	for _, m := range hr {
		if len(m.RR) != 1 {
			t.Fatalf("heart rate service: %+v; want one RR interval a beat", hr)
		}
		guard := time.After(stepGuard)
		for {
			if avg, ok := find(int(math.Round(m.RR[0]))); ok {
				if int(avg+0.5) != m.BPM {
					t.Errorf("heart rate service: %d bpm, RR %.0f ms; /Meas/HR measured %.1f bpm then", m.BPM, m.RR[0], avg)
				}
				break
			}
			select {
			case n := <-jsonHR.C():
				var h struct {
					Average float32
					RRData  []int `json:"rrData"`
				}
				json.Unmarshal(n.Content, &h)
				for _, v := range h.RRData {
					measured[v] = h.Average
				}
			case <-guard:
				t.Fatalf("heart rate service: RR %.0f ms, which /Meas/HR did not measure (%v)", m.RR[0], measured)
			}
		}
	}
	hc.Close()

	// the data logger, and the log fetched over GSP is the one the bridge downloads
	log := await[struct {
		Config, Start, Stop, Fetched, ID, Size int
		Bytes                                  string
	}](p, `app.logger(['/Meas/Acc/13'], 1200)`)
	if log.Config != 200 || log.Start != 200 || log.Stop != 200 || log.Fetched != 200 || log.ID < 1 || log.Size < 100 {
		t.Fatalf("data logger over GSP: %+v", log)
	}
	fetched, _ := base64.StdEncoding.DecodeString(log.Bytes)
	status, body := r.get(fmt.Sprintf("/api/devices/000123/logs/%d?format=sbem", log.ID))
	if status != 200 || body != string(fetched) {
		t.Errorf("log %d: %d bytes fetched over GSP, the bridge's download %d %d bytes", log.ID, len(fetched), status, len(body))
	}

	// the app disconnects: the device's connection ends at once, and the
	// device is granted to the page from then on
	evaluate[bool](p, "disconnect", `app.disconnect(), true`)
	if n := evaluate[int](p, "disconnect events", `app.disconnects`); n != 1 {
		t.Errorf("gattserverdisconnected %d times after gatt.disconnect()", n)
	}
	st := r.waitFor("000123", "advertising after the app's disconnect", func(s phone.DeviceState) bool { return s.Advertising && !s.Connected })
	if !strings.Contains(st.Note, "GSP client") {
		t.Errorf("the note after the app's disconnect: %q", st.Note)
	}
	if names := await[[]string](p, `navigator.bluetooth.getDevices().then((ds) => ds.map((d) => d.name))`); !slices.Equal(names, []string{"Movesense 000123"}) {
		t.Errorf("getDevices: %q", names)
	}
}

// collect reads notifications of a JSON API subscription until one at or
// after the timestamp until; add keeps one and returns its timestamp.
func collect(t *testing.T, s *bridgeclient.Subscription, until uint32, add func(json.RawMessage) uint32) {
	t.Helper()
	guard := time.After(stepGuard)
	for {
		select {
		case n := <-s.C():
			if add(n.Content) >= until {
				return
			}
		case <-guard:
			t.Fatalf("%s: no notification at %d within the guard", s.ID(), until)
		}
	}
}

// TestWebBluetoothDisconnects: the device ends the connection, the app
// does, and a device leaves the air; the page hears each as the browser
// says it, and the script comes as an init script.
func TestWebBluetoothDisconnects(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	app := newWebApp(t, "127.0.0.1") // another port: the same site, another origin
	r := newRig(t, rigConfig{local: []string{"000123"}, remote: []string{"000200"}, onDemand: true, profile: "movesense",
		allowOrigins: []string{app.origin}, bridge: phone.Config{Idle: time.Hour}})
	app.use(r)
	r.waitFor("000200", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	p := browse(t, r, browser)
	initScript(p, r.srv.URL)
	console := watchConsole(p)
	openApp(p, app.origin+"/plain.html")
	connect := func(serial string) {
		t.Helper()
		await[any](p, `app.connect({filters: [{name: 'Movesense `+serial+`'}], optionalServices: ['`+gspService+`', 'battery_service']})`)
		if s := await[string](p, `app.hello().then((h) => h.serial)`); s != serial {
			t.Fatalf("HELLO of %s: serial %s", serial, s)
		}
	}

	// the device ends the connection
	connect("000123")
	st := r.connected("000123")
	r.local["000123"].Do(&resource.Request{Op: resource.Delete, Path: "/Comm/Ble/Peers/" + itoa(*st.Handle)})
	p.poll("the device's disconnect", `app.disconnects === 1 && !app.device.gatt.connected`)
	for _, js := range []string{`app.battery()`, `app.command.writeValueWithResponse(new Uint8Array([0, 1]))`, `app.data.startNotifications()`} {
		if err := rejection(p, js); !strings.HasPrefix(err, "NetworkError: GATT Server is disconnected.") {
			t.Errorf("%s after the device's disconnect: %s", js, err)
		}
	}
	if !strings.Contains(console.String(), `"Movesense 000123" disconnected: device 000123: disconnected: the device dropped the connection (DELETE /Comm/Ble/Peers/`) {
		t.Errorf("console after the device's disconnect:\n%s", console)
	}
	// connecting again: the same device, new services
	evaluate[bool](p, "keep the old characteristic", `window.old = app.command, true`)
	await[any](p, `app.open()`)
	if s := await[string](p, `app.hello().then((h) => h.serial)`); s != "000123" {
		t.Errorf("HELLO after connecting again: %s", s)
	}
	if err := rejection(p, `old.writeValueWithResponse(new Uint8Array([0, 1]))`); err != "InvalidStateError: GATT Characteristic no longer exists." {
		t.Errorf("a characteristic of the earlier connection: %s", err)
	}

	// the app ends it: at once, the device advertises again
	evaluate[bool](p, "disconnect", `app.disconnect(), true`)
	if n := evaluate[int](p, "disconnect events", `app.disconnects`); n != 2 {
		t.Errorf("gattserverdisconnected %d times; want 2", n)
	}
	if err := rejection(p, `app.get('/Info')`); !strings.HasPrefix(err, "NetworkError") {
		t.Errorf("a command after the app's disconnect: %s", err)
	}
	r.waitFor("000123", "advertising after the app's disconnect", func(s phone.DeviceState) bool { return s.Advertising && !s.Connected })

	// a device of another program leaves the air
	connect("000200")
	r.stop["000200"]()
	p.poll("the device that left", `app.disconnects === 3 && !app.device.gatt.connected`)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := r.b.Device("000200"); errors.Is(err, phone.ErrUnknownDevice) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bridge still sees a device that left the air")
		}
	}
	if err := rejection(p, `app.connect({filters: [{name: 'Movesense 000200'}]})`); !strings.HasPrefix(err, "NotFoundError") {
		t.Errorf("requestDevice of a device that left the air: %s", err)
	}
	if err := rejection(p, `app.open()`); !strings.HasPrefix(err, "NetworkError") {
		t.Errorf("gatt.connect() of a device that left the air: %s", err)
	}
	if c := console.String(); !strings.Contains(c, `"Movesense 000200" disconnected: device 000200`) ||
		!strings.Contains(c, `no device matches {"filters":[{"name":"Movesense 000200"}]}`) || !strings.Contains(c, `"Movesense 000123" (device 000123, advertising)`) {
		t.Errorf("console after the device left the air:\n%s", c)
	}
}

// newTab opens another tab in the browser context of p, as a user opens a
// second tab of the same app.
func newTab(t *testing.T, p *page) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(p.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return &page{t: t, ctx: ctx}
}

// TestWebBluetoothTwoTabs: two tabs of one app stream from two devices at
// once; a device one tab holds cannot be taken by the other until the first
// lets it go.
func TestWebBluetoothTwoTabs(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	app := newWebApp(t, "127.0.0.1")
	r := newRig(t, rigConfig{local: []string{"000123", "000124"}, onDemand: true, profile: "movesense", allowOrigins: []string{app.origin}})
	app.use(r)
	r.waitFor("000124", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	a := browse(t, r, browser)
	b := newTab(t, a)
	for i, p := range []*page{a, b} {
		openApp(p, app.origin+"/")
		serial := fmt.Sprintf("00012%d", 3+i)
		await[any](p, `app.connect({filters: [{name: 'Movesense `+serial+`'}], optionalServices: ['`+gspService+`']})`)
		evaluate[bool](p, "start a stream", `window.acc = app.stream('/Meas/Acc/13', 3), true`)
	}
	for i, p := range []*page{a, b} {
		if s := await[appStream](p, `acc`); s.Status != 200 || len(s.Items) != 3 {
			t.Errorf("tab %d: %+v", i, s)
		}
	}
	// the second tab sees the first one's grant, but not the device's GSP
	take := `navigator.bluetooth.getDevices().then((ds) => ds.find((d) => d.name === 'Movesense 000123')).then((d) => d.gatt.connect())`
	if err := rejection(b, take); !strings.HasPrefix(err, "NetworkError") || !strings.Contains(err, "device 000123 has a GSP client already") {
		t.Errorf("taking the other tab's device: %s", err)
	}
	evaluate[bool](a, "disconnect", `app.disconnect(), true`)
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	if s := await[string](b, take+`.then(async (server) => { app.device = server.device; await app.open(); return (await app.hello()).serial; })`); s != "000123" {
		t.Errorf("the second tab after the first let go: HELLO of %s", s)
	}
}

// TestWebBluetoothChooser: several devices that match show a chooser over
// the page, where one is picked or none; none that matches rejects at once
// and says why on the console; options the browser refuses are refused;
// services not asked for are not given; and a page of an origin the bridge
// does not allow reaches nothing.
func TestWebBluetoothChooser(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	app := newWebApp(t, "127.0.0.1")
	r := newRig(t, rigConfig{local: []string{"000123", "000124", "000125"}, onDemand: true, profile: "movesense", allowOrigins: []string{app.origin}})
	app.use(r)
	for _, s := range []string{"000123", "000124", "000125"} {
		r.waitFor(s, "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	}
	p := browse(t, r, browser)
	console := watchConsole(p)
	openApp(p, app.origin+"/")
	const chooser = `document.querySelector('#senseboard-chooser')`
	ask := func(options string) {
		t.Helper()
		evaluate[bool](p, "request a device", `window.picked = navigator.bluetooth.requestDevice(`+options+`), true`)
		p.poll("the chooser", `!!`+chooser+` && `+chooser+`.shadowRoot.querySelectorAll('li button').length === 3`)
	}
	ask(`{filters: [{namePrefix: 'Movesense'}]}`)
	evaluate[bool](p, "pick a device", `(() => {
		const root = `+chooser+`.shadowRoot;
		root.querySelector('li button[data-serial="000124"]').click();
		root.querySelector('button.pair').click();
		return true;
	})()`)
	if name := await[string](p, `picked.then((d) => d.name)`); name != "Movesense 000124" {
		t.Errorf("picked %q", name)
	}
	if evaluate[bool](p, "the chooser's end", `!!`+chooser) {
		t.Error("the chooser stays after a device was picked")
	}
	ask(`{acceptAllDevices: true}`)
	evaluate[bool](p, "cancel", chooser+`.shadowRoot.querySelector('button.cancel').click(), true`)
	if err := rejection(p, `picked`); err != "NotFoundError: User cancelled the requestDevice() chooser." {
		t.Errorf("a closed chooser: %s", err)
	}

	// none matches: at once, and the console says why
	if err := rejection(p, `navigator.bluetooth.requestDevice({filters: [{namePrefix: 'Polar'}, {services: ['heart_rate'], name: 'H10'}]})`); !strings.HasPrefix(err, "NotFoundError") {
		t.Errorf("no device matches: %s", err)
	}
	if c := console.String(); !strings.Contains(c, `no device matches {"filters":[{"namePrefix":"Polar"},{"services":["heart_rate"],"name":"H10"}]}`) ||
		!strings.Contains(c, `"Movesense 000125" (device 000125, advertising), services 0000fdf3-0000-1000-8000-00805f9b34fb, 0000180d-0000-1000-8000-00805f9b34fb`) ||
		!strings.Contains(c, "--profile movesense") {
		t.Errorf("console when no device matches:\n%s", c)
	}

	// what the browser refuses
	for _, tt := range []struct{ options, err string }{
		{`{}`, "TypeError: Failed to execute 'requestDevice' on 'Bluetooth': Either 'filters' should be present or 'acceptAllDevices' should be true, but not both."},
		{`{acceptAllDevices: true, filters: [{name: 'x'}]}`, "TypeError: Failed to execute 'requestDevice' on 'Bluetooth': Cannot set both 'filters' and 'acceptAllDevices'."},
		{`{filters: []}`, "TypeError: Failed to execute 'requestDevice' on 'Bluetooth': 'filters' member must be non-empty to find any devices."},
		{`{filters: [{}]}`, "TypeError: A filter must restrict the devices in some way."},
		{`{filters: [{namePrefix: ''}]}`, "TypeError: 'namePrefix', if present, must be non-empty."},
		{`{filters: [{services: ['no_such_service']}]}`, "TypeError: Failed to execute: Invalid Service name: 'no_such_service'."},
	} {
		if err := rejection(p, `navigator.bluetooth.requestDevice(`+tt.options+`)`); !strings.HasPrefix(err, tt.err) {
			t.Errorf("requestDevice(%s): %s; want %s", tt.options, err, tt.err)
		}
	}
	// only the services the page asked for, by filters or optionalServices
	services := await[[]string](p, `(async () => {
		const d = await navigator.bluetooth.requestDevice({filters: [{name: 'Movesense 000125', services: [0xfdf3]}], optionalServices: ['`+gspService+`']});
		const server = await d.gatt.connect();
		const out = (await server.getPrimaryServices()).map((s) => s.uuid);
		out.push(await server.getPrimaryService('battery_service').then(() => 'battery', (e) => e.name));
		out.push(await server.getPrimaryService(0xfdf3).then(() => 'fdf3', (e) => e.name));
		d.gatt.disconnect();
		return out;
	})()`)
	if !slices.Equal(services, []string{gspService, "SecurityError", "NotFoundError"}) {
		t.Errorf("services of a page that asked for GSP: %q", services)
	}

	// a page of another origin, which the bridge does not allow
	other := newWebApp(t, "127.0.0.1")
	other.use(r)
	q := browse(t, r, browser)
	refused := watchConsole(q)
	openApp(q, other.origin+"/")
	if err := rejection(q, `navigator.bluetooth.requestDevice({acceptAllDevices: true})`); !strings.HasPrefix(err, "NotFoundError: Bluetooth adapter not available.") {
		t.Errorf("a page of an origin the bridge does not allow: %s", err)
	}
	if c := refused.String(); !strings.Contains(c, "refuses pages of "+other.origin+" (start it with --allow-origin "+other.origin+")") {
		t.Errorf("console of a page the bridge refuses:\n%s", c)
	}
	ws := strings.Replace(r.srv.URL, "http:", "ws:", 1)
	for js, want := range map[string]string{
		`fetch('` + r.srv.URL + `/api/devices').then(() => 'read', (e) => e.name)`:                                                                                                         "TypeError",
		`new Promise((resolve) => { const ws = new WebSocket('` + ws + `/api/devices/000123/gsp'); ws.onopen = () => resolve('open'); ws.onclose = (e) => resolve('closed ' + e.code); })`: "closed 1006",
	} {
		if got := await[string](q, js); got != want {
			t.Errorf("%s: %s; want %s", js, got, want)
		}
	}
	if st, _ := r.b.Device("000123"); st.Connected {
		t.Errorf("a refused page connected the device: %+v", st)
	}
}
