package bridge_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard/phone"

	"github.com/chromedp/chromedp"
)

// TestDashboard drives the dashboard in headless Chromium: the page loads,
// the device appears, streams start and their plots receive points, and a
// form generated from the definitions reads a resource; readouts, the debug
// console, lost samples, setting the time and downloading recordings work.
// The screenshots are kept with go test -artifacts (see docs/development.md).
func TestDashboard(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	browser := chromium(t)
	r := newRig(t, rigConfig{local: []string{"000123"}, onDemand: true})
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising && !s.Connected })
	p := browse(t, r, browser)

	points := func(kind string, atLeast int) {
		t.Helper()
		guard := time.After(stepGuard)
		for {
			n := evaluate[int](p, "points of "+kind, `window.senseboard.points.`+kind)
			if n >= atLeast {
				return
			}
			select {
			case <-guard:
				t.Fatalf("plot %s: %d points, want %d", kind, n, atLeast)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// the page shows the advertising device; choosing it connects
	p.do("load",
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(`#devices li[data-serial="000123"]`),
		chromedp.WaitVisible(`#link.ok`))
	if st, _ := r.b.Device("000123"); st.Connected {
		t.Errorf("connected before anyone chose the device: %+v", st)
	}
	p.do("choose the device", chromedp.Click(`#devices li[data-serial="000123"]`))
	r.connected("000123")
	current := p.text(`#current`)
	// the debug console at info, before the ECG starts: the device says so
	p.do("debug console",
		chromedp.SetValue(`.stream[data-stream="debug"] [data-level]`, "info"),
		chromedp.Click(`.stream[data-stream="debug"] [data-toggle]`))
	p.poll("debug console subscribed", `document.querySelector('.stream[data-stream="debug"] [data-info]').textContent.includes('listening at info')`)
	p.do("start streams",
		chromedp.Click(`.stream[data-stream="ecg"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="acc"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="temp"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="hr"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="states"] [data-toggle]`))
	points("ecg", 500)
	points("acc", 100)
	points("hr", 2)
	points("debug", 1)
	points("states", 0)
	// readouts next to the plots
	for _, q := range []struct{ name, js string }{
		{"heart rate", `/^\d+ bpm$/.test(document.querySelector('[data-readout="hr"]').textContent)`},
		{"RR", `/^\d+ ms$/.test(document.querySelector('[data-readout="rr"]').textContent)`},
		{"temperature", `/^\d+\.\d °C$/.test(document.querySelector('[data-readout="temp"]').textContent)`},
		{"battery", `/^(ok|low|\d+ %)$/.test(document.querySelector('[data-readout="battery"]').textContent)`},
		{"states", `document.querySelector('[data-readout="states"]').textContent !== '—'`},
	} {
		p.poll("readout of "+q.name, q.js)
	}
	console := p.text(`.stream[data-stream="debug"] [data-console]`)
	if !strings.Contains(console, "ECG: measuring at 250 Hz") {
		t.Errorf("debug console: %q", console)
	}
	// axes with units; heart rate on device time: beats apart by their RR
	labels := evaluate[[]string](p, "axis labels", `window.senseboard.streams.find((s) => s.kind === 'acc').plot.axes.map((a) => a.label || '')`)
	if !slices.Contains(labels, "device time, s") || !slices.Contains(labels, "m/s²") {
		t.Errorf("accelerometer axes: %q", labels)
	}
	spacing := evaluate[[]float64](p, "heart rate times", `(() => {
		const hr = window.senseboard.streams.find((s) => s.kind === 'hr');
		const i = hr.x.length - 1;
		return [hr.x[i] - hr.x[i - 1], hr.ys[1][i] / 1000, hr.x[i]];
	})()`)
	if len(spacing) != 3 || math.Abs(spacing[0]-spacing[1]) > 1e-6 || spacing[1] < 0.25 {
		t.Errorf("heart rate: beats %v s apart, the last RR %v s (at %v s)", spacing[0], spacing[1], spacing[2])
	}
	// lost samples: the count from a gap in the timestamps, and on the
	// ECG at least the samples the device says its front end lost (on a
	// busy machine its 32-sample buffer may overflow; the console shows it
	// once a second, so the page may already count losses the device has
	// not reported yet, and a busy bridge may drop notifications too)
	gaps := evaluate[[]int](p, "lost samples", `[window.senseboard.lostBetween(1000, 1128, 250),
		window.senseboard.lostBetween(1000, 1000, 250), window.senseboard.lostBetween(undefined, 5, 250)]`)
	if !slices.Equal(gaps, []int{32, 0, 0}) {
		t.Errorf("lost samples from gaps: %v, want 32 0 0", gaps)
	}
	p.poll("ECG samples lost as the device says", `(() => {
		const said = [...document.querySelector('.stream[data-stream="debug"] [data-console]').textContent.matchAll(/(\d+) samples lost/g)]
			.reduce((n, m) => n + Number(m[1]), 0);
		return said <= window.senseboard.lost.ecg;
	})()`)
	info := p.text(`.stream[data-stream="ecg"] [data-info]`)
	if !strings.Contains(info, " lost") {
		t.Errorf("ECG info %q without the lost samples", info)
	}
	p.do("plots", chromedp.WaitVisible(`.stream[data-stream="ecg"] canvas`), chromedp.Sleep(300*time.Millisecond))
	shot := p.shot("dashboard.png")
	// the device's time from the browser's clock
	p.do("set time", chromedp.Click(`#settime`))
	p.poll("set time", `document.querySelector('#settime-info').textContent.startsWith('set to')`)
	if got := r.message(`{"type": "get", "path": "/Time"}`)["content"].(float64); math.Abs(got/1e6-float64(time.Now().Unix())) > 3600 {
		t.Errorf("device time after setting it from the browser: %v µs", got)
	}
	// recordings download from the page
	if status, body := r.post("/api/recordings", `{"paths": ["/Meas/Acc/104"], "name": "fromthepage"}`); status != 200 {
		t.Fatalf("recording: %d %s", status, body)
	}
	for recs := r.recordings(); recs[len(recs)-1].Notifications == 0; recs = r.recordings() {
		time.Sleep(20 * time.Millisecond) // the file comes with the first notification
	}
	r.post("/api/recordings/fromthepage/stop", "")
	p.do("recordings tab",
		chromedp.Click(`#tabs button[data-tab="recordings"]`),
		chromedp.WaitVisible(`#recordings a[download]`))
	download := evaluate[string](p, "download", `fetch(document.querySelector('#recordings a[download]').href).then((r) => r.status + ' ' + r.headers.get('Content-Disposition')).then(async (h) => h)`, chromedp.EvalAwaitPromise)
	if download != "200 attachment; filename=fromthepage-Meas_Acc_104.csv" {
		t.Errorf("download from the page: %q", download)
	}
	p.shot("recordings.png")
	p.do("form",
		chromedp.Click(`#tabs button[data-tab="resources"]`),
		chromedp.WaitVisible(`#resources li[data-path="/Info"]`),
		chromedp.Click(`#resources li[data-path="/Info"]`),
		chromedp.Click(`#resource form button`),
		chromedp.WaitVisible(`#resource form pre`))
	p.poll("answer", `document.querySelector('#resource form pre').textContent.includes('response')`)
	response := p.text(`#resource form pre`)
	// a form with several parameters sends every field
	r.message(`{"type": "put", "path": "/Component/Eeprom/0", "value": {"Addr": 300, "Data": {"bytes": [9, 8, 7]}}}`)
	p.do("EEPROM form",
		chromedp.Click(`#resources li[data-path="/Component/Eeprom/{EepromIndex}"]`),
		chromedp.WaitVisible(`#resource form input`))
	evaluate[bool](p, "fill the EEPROM form", `(() => {
		const f = document.querySelector('#resource form');
		const [index, addr, len] = f.querySelectorAll('input');
		index.value = '0'; addr.value = '300'; len.value = '3';
		f.querySelector('button').click();
		return true;
	})()`)
	p.poll("EEPROM answer", `document.querySelector('#resource form pre').textContent.includes('response')`)
	eeprom := p.text(`#resource form pre`)
	if !strings.Contains(strings.Join(strings.Fields(eeprom), ""), `"bytes":[9,8,7]`) {
		t.Errorf("GET /Component/Eeprom/0 from the form: %s", eeprom)
	}
	if current != "Device 000123" {
		t.Errorf("current device %q", current)
	}
	if !strings.Contains(response, `"responsestring": "HTTP_CODE_OK"`) || !strings.Contains(response, `"serial": "000123"`) {
		t.Errorf("GET /Info from the form: %s", response)
	}
	if len(shot) < 10000 {
		t.Errorf("screenshot of %d bytes", len(shot))
	}
}
