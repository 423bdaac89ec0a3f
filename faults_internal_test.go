package senseboard

import (
	"testing"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/fault"
)

// TestFaultsFollowTheMode: the device takes a mode under its lock and
// tells of it after, so a reset and an update mode that cross may be told
// in the other order. The faults follow the mode the device ends in: a
// reset told after the update mode that overtook it leaves that update
// mode's fault running, and an update mode told after the reset that
// overtook it brings none.
func TestFaultsFollowTheMode(t *testing.T) {
	d, err := New(Config{Clock: clock.NewVirtual(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	dfu := func() []int { return d.Faults.active(fault.DFU) }

	d.Core.EnterUpdateMode() // told at once: the device's own update mode fault
	if got := dfu(); len(got) != 1 {
		t.Fatalf("update mode: dfu faults %v, want one", got)
	}
	d.Faults.lifecycle(device.EventReset) // a reset that the update mode overtook, told late
	if got := dfu(); len(got) != 1 {
		t.Errorf("a reset told after the update mode that overtook it: dfu faults %v, want the update mode's", got)
	}

	d.Core.Reset() // told at once: ends the update mode's fault
	if got := dfu(); len(got) != 0 {
		t.Fatalf("reset: dfu faults %v, want none", got)
	}
	d.Faults.lifecycle(device.EventUpdateMode) // an update mode that the reset overtook, told late
	if got := dfu(); len(got) != 0 {
		t.Errorf("an update mode told after the reset that overtook it: dfu faults %v, want none", got)
	}
	if mode := d.Core.Mode(); mode != device.ModeApplication {
		t.Errorf("mode %v, want Application", mode)
	}
}
