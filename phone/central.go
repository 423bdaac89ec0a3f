package phone

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"

	"senseboard/nvm"
)

// centralFile is the state file of the phone's own address as a central.
const centralFile = "central.json"

// central is the phone's identity as a BLE central, as its state keeps it.
type central struct {
	Address string `json:"address"`
}

func (c *central) check() error {
	if c.Address != "" && !addressRE.MatchString(c.Address) {
		return fmt.Errorf("central address %q: the form is XX:XX:XX:XX:XX:XX in upper-case hexadecimal", c.Address)
	}
	return nil
}

// centralAddress returns the phone's address as a central: the one given
// (which the state then keeps), or the one the state keeps, or else one
// derived from the state directory and kept from then on. Each phone with
// a state directory of its own is thus a phone of its own. A phone without
// a state directory is DefaultAddress unless given one.
func centralAddress(store *nvm.Store, given string) (string, error) {
	given = strings.ToUpper(given)
	if given != "" && !addressRE.MatchString(given) {
		return "", fmt.Errorf("central address %q: the form is XX:XX:XX:XX:XX:XX", given)
	}
	v, err := nvm.OpenVar(store, centralFile, central{}, (*central).check)
	if err != nil {
		return "", err
	}
	addr := v.Get().Address
	switch {
	case given != "":
		addr = given
	case addr != "":
		return addr, nil
	case store == nil:
		return DefaultAddress, nil
	default:
		addr = deriveCentral(store.Dir())
	}
	if addr != v.Get().Address && store != nil {
		if err := v.Update(func(c *central) error { c.Address = addr; return nil }); err != nil {
			return "", fmt.Errorf("keep the central address: %w", err)
		}
	}
	return addr, nil
}

// deriveCentral derives a static random address (the two top bits set)
// from the state directory's absolute path.
func deriveCentral(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	h := sha256.Sum256([]byte("senseboard bridge central " + dir))
	h[0] |= 0xC0
	return fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X", h[0], h[1], h[2], h[3], h[4], h[5])
}

// Address returns the phone's address as a BLE central, which devices
// see in /Comm/Ble/Peers and their bonding policies judge.
func (ph *Phone) Address() string { return ph.cfg.Address }

// Name returns the phone's name as a BLE central.
func (ph *Phone) Name() string { return ph.cfg.Name }
