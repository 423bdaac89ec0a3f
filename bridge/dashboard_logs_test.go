package bridge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"senseboard/phone"

	"github.com/chromedp/chromedp"
)

// TestDashboardLogs drives the Logs tab in headless Chromium: start logging
// with a configuration of paths, a refusal with its reason, stop, the log
// in the list with its four downloads, its preview, erasing every log after
// a confirmation; and a recording's EDF+ download on the Recordings tab.
// The screenshots are kept with go test -artifacts.
func TestDashboardLogs(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	p := browse(t, r, chromium(t))
	openLogs(p, r)

	// a path that cannot be logged: the device's reason shows
	p.do("bad paths",
		chromedp.SetValue(`#logging textarea[name=paths]`, "/No/Such"),
		chromedp.Click(`#logging-start`))
	p.poll("the refusal", `document.querySelector('#logs-info').textContent.includes('cannot be logged')`)

	// start, and starting again is refused as the device says
	p.do("start",
		chromedp.SetValue(`#logging textarea[name=paths]`, "/Meas/Acc/52\n/Meas/ECG/125/mV\n/Meas/HR\n/Time/Detailed"),
		chromedp.Click(`#logging-start`))
	p.poll("logging", `document.querySelector('#logs-state').dataset.state === 'LOGGING'`)
	if s := p.text(`#logs-state`); !strings.Contains(s, "/Meas/Acc/52, /Meas/ECG/125/mV, /Meas/HR, /Time/Detailed") {
		t.Errorf("state line %q without the paths", s)
	}
	p.do("start again", chromedp.Click(`#logging-start`))
	p.poll("the second start's refusal", `document.querySelector('#logs-info').textContent.includes('already logging')`)
	for i := 0; ; i++ {
		if es := r.local["000123"].Logbook.Storage().Entries(); len(es) == 1 && es[0].Size > 4000 {
			break
		}
		if i == 600 {
			t.Fatal("the log did not grow")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.do("stop", chromedp.Click(`#logging-stop`))
	p.poll("stopped", `document.querySelector('#logs-state').dataset.state === 'READY' && !!document.querySelector('#logs tr[data-log="1"]')`)

	// every download of the log
	for _, f := range []string{"sbem", "csv", "json", "edf"} {
		got := evaluate[string](p, "download "+f, `fetch(document.querySelector('#logs tr[data-log="1"] a[data-format="`+f+`"]').href).then(async (r) => r.status + ' ' + (r.ok ? r.headers.get('Content-Disposition') : await r.text()))`, chromedp.EvalAwaitPromise)
		if want := "200 attachment; filename=000123-log1." + f; got != want {
			t.Errorf("download of %s: %q, want %q", f, got, want)
		}
	}

	// the preview decodes it
	p.do("preview", chromedp.Click(`#logs button[data-preview="1"]`))
	p.poll("preview", `!!document.querySelector('#log-preview tr[data-stream="MeasAcc"]') && !!document.querySelector('#log-preview pre[data-head]')`)
	acc := p.text(`#log-preview tr[data-stream="MeasAcc"]`)
	if !strings.Contains(acc, "ArrayAcc.x") || !strings.Contains(p.text(`#log-preview tr[data-stream="MeasECGmV"]`), "Samples") {
		t.Errorf("preview rows: %q", acc)
	}
	p.shot("logs.png")

	// one log: its button asks first; a log made by another client shows
	// on Refresh (the tab reads by itself only while logging)
	r.post("/api/devices/000123/logging", "")
	r.post("/api/devices/000123/logging/stop", "")
	p.do("refresh", chromedp.Click(`#logs-refresh`))
	p.poll("log #2", `!!document.querySelector('#logs tr[data-log="2"]')`)
	p.do("delete #2", chromedp.Click(`#logs button[data-delete="2"]`))
	if s := p.text(`#logs button[data-delete="2"]`); s != "Really delete #2?" {
		t.Errorf("the delete button says %q after one click", s)
	}
	p.do("delete #2, confirmed", chromedp.Click(`#logs button[data-delete="2"]`))
	p.poll("#2 erased", `!document.querySelector('#logs tr[data-log="2"]') && !!document.querySelector('#logs tr[data-log="1"]')`)

	// erasing asks first; Cancel keeps the logs
	p.do("delete, cancelled", chromedp.Click(`#logs-delete`), chromedp.WaitVisible(`#logs-confirm`), chromedp.Click(`#logs-delete-no`))
	if es := r.local["000123"].Logbook.Storage().Entries(); len(es) != 1 {
		t.Fatalf("after a cancelled delete: %+v", es)
	}
	p.do("delete", chromedp.Click(`#logs-delete`), chromedp.WaitVisible(`#logs-confirm`))
	if s := p.text(`#logs-confirm`); !strings.Contains(s, "Erase the log of device 000123?") {
		t.Errorf("confirmation %q", s)
	}
	p.do("delete, confirmed", chromedp.Click(`#logs-delete-yes`))
	p.poll("erased", `!document.querySelector('#logs tr[data-log]') && document.querySelector('#logs-info').textContent.includes('erased')`)
	if es := r.local["000123"].Logbook.Storage().Entries(); len(es) != 0 {
		t.Errorf("after deleting from the page: %+v", es)
	}

	// a recording's EDF+ from the Recordings tab
	if status, body := r.post("/api/recordings", `{"paths": ["/Meas/Acc/104"], "name": "edfpage"}`); status != 200 {
		t.Fatalf("recording: %d %s", status, body)
	}
	for recs := r.recordings(); recs[len(recs)-1].Notifications < 5; recs = r.recordings() {
		time.Sleep(20 * time.Millisecond)
	}
	r.post("/api/recordings/edfpage/stop", "")
	p.do("recordings tab",
		chromedp.Click(`#tabs button[data-tab="recordings"]`),
		chromedp.WaitVisible(`#recordings a[data-edf]`))
	got := evaluate[string](p, "EDF+ of the recording", `fetch(document.querySelector('#recordings a[data-edf]').href).then((r) => r.status + ' ' + r.headers.get('Content-Disposition'))`, chromedp.EvalAwaitPromise)
	if got != "200 attachment; filename=edfpage.edf" {
		t.Errorf("EDF+ download from the page: %q", got)
	}
	p.shot("recordings-edf.png")
}

// With the Logs tab open on a device nothing else uses, the bridge still
// releases the connection after its idle period, and the tab does not
// connect again by itself: rounds of its timer pass without a use. Refresh
// is a use: it connects and reads again. The idle period is short, so the
// bridge may release the device between any two of the tab's reads, as
// it may on a busy machine with any idle period: a read that comes while
// the bridge releases the device connects again (TestUseDuringARelease).
func TestDashboardLogsLetsTheDeviceGo(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	browser := chromium(t)
	r := newRig(t, rigConfig{local: []string{"000123"}, onDemand: true, bridge: phone.Config{Idle: 200 * time.Millisecond}})
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	p := browse(t, r, browser)
	openLogs(p, r)
	released := func(s phone.DeviceState) bool { return !s.Connected && strings.Contains(s.Note, "released") }
	r.waitFor("000123", "released with the Logs tab open", released)
	ticks := evaluate[int](p, "the tab's timer", `window.senseboard.logs.ticks`)
	p.poll("two rounds of the tab's timer", fmt.Sprintf(`window.senseboard.logs.ticks >= %d`, ticks+2))
	if st, err := r.b.Device("000123"); err != nil || !released(st) {
		t.Errorf("the Logs tab used the device by itself after its release: %+v %v", st, err)
	}
	evaluate[string](p, "forget the state", `document.querySelector('#logs-state').dataset.state = ''`)
	p.do("refresh", chromedp.Click(`#logs-refresh`))
	logsState(p, "the state read again", "READY")
}

// openLogs loads the dashboard, selects device 000123, opens its Logs tab
// and waits until the tab shows the data logger ready.
func openLogs(p *page, r *rig) {
	p.t.Helper()
	p.do("load",
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(`#devices li[data-serial="000123"]`),
		chromedp.Click(`#devices li[data-serial="000123"]`),
		chromedp.Click(`#tabs button[data-tab="logs"]`),
		chromedp.WaitVisible(`#tab-logs`))
	logsState(p, "the data logger's state", "READY")
}

// logsState waits until the Logs tab shows what its last read gave, the
// data logger's state or the bridge's error, and ends the test unless it
// is the state want: a read that failed says why at once, rather than
// leave the test to wait for a state that will not come.
func logsState(p *page, what, want string) {
	p.t.Helper()
	p.poll(what, `(() => { const s = document.querySelector('#logs-state'); return !!s.dataset.state || s.classList.contains('error'); })()`)
	if got := evaluate[string](p, what, `document.querySelector('#logs-state').dataset.state || ''`); got != want {
		p.t.Fatalf("%s: the Logs tab shows %q, state %q; want %s", what, p.text(`#logs-state`), got, want)
	}
}
