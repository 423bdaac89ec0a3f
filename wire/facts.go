package wire

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Timing of sessions, which clients and devices share.
const (
	// PingInterval is how often clients ping while idle.
	PingInterval = 2 * time.Second
	// SessionTimeout ends a line session whose client has been silent.
	SessionTimeout = 10 * time.Second
)

// DefaultBaud is the baud rate of a real serial port.
const DefaultBaud = 115200

// DefaultAddress is the TCP address of a device program's first device,
// the port the device family's PC simulator uses.
const DefaultAddress = "127.0.0.1:7809"

// DefaultStateDir is where a device program keeps each device's state,
// with the link to its pseudo-terminal at <dir>/<serial>/tty, which
// clients list: $XDG_STATE_HOME/senseboard, or ~/.local/state/senseboard.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "senseboard")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "senseboard")
	}
	return filepath.Join(os.TempDir(), "senseboard-state")
}

// NewToken returns a new random session token for a Hello.
func NewToken() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("session token: %v", err)) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// RefuseCode says in RefuseMsg.Code why a device refused a session, for
// clients to act on; the message's Error says it for people.
type RefuseCode string

// The refusal codes.
const (
	// RefuseBusy: the line serves another session (one per serial line).
	// A client that just ended its own session may retry.
	RefuseBusy RefuseCode = "busy"
	// RefuseVersion: the device does not speak the client's protocol version.
	RefuseVersion RefuseCode = "version"
	// RefuseMalformed: the hello is not a hello message.
	RefuseMalformed RefuseCode = "malformed"
	// RefuseLimit: the device, or the program that runs it, serves as many
	// connections as it may. A client may retry once others have closed.
	RefuseLimit RefuseCode = "limit"
	// RefuseSerial: the hello names no device the port serves, or names
	// none on a port that serves a fleet of devices.
	RefuseSerial RefuseCode = "serial"
)
