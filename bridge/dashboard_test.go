package bridge_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboard drives the dashboard in headless Chromium: the page loads,
// the device appears, streams start and their plots receive points, and a
// form generated from the definitions reads a resource. The screenshot is
// kept with go test -artifacts (see docs/bridge.md).
func TestDashboard(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
	}
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1400),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
	}
	actx, cancel := chromedp.NewExecAllocator(r.ctx, opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

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
	must("load", chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(`#devices li[data-serial="000123"]`),
		chromedp.WaitVisible(`#link.ok`)))
	current, err := chromedp.Run(ctx, chromedp.Text(`#current`))
	must("current device", err)
	must("start streams", chromedp.Do(ctx,
		chromedp.Click(`.stream[data-stream="ecg"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="acc"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="temp"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="hr"] [data-toggle]`),
		chromedp.Click(`.stream[data-stream="states"] [data-toggle]`)))
	points("ecg", 500)
	points("acc", 100)
	points("hr", 2)
	must("plots", chromedp.Do(ctx, chromedp.WaitVisible(`.stream[data-stream="ecg"] canvas`), chromedp.Sleep(300*time.Millisecond)))
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must("screenshot", err)
	path := filepath.Join(t.ArtifactDir(), "dashboard.png")
	must("save the screenshot", os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot: %s", path)
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
