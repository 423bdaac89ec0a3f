package profile_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"senseboard/profile"
)

func TestParse(t *testing.T) {
	p, err := profile.Parse([]byte(`
serial: "000777"
modules: {hrs: true, nus: true}
debug:
  log: {enabled: true, offset: 0, size: 8192}
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Serial != "000777" || !p.Modules.HRS || !p.Modules.Heap || !p.Debug.Log.Enabled || p.Debug.Log.Size != 8192 ||
		p.Debug.MessageLines != 6 || p.BLE.Address != profile.DeriveAddress("000777") {
		t.Errorf("profile %+v", p)
	}
	tests := []struct{ yaml, want string }{
		{`serial: "00-1"`, `serial "00-1": 1 to 16 letters or digits`},
		{`product: {name: " "}`, "product.name: must not be empty"},
		{`ble: {address: "12:34"}`, `ble.address "12:34": form XX:XX:XX:XX:XX:XX`},
		{`debug: {messageLines: 0}`, "debug.messageLines 0: 1..1000"},
		{`debug: {log: {offset: 100}}`, "debug.log.offset 100: a multiple of 256"},
		{`debug: {log: {size: 70000}}`, "debug.log.size 70000"},
		{`debug: {log: {offset: 130048, size: 4096}}`, "must lie within one EEPROM chip"},
		{`subscriptionLimit: 0`, "subscriptionLimit 0: 1..10000"},
		{`heap: {size: 10}`, "heap.size 10"},
		{`binary: {tempOrder: valueFirst}`, `binary.tempOrder "valueFirst": timestampFirst or measurementFirst`},
		{`colour: red`, "field colour not found"},
		{`serial: [1`, "yaml"},
		{"serial: \"000777\"\n---\nserial: \"000778\"\n", "more than one YAML document"},
	}
	for _, tt := range tests {
		if _, err := profile.Parse([]byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

func TestWithSerial(t *testing.T) {
	p := profile.Default().WithSerial("000124")
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.Product.PCBASerial != "P000124" || p.BLE.Address != profile.DeriveAddress("000124") || p.BLE.Address == profile.DeriveAddress("000123") {
		t.Errorf("derived values do not follow the serial: %+v", p)
	}
	if profile.Default().Serial != "000123" {
		t.Error("WithSerial changed the defaults")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("serial: \"000777\"\nmodules: {hrs: true}\n"))
	f.Add([]byte("debug:\n  log: {enabled: true, offset: 256, size: 300}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profile.Parse(data)
		if err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("parsed profile does not validate: %v", verr)
			}
		}
	})
}

// TestDocumentedDefaults keeps docs/profiles.md honest: its example lists
// the defaults.
func TestDocumentedDefaults(t *testing.T) {
	doc, err := os.ReadFile("../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```yaml\n")
	block, _, _ := strings.Cut(rest, "```")
	p, err := profile.Parse([]byte(block))
	if err != nil {
		t.Fatalf("the documented profile: %v", err)
	}
	want := profile.Default()
	want.Validate()
	if !reflect.DeepEqual(p, want) {
		t.Errorf("documented %+v\ndefaults %+v", p, want)
	}
}

// The PCBA serial follows a serial set in the file, unless the file sets it too.
func TestPCBASerialFollowsTheFile(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{`serial: "000999"`, "P000999"},
		{"serial: \"000999\"\nproduct: {pcbaSerial: X42}", "X42"},
		{"product: {pcbaSerial: X42}", "X42"},
		{``, "P000123"},
	}
	for _, tt := range tests {
		p, err := profile.Parse([]byte(tt.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if p.Product.PCBASerial != tt.want {
			t.Errorf("%s: pcbaSerial %s; want %s", tt.yaml, p.Product.PCBASerial, tt.want)
		}
		if q := p.WithSerial("000555"); tt.want[0] == 'P' && q.Product.PCBASerial != "P000555" {
			t.Errorf("%s, then serial 000555: pcbaSerial %s", tt.yaml, q.Product.PCBASerial)
		}
	}
}

// A throughput model that breaks a limit is refused with ErrAirtime,
// naming the setting; a disabled one is not checked.
func TestAirtimeLimits(t *testing.T) {
	for _, tt := range []struct {
		yaml, want string
	}{
		{`ble: {airtime: {packetsPerEvent: 0}}`, "ble.airtime.packetsPerEvent 0: 1..32"},
		{`ble: {airtime: {packetsPerEvent: 33}}`, "ble.airtime.packetsPerEvent 33: 1..32"},
		{`ble: {airtime: {dataLength: 26}}`, "ble.airtime.dataLength 26: 27..251 bytes"},
		{`ble: {airtime: {dataLength: 252}}`, "ble.airtime.dataLength 252: 27..251 bytes"},
		{`ble: {airtime: {txQueue: 1}}`, "ble.airtime.txQueue 1: 2..64"},
		{`ble: {airtime: {txQueue: 65}}`, "ble.airtime.txQueue 65: 2..64"},
		{`ble: {airtime: {missedEvents: 0.6}}`, "ble.airtime.missedEvents 0.6: 0..0.5"},
		{`ble: {airtime: {missedEvents: -0.1}}`, "ble.airtime.missedEvents -0.1: 0..0.5"},
	} {
		_, err := profile.Parse([]byte(tt.yaml))
		if !errors.Is(err, profile.ErrAirtime) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrAirtime saying %q", tt.yaml, err, tt.want)
		}
	}
	if _, err := profile.Parse([]byte(`ble: {airtime: {enabled: false, txQueue: 0}}`)); err != nil {
		t.Errorf("a disabled model was checked: %v", err)
	}
	for _, limit := range []profile.Airtime{
		{Enabled: true, PacketsPerEvent: 1, DataLength: profile.MinDataLength, TXQueue: profile.MinTXQueue},
		{Enabled: true, PacketsPerEvent: profile.MaxPacketsPerEvent, DataLength: profile.MaxDataLength, TXQueue: profile.MaxTXQueue, MissedEvents: profile.MaxMissedEvents},
	} {
		if err := limit.Validate(); err != nil {
			t.Errorf("%+v at the limits: %v", limit, err)
		}
	}
}

func TestSerialAt(t *testing.T) {
	for _, tc := range []struct {
		first string
		i     int
		want  string
		ok    bool
	}{
		{"000123", 0, "000123", true},
		{"000123", 7, "000130", true},
		{"99", 1, "100", true},
		{"ABC", 1, "", false},
		{"", 0, "", false},
	} {
		got, err := profile.SerialAt(tc.first, tc.i)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("SerialAt(%q, %d) = %q, %v; want %q, ok %v", tc.first, tc.i, got, err, tc.want, tc.ok)
		}
	}
}
