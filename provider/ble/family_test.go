package ble_test

import (
	"slices"
	"strings"
	"testing"

	"senseboard"
	"senseboard/gsp/gspwire"
	"senseboard/profile"
	"senseboard/provider/info"
	"senseboard/radio"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

// chooserFilter is a Web Bluetooth requestDevice filter: a device matches
// when every member given matches (a name prefix; services, all of which
// the advertisement lists). A chooser's filters are OR-ed.
type chooserFilter struct {
	namePrefix string
	services   []radio.UUID
}

// familyChooser is Movesense Commander's device chooser: the name prefix,
// the two 16-bit services current sensors advertise, and the GSP service.
var familyChooser = []chooserFilter{
	{namePrefix: "Movesense"},
	{services: []radio.UUID{radio.UUID16(0xFDF3)}},
	{services: []radio.UUID{radio.UUID16(0x180D)}},
	{services: []radio.UUID{radio.MustParseUUID(gspwire.ServiceUUID)}},
}

// matches says which of the filters the advertised packets match.
func matches(t *testing.T, pk radio.Packets, filters []chooserFilter) []bool {
	t.Helper()
	a, err := radio.ParseAdvertisement(pk.Adv, pk.ScanResp)
	if err != nil {
		t.Fatal(err)
	}
	var listed []radio.UUID
	for _, u := range a.Services16 {
		listed = append(listed, radio.UUID16(u))
	}
	for _, u := range a.Services128 { // advertised least significant byte first
		slices.Reverse(u[:])
		listed = append(listed, radio.UUID(u))
	}
	out := make([]bool, len(filters))
	for i, f := range filters {
		out[i] = (f.namePrefix == "" || strings.HasPrefix(a.Name, f.namePrefix)) && len(f.namePrefix)+len(f.services) > 0
		for _, s := range f.services {
			out[i] = out[i] && slices.Contains(listed, s)
		}
	}
	return out
}

// TestMovesenseProfileFindsTheFamilysChooser: a device of the built-in
// profile movesense matches each filter of Movesense Commander's chooser
// but the GSP service's (current sensors do not advertise it), as current
// sensors do; a device of the default profile matches none. The movesense
// device says in /Info what a current sensor says.
func TestMovesenseProfileFindsTheFamilysChooser(t *testing.T) {
	ms, err := profile.Lookup("movesense")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		profile *profile.Profile
		want    []bool
	}{
		{"default", profile.Default(), []bool{false, false, false, false}},
		{"movesense", ms, []bool{true, true, true, false}},
		{"movesense with a 12-digit serial", ms.WithSerial("233830000816"), []bool{true, true, true, false}},
	} {
		d := sbt.New(t, senseboard.Config{Profile: tt.profile})
		pk, ok := d.Device.Radio.Advertising()
		if !ok {
			t.Fatalf("%s: not advertising", tt.name)
		}
		if len(pk.Adv) > radio.MaxPacket || len(pk.ScanResp) > radio.MaxPacket {
			t.Errorf("%s: packets of %d and %d bytes", tt.name, len(pk.Adv), len(pk.ScanResp))
		}
		if got := matches(t, pk, familyChooser); !slices.Equal(got, tt.want) {
			t.Errorf("%s: the chooser's filters (name Movesense…, 0xFDF3, 0x180D, GSP) match %v, want %v\nadv % X\nscan response % X",
				tt.name, got, tt.want, pk.Adv, pk.ScanResp)
		}
	}

	d := sbt.New(t, senseboard.Config{Profile: ms})
	in := d.Expect(200, resource.Get, "/Info").Content.(*info.DeviceInfo)
	if in.ManufacturerName != "Movesense Ltd" || in.ProductName != "Movesense" || in.HW != "H4" || in.SW != "2.3.0" ||
		in.Variant != "Avocado" || in.HWCompatibilityID != "C" || in.Design == nil || *in.Design != "black" || in.BrandName != nil {
		t.Errorf("/Info of the movesense profile: %+v", in)
	}
	pk, _ := d.Device.Radio.Advertising()
	if a, _ := radio.ParseAdvertisement(pk.Adv, pk.ScanResp); a.Name != "Movesense 000123" || !a.Manufacturer || !a.HRS {
		t.Errorf("the movesense profile's advertisement: %+v, want the name Movesense 000123 and the family's manufacturer field with HRS", a)
	}
}
