package system_test

import (
	"testing"

	"senseboard"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// /System/Energy/Level is the battery model's level in whole percent.
func TestEnergyLevel(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	for _, level := range []float64{1, 0.5, 0.125, 0.004, 0} {
		d.Device.System.SetBattery(level)
		env := d.Expect(200, resource.Get, "/System/Energy/Level")
		v, ok := env.Content.(resource.Value)
		if !ok || v.Type() != resource.TypeUint8 {
			t.Fatalf("content %#v, want a uint8", env.Content)
		}
		want := uint64(level*100 + 0.5)
		if v.Uint() != want {
			t.Errorf("battery %.3f: level %d%%, want %d%%", level, v.Uint(), want)
		}
	}
}
