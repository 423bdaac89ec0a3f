package phone

import (
	"fmt"
	"regexp"

	"senseboard/nvm"
)

// keysFile is the state file of the keys of the phone's bonds.
const keysFile = "keys.json"

// bondKeys maps the address of each device the phone bonded with to the
// long-term key of the bond.
type bondKeys map[string]string

var (
	addressRE = regexp.MustCompile(`^[0-9A-F]{2}(:[0-9A-F]{2}){5}$`)
	keyRE     = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// check applies the same rules to the keys loaded from keys.json and to
// those a device hands over when it bonds: an address XX:XX:XX:XX:XX:XX and
// a 128-bit key in 32 hexadecimal digits.
func (k *bondKeys) check() error {
	for a, key := range *k {
		if !addressRE.MatchString(a) {
			return fmt.Errorf("device address %q: the form is XX:XX:XX:XX:XX:XX in upper-case hexadecimal", a)
		}
		if !keyRE.MatchString(key) {
			return fmt.Errorf("the key of device %s is not a 128-bit key in 32 lower-case hexadecimal digits", a)
		}
	}
	return nil
}

// openKeys loads the keys from store, or keeps them in memory only when
// store is nil.
func openKeys(store *nvm.Store) (*nvm.Var[bondKeys], error) {
	return nvm.OpenVar(store, keysFile, bondKeys{}, (*bondKeys).check)
}

// key returns the long-term key the phone keeps for a device address.
func (ph *Phone) key(address string) (string, bool) {
	k, ok := ph.keys.Get()[address]
	return k, ok
}

// setKey keeps (or, with "", drops) the key of a bond with a device.
func (ph *Phone) setKey(address, key string) error {
	err := ph.keys.Update(func(k *bondKeys) error {
		if key == "" {
			delete(*k, address)
		} else {
			(*k)[address] = key
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bridge: keep the bond: %w", err)
	}
	return nil
}
