package bridge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardFaults drives the Faults tab in headless Chromium: a form
// per fault from the bridge's description, a fault started with a
// parameter of its form, a refusal with its reason, the device's ground
// truth in the list, and a fault ended with its button. The screenshot is
// kept with go test -artifacts.
func TestDashboardFaults(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	p := browse(t, r, chromium(t))
	p.do("load",
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(`#devices li[data-serial="000123"]`),
		chromedp.Click(`#devices li[data-serial="000123"]`),
		chromedp.Click(`#tabs button[data-tab="faults"]`),
		chromedp.WaitVisible(`#tab-faults`))
	p.poll("the forms", `document.querySelectorAll('#fault-forms form').length === 10`)

	// an implausible first heart rate: the list shows it, active, with
	// the parameter given
	p.do("firsthr", chromedp.SetValue(`form[data-fault="firsthr"] input[name=value]`, "150"),
		chromedp.Click(`form[data-fault="firsthr"] button`))
	p.poll("the fault in the list", `!!document.querySelector('#faults tr.active[data-id="1"]')`)
	if row := p.text(`#faults tr[data-id="1"]`); !strings.Contains(row, "firsthr") || !strings.Contains(row, "value 150") || !strings.Contains(row, "api") {
		t.Errorf("the fault's row: %q", row)
	}
	// the list is read every second, and its rows stay as they are
	// while it says the same: they are not replaced under the pointer
	evaluate[bool](p, "keep the row", `(window.row = document.querySelector('#faults tr[data-id="1"]'), true)`)
	reads := evaluate[int](p, "the tab's reads", `window.senseboard.faults.reads`)
	p.poll("two reads of the list", fmt.Sprintf(`window.senseboard.faults.reads >= %d`, reads+2))
	if !evaluate[bool](p, "the row kept", `document.contains(window.row)`) {
		t.Error("a read of the same list replaced its rows")
	}
	// a bad parameter: the device's reason shows
	p.do("bad share", chromedp.SetValue(`form[data-fault="interference"] input[name=share]`, "3"),
		chromedp.Click(`form[data-fault="interference"] button`))
	p.poll("the refusal", `document.querySelector('#faults-info').textContent.includes('at most 1')`)
	// its End button ends it
	p.do("end", chromedp.Click(`#faults tr[data-id="1"] button`))
	p.poll("ended", `!!document.querySelector('#faults tr[data-id="1"]:not(.active)')`)
	if row := p.text(`#faults tr[data-id="1"]`); !strings.Contains(row, "deleted") {
		t.Errorf("the ended fault's row: %q", row)
	}
	p.shot("faults.png")
}
