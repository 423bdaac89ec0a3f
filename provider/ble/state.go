package ble

import (
	"fmt"
	"regexp"
)

var (
	pinRE     = regexp.MustCompile(`^[0-9]{6}$`)
	addressRE = regexp.MustCompile(`^[0-9A-F]{2}(:[0-9A-F]{2}){5}$`)
	keyRE     = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// check applies the rules of the interface (AdvSettings, BondingSettings,
// the pass key) to settings loaded from ble.json, so that the file holds
// nothing a client could not have written.
func (s *persisted) check() error {
	if s.Adv.Interval < 32 || s.Adv.Interval > 16384 {
		return fmt.Errorf("advertising Interval %d is outside 32..16384", s.Adv.Interval)
	}
	if s.Adv.AdvPacket != nil {
		if _, err := checkPacket("AdvPacket", s.Adv.AdvPacket); err != nil {
			return err
		}
	}
	if s.Adv.ScanRespPacket != nil {
		if _, err := checkPacket("ScanRespPacket", s.Adv.ScanRespPacket); err != nil {
			return err
		}
	}
	if s.Policy > BondingSameMac {
		return fmt.Errorf("bonding policy %d is not a policy (0 to %d)", s.Policy, BondingSameMac)
	}
	if s.PassKey != nil && !pinRE.MatchString(*s.PassKey) {
		return fmt.Errorf("the pass key is not 6 digits")
	}
	if b := s.Bond; b != nil && (!addressRE.MatchString(b.Address) || !keyRE.MatchString(b.Key)) {
		return fmt.Errorf("the bond is not an address XX:XX:XX:XX:XX:XX with a key of 32 hexadecimal digits")
	}
	return nil
}
