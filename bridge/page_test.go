package bridge_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"senseboard/internal/needs"
)

// chromium finds a Chromium to drive, or skips the test (fails it under
// CI).
func chromium(t *testing.T) string {
	t.Helper()
	return needs.Program(t, "Chromium", "Debian: apt-get install chromium", "chromium", "chromium-browser", "google-chrome")
}

// page is the dashboard in a headless browser of the test's. Each of its
// steps ends the test when it fails, naming what it was doing.
type page struct {
	t   *testing.T
	ctx context.Context
}

// chrome is the headless browser the dashboard tests share, started by
// the first one: each test gets a tab in a browser context of its own, with
// its own cookies, storage and cache, as in a browser of its own, without
// the cost of starting one.
var chrome struct {
	once sync.Once
	ctx  context.Context // the browser's; its tabs are made from it
	err  error
	stop func() // ends the browser and removes its profile
}

// stopChrome ends the shared browser, if a test started it.
func stopChrome() {
	if chrome.stop != nil {
		chrome.stop()
	}
}

// browse opens a tab for the test in the shared browser, in a browser
// context of the test's; both end with the test.
func browse(t *testing.T, r *rig, browser string) *page {
	t.Helper()
	chrome.once.Do(func() {
		profile, err := os.MkdirTemp("", "senseboard-chromium-")
		if err != nil {
			chrome.err = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 1400),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(actx)
		chrome.ctx, chrome.err = ctx, chromedp.Do(ctx) // starts the browser
		chrome.stop = func() {
			cancelBrowser()
			cancelAlloc()
			os.RemoveAll(profile)
		}
	})
	if chrome.err != nil {
		t.Fatalf("start %s: %v", browser, chrome.err)
	}
	tab, cancelTab := chromedp.NewContext(chrome.ctx, chromedp.WithNewBrowserContext())
	ctx, cancel := context.WithCancel(tab)
	stop := context.AfterFunc(r.ctx, cancel) // the page ends with the rig, as its browser did
	t.Cleanup(func() {
		stop()
		cancel()
		cancelTab()
	})
	// the first run opens the tab and binds it to the context it is given:
	// the page's, not a step's with its guard
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return &page{t: t, ctx: ctx}
}

// stepGuard bounds each step of a page: a guard against hanging, not a
// bound on how long a step may take. A test takes as long as its steps do,
// however busy the machine.
const stepGuard = time.Minute

// step returns the context of one step: the page's with the guard.
func (p *page) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, stepGuard)
}

// must ends the test when err is not nil.
func (p *page) must(what string, err error) {
	p.t.Helper()
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// do runs the steps in order.
func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	p.must(what, chromedp.Do(ctx, steps...))
}

// poll waits until the expression js is true, for as long as the step's
// guard (the browser's own default gives up after 30 s).
func (p *page) poll(what, js string) {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(stepGuard)))
	p.must(what, err)
}

// text returns the text of the element sel selects.
func (p *page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	p.must("text of "+sel, err)
	return s
}

// shot saves a screenshot of the whole page as name among the test's
// artifacts (kept with go test -artifacts) and returns it.
func (p *page) shot(name string) []byte {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	p.must("screenshot "+name, err)
	path := filepath.Join(p.t.ArtifactDir(), name)
	p.must("save the screenshot", os.WriteFile(path, b, 0o644))
	p.t.Logf("screenshot: %s", path)
	return b
}

// evaluate returns the value of the expression js on the page.
func evaluate[T any](p *page, what, js string, opts ...chromedp.EvaluateOption) T {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	p.must(what, err)
	return v
}
