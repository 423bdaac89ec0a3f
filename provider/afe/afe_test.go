package afe_test

import (
	"testing"
	"time"

	"senseboard"
	"senseboard/provider/afe"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func reg(t *testing.T, d *sbt.Rig, addr uint8) uint32 {
	t.Helper()
	return d.Expect(200, resource.Get, "/Component/MAX3000x/Register", resource.Uint8(addr)).Content.(uint32)
}

func TestFrontEnd(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "events:\n  - at: 10s\n    gear: off\n")})
	v := d.Expect(200, resource.Get, "/Component/MAX3000x/Version").Content.(*afe.Version)
	if len(v.VersionInfo) != 2 || v.VersionInfo[0] != (afe.VersionInfo{Name: "Part", Version: "MAX30003"}) || v.VersionInfo[1].Name != "Revision" {
		t.Errorf("version %+v", v)
	}
	if w := d.Expect(200, resource.Get, "/Component/MAX3000x/WakeUp").Content; w != uint8(1) {
		t.Errorf("wake-up %v", w)
	}
	if env := d.Expect(200, resource.Put, "/Component/MAX3000x/WakeUp", resource.Uint8(0)); env.Content != "0" {
		t.Errorf("PUT WakeUp echoes %#v, want the value as a string", env.Content)
	}
	d.Expect(400, resource.Put, "/Component/MAX3000x/WakeUp", resource.Uint8(2))

	if got := reg(t, d, 0x10); got != 0x080004 {
		t.Errorf("CNFG_GEN power-on value %06X", got)
	}
	d.Expect(200, resource.Put, "/Component/MAX3000x/Register", resource.Uint8(0x10), resource.Uint32(0x081004))
	if got := reg(t, d, 0x10); got != 0x081004 {
		t.Errorf("CNFG_GEN after a write %06X", got)
	}
	d.Expect(400, resource.Put, "/Component/MAX3000x/Register", resource.Uint8(0x10), resource.Uint32(0x1000000)) // over 24 bits
	d.Expect(400, resource.Put, "/Component/MAX3000x/Register", resource.Uint8(0x0F), resource.Uint32(1))         // INFO is read-only
	d.Expect(400, resource.Get, "/Component/MAX3000x/Register", resource.Uint8(0x08))                             // SW_RST is write-only
	d.Expect(400, resource.Get, "/Component/MAX3000x/Register", resource.Uint8(0x30))                             // no such register
	d.Expect(400, resource.Get, "/Component/MAX3000x/Register", resource.Uint8(0x80))                             // beyond the map
	// STATUS shows electrode contact
	if reg(t, d, 0x01)&afe.StatusLeadsOn == 0 {
		t.Error("leads-on not set with the gear on")
	}
	d.Advance(11 * time.Second)
	if reg(t, d, 0x01)&afe.StatusLeadsOn != 0 {
		t.Error("leads-on set with the gear off")
	}
	// CNFG_ECG follows the ECG measurement: 256 Hz with 100 Hz low-pass
	d.Subscribe("/Meas/ECG/256")
	if got := reg(t, d, 0x15); got>>22 != 1 || got>>12&3 != 2 || got>>14&1 != 1 {
		t.Errorf("CNFG_ECG %06X at 256 Hz", got)
	}
	// SW_RST restores the power-on values
	d.Expect(200, resource.Put, "/Component/MAX3000x/Register", resource.Uint8(0x08), resource.Uint32(0))
	if got := reg(t, d, 0x10); got != 0x080004 {
		t.Errorf("CNFG_GEN after SW_RST %06X", got)
	}
}
