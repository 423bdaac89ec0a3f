package ui_test

import (
	"testing"
	"time"

	"senseboard"
	"senseboard/provider/ui"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func led(t *testing.T, d *sbt.Rig) bool {
	t.Helper()
	l := d.Expect(200, resource.Get, "/Component/Leds").Content.(*ui.LedList)
	one := d.Expect(200, resource.Get, "/Component/Leds/0").Content.(*ui.LedState)
	if len(l.LedStates) != 1 || l.LedStates[0] != *one || one.LedColor != (resource.Pair{Value: 0, Name: "Red"}) {
		t.Fatalf("LED states %+v, %+v", l, one)
	}
	return one.IsOn
}

func TestLEDs(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	if led(t, d) {
		t.Error("LED on at start")
	}
	d.Expect(200, resource.Put, "/Component/Leds/0", sbt.Record(t, "LedState", `{"IsOn": true}`))
	if !led(t, d) {
		t.Error("LED off after IsOn true")
	}
	d.Expect(200, resource.Put, "/Component/Leds/0", sbt.Record(t, "LedState", `{"IsOn": false, "LedColor": 0}`))
	d.Expect(400, resource.Put, "/Component/Leds/0", sbt.Record(t, "LedState", `{"IsOn": true, "LedColor": 1}`))
	d.Expect(400, resource.Put, "/Component/Leds/0", sbt.Record(t, "LedState", `{"LedColor": 0}`))
	d.Expect(404, resource.Get, "/Component/Leds/1")
	d.Expect(404, resource.Put, "/Component/Leds/1", sbt.Record(t, "LedState", `{"IsOn": true}`))
	d.Expect(200, resource.Put, "/Component/Led", resource.Bool(true)) // deprecated form
	if !led(t, d) {
		t.Error("deprecated PUT did not switch the LED")
	}
	d.Device.Reset()
	if led(t, d) {
		t.Error("LED on after a reset")
	}
}

func TestVisualIndicationDrivesTheLED(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	ind := func() uint16 { return d.Expect(200, resource.Get, "/Ui/Ind/Visual").Content.(*ui.VisualInd).State }
	d.Expect(400, resource.Put, "/Ui/Ind/Visual", resource.Uint16(3))
	d.Expect(200, resource.Put, "/Ui/Ind/Visual", resource.Uint16(1))
	var pattern []bool
	for range 4 {
		pattern = append(pattern, led(t, d))
		d.Advance(ui.BlinkPeriod / 2)
	}
	if !(pattern[0] && !pattern[1] && pattern[2] && !pattern[3]) || ind() != 1 {
		t.Errorf("continuous blinking: %v", pattern)
	}
	d.Expect(200, resource.Put, "/Ui/Ind/Visual", resource.Uint16(2))
	if !led(t, d) || ind() != 2 {
		t.Error("short blink not lit")
	}
	d.Advance(ui.ShortBlink + time.Millisecond)
	if led(t, d) || ind() != 0 {
		t.Error("short blink did not end by itself")
	}
	d.Expect(200, resource.Put, "/Ui/Ind/Visual", resource.Uint16(0))
}
