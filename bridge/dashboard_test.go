package bridge_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"senseboard/bridge"
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
	r.waitFor("000123", "advertising", func(s bridge.DeviceState) bool { return s.Advertising && !s.Connected })
	ctx := browse(t, r, browser)

	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	points := func(kind string, atLeast int) {
		t.Helper()
		for {
			n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.senseboard.points.`+kind))
			must("points of "+kind, err)
			if n >= atLeast {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("plot %s: %d points, want %d", kind, n, atLeast)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// the page shows the advertising device; choosing it connects
	must("load", chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(`#devices li[data-serial="000123"]`),
		chromedp.WaitVisible(`#link.ok`)))
	if st, _ := r.b.Device("000123"); st.Connected {
		t.Errorf("connected before anyone chose the device: %+v", st)
	}
	must("choose the device", chromedp.Do(ctx, chromedp.Click(`#devices li[data-serial="000123"]`)))
	r.connected("000123")
	current, err := chromedp.Run(ctx, chromedp.Text(`#current`))
	must("current device", err)
	// the debug console at info, before the ECG starts: the device says so
	must("debug console", chromedp.Do(ctx,
		chromedp.SetValue(`.stream[data-stream="debug"] [data-level]`, "info"),
		chromedp.Click(`.stream[data-stream="debug"] [data-toggle]`)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('.stream[data-stream="debug"] [data-info]').textContent.includes('listening at info')`))
	must("debug console subscribed", err)
	must("start streams", chromedp.Do(ctx,
		chromedp.Click(`.stream[data-stream="ecg"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="acc"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="temp"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="hr"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="states"] [data-toggle]`)))
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
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](q.js))
		must("readout of "+q.name, err)
	}
	console, err := chromedp.Run(ctx, chromedp.Text(`.stream[data-stream="debug"] [data-console]`))
	must("debug console", err)
	if !strings.Contains(console, "ECG: measuring at 250 Hz") {
		t.Errorf("debug console: %q", console)
	}
	// axes with units; heart rate on device time: beats apart by their RR
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.senseboard.streams.find((s) => s.kind === 'acc').plot.axes.map((a) => a.label || '')`))
	must("axis labels", err)
	if !slices.Contains(labels, "device time, s") || !slices.Contains(labels, "m/s²") {
		t.Errorf("accelerometer axes: %q", labels)
	}
	spacing, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const hr = window.senseboard.streams.find((s) => s.kind === 'hr');
		const i = hr.x.length - 1;
		return [hr.x[i] - hr.x[i - 1], hr.ys[1][i] / 1000, hr.x[i]];
	})()`))
	must("heart rate times", err)
	if len(spacing) != 3 || math.Abs(spacing[0]-spacing[1]) > 1e-6 || spacing[1] < 0.25 {
		t.Errorf("heart rate: beats %v s apart, the last RR %v s (at %v s)", spacing[0], spacing[1], spacing[2])
	}
	// lost samples: the count from a gap in the timestamps, and on the
	// ECG at least the samples the device says its front end lost (on a
	// busy machine its 32-sample buffer may overflow; the console shows it
	// once a second, so the page may already count losses the device has
	// not reported yet, and a busy bridge may drop notifications too)
	gaps, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[window.senseboard.lostBetween(1000, 1128, 250),
		window.senseboard.lostBetween(1000, 1000, 250), window.senseboard.lostBetween(undefined, 5, 250)]`))
	must("lost samples", err)
	if !slices.Equal(gaps, []int{32, 0, 0}) {
		t.Errorf("lost samples from gaps: %v, want 32 0 0", gaps)
	}
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
		const said = [...document.querySelector('.stream[data-stream="debug"] [data-console]').textContent.matchAll(/(\d+) samples lost/g)]
			.reduce((n, m) => n + Number(m[1]), 0);
		return said <= window.senseboard.lost.ecg;
	})()`))
	must("ECG samples lost as the device says", err)
	info, err := chromedp.Run(ctx, chromedp.Text(`.stream[data-stream="ecg"] [data-info]`))
	must("ECG info", err)
	if !strings.Contains(info, " lost") {
		t.Errorf("ECG info %q without the lost samples", info)
	}
	must("plots", chromedp.Do(ctx, chromedp.WaitVisible(`.stream[data-stream="ecg"] canvas`), chromedp.Sleep(300*time.Millisecond)))
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must("screenshot", err)
	path := filepath.Join(t.ArtifactDir(), "dashboard.png")
	must("save the screenshot", os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot: %s", path)
	// the device's time from the browser's clock
	must("set time", chromedp.Do(ctx, chromedp.Click(`#settime`)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#settime-info').textContent.startsWith('set to')`))
	must("set time", err)
	if got := r.message(`{"type": "get", "path": "/Time"}`)["content"].(float64); math.Abs(got/1e6-float64(time.Now().Unix())) > 3600 {
		t.Errorf("device time after setting it from the browser: %v µs", got)
	}
	// recordings download from the page
	if status, body := r.post("/api/recordings", `{"paths": ["/Meas/Acc/104"], "name": "fromthepage"}`); status != 200 {
		t.Fatalf("recording: %d %s", status, body)
	}
	for recs := r.b.Recordings(); recs[len(recs)-1].Notifications == 0; recs = r.b.Recordings() {
		time.Sleep(20 * time.Millisecond) // the file comes with the first notification
	}
	r.post("/api/recordings/fromthepage/stop", "")
	must("recordings tab", chromedp.Do(ctx,
		chromedp.Click(`#tabs button[data-tab="recordings"]`),
		chromedp.WaitVisible(`#recordings a[download]`)))
	download, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('#recordings a[download]').href).then((r) => r.status + ' ' + r.headers.get('Content-Disposition')).then(async (h) => h)`, chromedp.EvalAwaitPromise))
	must("download", err)
	if download != "200 attachment; filename=fromthepage-Meas_Acc_104.csv" {
		t.Errorf("download from the page: %q", download)
	}
	shot2, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must("screenshot", err)
	must("save the screenshot", os.WriteFile(filepath.Join(t.ArtifactDir(), "recordings.png"), shot2, 0o644))
	must("form", chromedp.Do(ctx,
		chromedp.Click(`#tabs button[data-tab="resources"]`),
		chromedp.WaitVisible(`#resources li[data-path="/Info"]`),
		chromedp.Click(`#resources li[data-path="/Info"]`),
		chromedp.Click(`#resource form button`),
		chromedp.WaitVisible(`#resource form pre`)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#resource form pre').textContent.includes('response')`))
	must("answer", err)
	response, err := chromedp.Run(ctx, chromedp.Text(`#resource form pre`))
	must("answer", err)
	// a form with several parameters sends every field
	r.message(`{"type": "put", "path": "/Component/Eeprom/0", "value": {"Addr": 300, "Data": {"bytes": [9, 8, 7]}}}`)
	must("EEPROM form", chromedp.Do(ctx,
		chromedp.Click(`#resources li[data-path="/Component/Eeprom/{EepromIndex}"]`),
		chromedp.WaitVisible(`#resource form input`)))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const f = document.querySelector('#resource form');
		const [index, addr, len] = f.querySelectorAll('input');
		index.value = '0'; addr.value = '300'; len.value = '3';
		f.querySelector('button').click();
		return true;
	})()`))
	must("fill the EEPROM form", err)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#resource form pre').textContent.includes('response')`))
	must("EEPROM answer", err)
	eeprom, err := chromedp.Run(ctx, chromedp.Text(`#resource form pre`))
	must("EEPROM answer", err)
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

// chromium finds a Chromium to drive, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
	return ""
}

// browse starts a headless browser for the test; it ends with the test.
func browse(t *testing.T, r *rig, browser string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1400),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(r.ctx, opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() {
		cancel()
		cancelBrowser()
		cancelAlloc()
	})
	return ctx
}
