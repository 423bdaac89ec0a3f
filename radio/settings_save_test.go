package radio_test

import (
	"errors"
	"os"
	"testing"

	"senseboard/nvm"
	"senseboard/radio"
)

// A setting the rules refuse comes back with why; one the state file does
// not take wraps nvm.ErrNotStored; neither changes the settings.
func TestSettingsRefusedOrNotStored(t *testing.T) {
	store := openStore(t)
	st, err := radio.OpenSettings(store)
	if err != nil {
		t.Fatal(err)
	}
	p, err := radio.New(radio.Config{Address: "0C:8C:DC:00:01:23", Serial: "000123", Product: "Senseboard"}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SetSecurity(9, nil); err == nil || errors.Is(err, nvm.ErrNotStored) {
		t.Errorf("policy 9: %v, want refused", err)
	}
	if err := os.Mkdir(store.Path(radio.StateFile), 0o700); err != nil { // the write fails
		t.Fatal(err)
	}
	if err := p.SetSecurity(radio.Policy(2), nil); !errors.Is(err, nvm.ErrNotStored) {
		t.Errorf("failed write: %v, want %v", err, nvm.ErrNotStored)
	}
	if policy, _ := p.Security(); policy != radio.DefaultSettings().Policy {
		t.Errorf("policy %d after a refused and a failed change, want %d", policy, radio.DefaultSettings().Policy)
	}
}
