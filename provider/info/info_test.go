package info_test

import (
	"encoding/json"
	"strings"
	"testing"

	"senseboard"
	"senseboard/profile"
	"senseboard/provider/info"
	"senseboard/radio"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func TestInfo(t *testing.T) {
	p := profile.Default()
	p.Modules.HRS = true
	d := sbt.New(t, senseboard.Config{Profile: p})
	in := d.Expect(200, resource.Get, "/Info").Content.(*info.DeviceInfo)
	if in.Serial != "000123" || in.APILevel != "1" || in.HWConfig == "" || in.SW != profile.Version || in.BrandName != nil {
		t.Errorf("info %+v", in)
	}
	if len(in.AddressInfo) != 2 || in.AddressInfo[0].Name != "BLE" || in.AddressInfo[1].Name != "DFU-BLE" {
		t.Fatalf("addresses %+v", in.AddressInfo)
	}
	ble := d.Expect(200, resource.Get, "/Comm/Ble/Addr").Content.(string)
	if strings.ReplaceAll(in.AddressInfo[0].Address, "-", ":") != ble {
		t.Errorf("BLE address %s vs %s", in.AddressInfo[0].Address, ble)
	}
	// the cached encoding is what encoding/json gives
	want, _ := json.Marshal(in)
	if got := in.AppendJSON(nil); string(got) != string(want) {
		t.Errorf("AppendJSON %s\nencoding/json %s", got, want)
	}
	app := d.Expect(200, resource.Get, "/Info/App").Content.(*info.AppInfo)
	mods := map[string]bool{}
	for _, m := range app.Modules.Data {
		mods[m.Name] = m.Enabled
	}
	if !mods["BleHrsService"] || mods["BleNusService"] || !mods["EepromService"] || !mods["DataLogger"] || !mods["Logbook"] || !mods["GattSensorDataService"] {
		t.Errorf("modules %v", mods)
	}
	if next, _ := radio.DFUAddress("C0:00:00:00:00:FF"); next != "C0:00:00:00:01:00" {
		t.Errorf("DFUAddress %s", next)
	}
}
