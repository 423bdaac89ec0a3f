// Package air owns the local radio link between senseboard programs on one
// computer. A device is on the air while it listens on a Unix socket named
// <serial>.sock in the air directory and serves the radio link there (see
// serial.Server.ServeRadio): each stream is one central in range of the
// device, which scans, connects and pairs as over BLE. A central, such as
// the phone bridge of another senseboard program, finds the devices by
// listing the directory.
package air

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Suffix ends the name of a device's socket.
const Suffix = ".sock"

// DefaultDir returns $XDG_RUNTIME_DIR/senseboard/air, or
// <temp>/senseboard-<uid>/air where there is no runtime directory.
func DefaultDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "senseboard", "air")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("senseboard-%d", os.Getuid()), "air")
}

// Listen puts the device with a serial number on the air in dir. A socket
// left behind by a program that died is replaced; one that answers belongs
// to a running program, and Listen refuses to take its place.
func Listen(dir, serial string) (net.Listener, error) {
	if serial == "" || strings.ContainsAny(serial, `/\`) || strings.HasPrefix(serial, ".") {
		return nil, fmt.Errorf("air: serial %q cannot name a socket", serial)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("air: %w", err)
	}
	path := filepath.Join(dir, serial+Suffix)
	if _, err := os.Lstat(path); err == nil {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("air: device %s is on the air already, served by another program (%s)", serial, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("air: remove the stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("air: device %s: %w", serial, err)
	}
	return ln, nil
}

// Device is a device on the air.
type Device struct {
	Serial string
	Path   string // its socket
}

// List returns the devices whose sockets are in dir, by serial number. A
// directory that does not exist holds none.
func List(dir string) ([]Device, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("air: %w", err)
	}
	var out []Device
	for _, e := range entries {
		serial, ok := strings.CutSuffix(e.Name(), Suffix)
		if !ok || e.Type()&os.ModeSocket == 0 {
			continue
		}
		out = append(out, Device{Serial: serial, Path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Serial < out[j].Serial })
	return out, nil
}

// Dial opens a stream to a device on the air.
func Dial(ctx context.Context, d Device) (net.Conn, error) {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "unix", d.Path)
	if err != nil {
		return nil, fmt.Errorf("air: device %s: %w", d.Serial, err)
	}
	return c, nil
}
