package radio

import (
	"errors"
	"fmt"
	"regexp"

	"senseboard/nvm"
)

// Policy is a bonding policy: whether a central may bond with the device.
type Policy uint8

// The bonding policies. Within the recovery time after a reset every
// policy lets a central bond.
const (
	// BondingEnabled lets any central bond, replacing the bond there is.
	BondingEnabled Policy = 0
	// BondingDisabled lets only the bonded central bond again.
	BondingDisabled Policy = 1
	// BondingOnce lets a central bond while there is no bond.
	BondingOnce Policy = 2
	// BondingSameMac lets only the bonded central bond again; others see a
	// successful pairing while the device keeps its old keys.
	BondingSameMac Policy = 3
)

var policyNames = [...]string{"BondingEnabled", "BondingDisabled", "BondingOnce", "BondingSameMac"}

// String returns the policy's name, such as BondingOnce.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Valid reports whether p is one of the policies.
func (p Policy) Valid() bool { return p <= BondingSameMac }

// Advertising intervals, in units of 0.625 ms.
const (
	DefaultInterval = 800 // 500 ms
	MinInterval     = 32  // 20 ms
	MaxInterval     = 16384
)

// AdvSettings are the advertising settings: custom packets (nil for the
// default content), the interval and the timeout in seconds (0: never).
type AdvSettings struct {
	AdvPacket      []int  `json:"AdvPacket"`
	ScanRespPacket []int  `json:"ScanRespPacket"`
	Interval       uint16 `json:"Interval"`
	Timeout        uint16 `json:"Timeout"`
}

// Validate checks the settings: custom packets are sequences of AD
// structures, the interval is MinInterval..MaxInterval.
func (s *AdvSettings) Validate() error {
	if s.AdvPacket != nil {
		if _, err := checkPacket("AdvPacket", s.AdvPacket); err != nil {
			return err
		}
	}
	if s.ScanRespPacket != nil {
		if _, err := checkPacket("ScanRespPacket", s.ScanRespPacket); err != nil {
			return err
		}
	}
	if s.Interval < MinInterval || s.Interval > MaxInterval {
		return fmt.Errorf("advertising Interval %d is outside %d..%d (units of 0.625 ms)", s.Interval, MinInterval, MaxInterval)
	}
	return nil
}

// ConnParams are connection parameters, in the units of the link layer.
type ConnParams struct {
	MinConnInterval uint16 `json:"min_conn_interval"` // 1.25 ms
	MaxConnInterval uint16 `json:"max_conn_interval"` // 1.25 ms
	SlaveLatency    uint16 `json:"slave_latency"`     // connection events
	SupTimeout      uint16 `json:"sup_timeout"`       // 10 ms
}

// The range of connection intervals of the link layer, in units of 1.25 ms
// (7.5 ms to 4 s).
const (
	ConnIntervalMin = 6
	ConnIntervalMax = 3200
)

// DefaultConnParams are the preferred connection parameters after a reset.
var DefaultConnParams = ConnParams{MinConnInterval: 24, MaxConnInterval: 40, SlaveLatency: 0, SupTimeout: 400}

// Validate checks the parameters against the link layer's ranges.
func (cp *ConnParams) Validate() error {
	switch {
	case cp.MinConnInterval > cp.MaxConnInterval:
		return fmt.Errorf("min_conn_interval %d is above max_conn_interval %d", cp.MinConnInterval, cp.MaxConnInterval)
	case cp.MinConnInterval < ConnIntervalMin || cp.MaxConnInterval > ConnIntervalMax:
		return fmt.Errorf("connection intervals %d..%d are outside %d..%d (units of 1.25 ms)", cp.MinConnInterval, cp.MaxConnInterval, ConnIntervalMin, ConnIntervalMax)
	case cp.SlaveLatency > 499:
		return fmt.Errorf("slave_latency %d is above 499", cp.SlaveLatency)
	case cp.SupTimeout < 10 || cp.SupTimeout > 3200:
		return fmt.Errorf("sup_timeout %d is outside 10..3200 (units of 10 ms)", cp.SupTimeout)
	}
	return nil
}

// Bond is the one bond a device keeps: the central's address and the
// long-term key they share.
type Bond struct {
	Address string `json:"Address"`
	Key     string `json:"Key"`
}

// Settings are the radio's non-volatile settings: what survives a reset
// and a power cycle.
type Settings struct {
	Adv          AdvSettings `json:"Adv"`
	PassKey      *string     `json:"PassKey"`
	Policy       Policy      `json:"Policy"`
	RecoveryTime uint32      `json:"RecoveryTime"` // seconds after a reset
	Bond         *Bond       `json:"Bond"`
}

// DefaultSettings are the settings of a device that never changed them.
func DefaultSettings() Settings { return Settings{Adv: AdvSettings{Interval: DefaultInterval}} }

var (
	passKeyForm = regexp.MustCompile(`^[0-9]{6}$`)
	addressForm = regexp.MustCompile(`^[0-9A-F]{2}(:[0-9A-F]{2}){5}$`)
	keyForm     = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// ErrPassKeyForm is a pass key that is not six digits.
var ErrPassKeyForm = errors.New("a pass key is 6 digits")

// CheckPassKey checks the form of a static pass key: six digits.
func CheckPassKey(pin string) error {
	if !passKeyForm.MatchString(pin) {
		return fmt.Errorf("pass key %q: %w", pin, ErrPassKeyForm)
	}
	return nil
}

// Validate checks the settings by the rules that apply to what clients
// write, and the stored bond's form.
func (s *Settings) Validate() error {
	if err := s.Adv.Validate(); err != nil {
		return err
	}
	if s.PassKey != nil {
		if err := CheckPassKey(*s.PassKey); err != nil {
			return err
		}
	}
	if !s.Policy.Valid() {
		return fmt.Errorf("bonding policy %d is not a policy (0..3)", s.Policy)
	}
	if b := s.Bond; b != nil {
		if !addressForm.MatchString(b.Address) {
			return fmt.Errorf("the bond's central address %q is not of the form XX:XX:XX:XX:XX:XX", b.Address)
		}
		if !keyForm.MatchString(b.Key) {
			return errors.New("the bond's key is not 32 lower-case hexadecimal digits")
		}
	}
	return nil
}

// StateFile is the state file of the non-volatile settings.
const StateFile = "ble.json"

// OpenSettings opens the settings in store (see nvm.Var): the defaults
// when it holds none. Settings that fail Validate are a *nvm.CorruptError
// that names the file, and no change that fails it is written.
func OpenSettings(store *nvm.Store) (*nvm.Var[Settings], error) {
	return nvm.OpenVar(store, StateFile, DefaultSettings(), (*Settings).Validate)
}
