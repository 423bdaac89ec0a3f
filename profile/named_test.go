package profile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNamedProfiles: every built-in profile loads and validates; a name
// that is not built in is a file's path; ble.advertisement takes the two
// layouts only.
func TestNamedProfiles(t *testing.T) {
	if !slices.Contains(Names(), "movesense") {
		t.Fatalf("built-in profiles %q, want movesense among them", Names())
	}
	for _, name := range Names() {
		p, err := Lookup(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Serial != Default().Serial || p.Product.PCBASerial != "P"+p.Serial {
			t.Errorf("%s: serial %s, PCBA serial %s: a built-in profile leaves them to --serial", name, p.Serial, p.Product.PCBASerial)
		}
	}
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte("product: {sw: 9.9.9}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := Lookup(file); err != nil || p.Product.SW != "9.9.9" || p.BLE.Advertisement != AdvertisementDefault {
		t.Errorf("a profile file: %+v, %v", p, err)
	}
	if _, err := Lookup("no-such-profile"); err == nil || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("an unknown name: %v", err)
	}
	if _, err := Parse([]byte("ble: {advertisement: loud}\n")); err == nil || !strings.Contains(err.Error(), `ble.advertisement "loud": default or movesense`) {
		t.Errorf("a layout that does not exist: %v", err)
	}
	if p := Default(); p.Product.SW != Version {
		t.Errorf("default sw %q, want %q", p.Product.SW, Version)
	}
}
