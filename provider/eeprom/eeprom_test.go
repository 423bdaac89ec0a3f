package eeprom_test

import (
	"fmt"
	"strings"
	"testing"

	"senseboard"
	"senseboard/profile"
	"senseboard/provider/eeprom"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func data(t *testing.T, b ...int) resource.Value {
	s := make([]string, len(b))
	for i, v := range b {
		s[i] = fmt.Sprint(v)
	}
	return sbt.Record(t, "EepromData", `{"bytes": [`+strings.Join(s, ",")+`]}`)
}

func read(t *testing.T, d *sbt.Rig, chip int, addr uint32, n uint8) string {
	t.Helper()
	env := d.Expect(200, resource.Get, fmt.Sprintf("/Component/Eeprom/%d", chip), resource.Uint32(addr), resource.Uint8(n))
	return fmt.Sprint([]byte(env.Content.(*eeprom.Data).Bytes))
}

func TestEEPROM(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	for _, chip := range []int{0, 1} {
		info := d.Expect(200, resource.Get, fmt.Sprintf("/Component/Eeprom/%d/Info", chip)).Content.(*eeprom.Info)
		if info.Model != "M24M01" || info.Size != 131072 {
			t.Errorf("chip %d: %+v", chip, info)
		}
	}
	d.Expect(404, resource.Get, "/Component/Eeprom/2/Info")
	d.Expect(501, resource.Get, "/Component/Eeprom/2", resource.Uint32(0), resource.Uint8(1))
	d.Expect(501, resource.Put, "/Component/Eeprom/-1", resource.Uint32(0), data(t, 1))

	if got := read(t, d, 0, 0, 4); got != "[255 255 255 255]" {
		t.Errorf("erased chip reads %s", got)
	}
	d.Expect(200, resource.Put, "/Component/Eeprom/0", resource.Uint32(10), data(t, 1, 2, 3))
	if got := read(t, d, 0, 9, 5); got != "[255 1 2 3 255]" {
		t.Errorf("after a write %s", got)
	}
	// Len 1..128, spans inside the chip
	d.Expect(400, resource.Get, "/Component/Eeprom/0", resource.Uint32(0), resource.Uint8(0))
	d.Expect(400, resource.Get, "/Component/Eeprom/0", resource.Uint32(0), resource.Uint8(129))
	d.Expect(400, resource.Get, "/Component/Eeprom/1", resource.Uint32(profile.ChipSize-2), resource.Uint8(4))
	d.Expect(200, resource.Get, "/Component/Eeprom/1", resource.Uint32(profile.ChipSize-4), resource.Uint8(4))
	// a block crossing the end of chip 0 is refused: the client splits it
	env := d.Expect(400, resource.Put, "/Component/Eeprom/0", resource.Uint32(profile.ChipSize-2), data(t, 7, 8, 9, 10))
	if !strings.Contains(env.Error, "split it: 2 bytes to chip 0 at 131070, and 2 bytes to chip 1 at 0") {
		t.Errorf("crossing chip 0: %s", env.Error)
	}
	if got := read(t, d, 0, profile.ChipSize-2, 2); got != "[255 255]" {
		t.Errorf("a refused write changed the chip: %s", got)
	}
	d.Expect(200, resource.Put, "/Component/Eeprom/0", resource.Uint32(profile.ChipSize-2), data(t, 7, 8))
	d.Expect(200, resource.Put, "/Component/Eeprom/1", resource.Uint32(0), data(t, 9, 10))
	d.Expect(400, resource.Put, "/Component/Eeprom/1", resource.Uint32(profile.ChipSize-1), data(t, 1, 2))
	d.Expect(400, resource.Put, "/Component/Eeprom/0", resource.Uint32(0), data(t, 256))
	// non-volatile across a reset and a restart
	d.Device.Reset()
	d.Restart()
	if got := read(t, d, 0, profile.ChipSize-2, 2) + read(t, d, 1, 0, 2); got != "[7 8][9 10]" {
		t.Errorf("after a restart %s", got)
	}
}
