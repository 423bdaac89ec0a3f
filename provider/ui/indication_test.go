package ui_test

import (
	"testing"

	"senseboard"
	"senseboard/provider/ui"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

// TestIndicationWinsOverTheClientsState pins docs/behaviour.md ("LED and
// visual indication"): while the indication blinks, a PUT of the LED's
// state answers 200 and is kept, GET reads the LED as it is lit, and the
// kept state shows once the indication ends.
func TestIndicationWinsOverTheClientsState(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	put := func(on bool) {
		t.Helper()
		s := `{"IsOn": false}`
		if on {
			s = `{"IsOn": true}`
		}
		d.Expect(200, resource.Put, "/Component/Leds/0", sbt.Record(t, "LedState", s))
	}
	d.Expect(200, resource.Put, "/Ui/Ind/Visual", resource.Uint16(1))
	d.Advance(ui.BlinkPeriod / 2) // the blink's dark half
	put(true)
	if led(t, d) {
		t.Error("GET reads IsOn true in the blink's dark half: the client's state won over the indication")
	}
	d.Advance(ui.BlinkPeriod / 2)
	put(false)
	if !led(t, d) {
		t.Error("GET reads IsOn false in the blink's lit half: the client's state won over the indication")
	}
	put(true)
	d.Expect(200, resource.Put, "/Ui/Ind/Visual", resource.Uint16(0))
	if !led(t, d) {
		t.Error("the client's IsOn true was not kept through the indication")
	}

	// A short blink lights the LED over a client's false and leaves it as
	// the client set it.
	put(false)
	d.Expect(200, resource.Put, "/Ui/Ind/Visual", resource.Uint16(2))
	if !led(t, d) {
		t.Error("short blink over IsOn false: not lit")
	}
	put(true)
	d.Advance(ui.ShortBlink)
	if !led(t, d) {
		t.Error("the client's IsOn true, set during a short blink, is not shown after it")
	}
}
