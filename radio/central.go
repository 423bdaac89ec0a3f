package radio

import "sync"

// Central is the other side of the link: a phone or a computer that scans,
// connects and pairs. It keeps the keys of the devices it bonded with, by
// device address, as a phone does.
type Central struct {
	Address string // XX:XX:XX:XX:XX:XX
	Name    string
	// Interval is the connection interval the central asks for, in units
	// of 1.25 ms (ConnIntervalMin..ConnIntervalMax), as a phone chooses one; the
	// device grants the nearest within its connection parameters (Grant).
	// Zero leaves the choice to the device: its slowest.
	Interval uint16
	// Power counts the times the central's Bluetooth was turned off and
	// on, as it tells the devices it scans and connects to (Heard).
	Power uint32

	mu   sync.Mutex
	keys map[string]string // device address -> long-term key
}

// NewCentral returns a central with an address and a name.
func NewCentral(address, name string) *Central {
	return &Central{Address: address, Name: name, keys: map[string]string{}}
}

// Bonded reports whether the central holds keys for the device address.
func (c *Central) Bonded(device string) bool {
	_, ok := c.Key(device)
	return ok
}

// Key returns the long-term key the central keeps for a device address.
func (c *Central) Key(device string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.keys[device]
	return k, ok
}

// Remember stores a long-term key for a device address, as a central that
// keeps its bonds elsewhere (the phone bridge's key store) hands it back.
func (c *Central) Remember(device, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[device] = key
}

// Forget drops the central's keys for a device, as "forget this device" does on a phone.
func (c *Central) Forget(device string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keys, device)
}
