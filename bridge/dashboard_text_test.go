package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"senseboard/phone"
)

// TestDashboardShowsNoStrayText drives the dashboard in headless Chromium:
// a resource's page on the Resources tab shows its heading and forms, and
// no text "null" where a part of the page is absent; and a device the
// bridge released after its idle period says so as a normal state, not in
// the colour of a warning.
func TestDashboardShowsNoStrayText(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	browser := chromium(t)
	r := newRig(t, rigConfig{local: []string{"000123"}, onDemand: true, bridge: phone.Config{Idle: 200 * time.Millisecond}})
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	p := browse(t, r, browser)
	p.do("load and choose the device",
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(`#devices li[data-serial="000123"]`),
		chromedp.Click(`#devices li[data-serial="000123"]`),
		chromedp.WaitVisible(`#current`),
		chromedp.Click(`#tabs button[data-tab="resources"]`))
	// Each resource's page, one after the other: the text nodes of the page
	// that read "null".
	for _, path := range []string{"/Info", "/Time", "/Meas/Acc/{SampleRate}", "/Component/Leds/{LedIndex}"} {
		p.do("open "+path,
			chromedp.Click(`#resources li[data-path="`+path+`"]`),
			chromedp.WaitVisible(`#resource form`))
		stray := evaluate[[]string](p, "text of "+path, `(() => {
			const w = document.createTreeWalker(document.querySelector('#resource'), NodeFilter.SHOW_TEXT);
			const out = [];
			for (let n = w.nextNode(); n; n = w.nextNode()) {
				if (/^\s*(null|undefined)\s*$/.test(n.textContent)) out.push(n.parentElement.tagName + ': ' + n.textContent);
			}
			return out;
		})()`)
		if len(stray) > 0 {
			t.Errorf("the page of %s shows %q", path, stray)
		}
		if h := p.text(`#resource h3`); h != path {
			t.Errorf("the page of %s is headed %q", path, h)
		}
	}

	released := func(s phone.DeviceState) bool { return !s.Connected && strings.HasPrefix(s.Note, "released: ") }
	r.waitFor("000123", "released", released)
	note := `document.querySelector('#devices li[data-serial="000123"] .note')`
	p.poll("the release shown", note+`?.textContent.startsWith('released: ')`)
	colour := evaluate[[]string](p, "the note's colour", `(() => {
		const probe = document.createElement('span');
		probe.style.color = 'var(--warn)';
		document.body.append(probe);
		const warn = getComputedStyle(probe).color;
		probe.remove();
		return [getComputedStyle(`+note+`).color, warn];
	})()`)
	if colour[0] == colour[1] {
		t.Errorf("the note %q is in the warning's colour %s", p.text(`#devices li[data-serial="000123"] .note`), colour[1])
	}
}

// TestDashboardShowsDepartedDevice: a device of another program that went
// away stays in the dashboard's list, gone, with its note saying why, and
// offers nothing to do with it.
func TestDashboardShowsDepartedDevice(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	browser := chromium(t)
	r := newRig(t, rigConfig{local: []string{"000123"}, remote: []string{"000124"}, onDemand: true})
	r.waitFor("000124", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	p := browse(t, r, browser)
	p.do("load", chromedp.Navigate(r.srv.URL+"/"), chromedp.WaitVisible(`#devices li[data-serial="000124"]`))
	r.stop["000124"]()
	li := `document.querySelector('#devices li[data-serial="000124"]')`
	p.poll("the device shown gone, and why", li+`?.querySelector('.note')?.textContent === 'gone: it went off the air: it left the air'`)
	if got := p.text(`#devices li[data-serial="000124"] .badge`); got != "gone" {
		t.Errorf("the device that went away is badged %q", got)
	}
	if n := evaluate[int](p, "its actions", li+`.querySelectorAll('button').length`); n != 0 {
		t.Errorf("the device that went away offers %d buttons", n)
	}
}
