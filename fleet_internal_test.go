package senseboard

import (
	"errors"
	"strings"
	"testing"
)

// TestFleetFiles: a fleet counts the file descriptors its listeners and
// pseudo-terminals take before any connection, and one that needs more
// than the process may open is refused with what to give instead.
func TestFleetFiles(t *testing.T) {
	for _, c := range []struct {
		opts FleetOptions
		need int
		fix  []string
	}{
		{FleetOptions{Devices: 1000, Listen: "127.0.0.1:7809"}, programFiles + 1000*(1+ptyFiles), []string{"--listen-fleet", "--pty none"}},
		{FleetOptions{Devices: 1000, Listen: "127.0.0.1:7809", PTY: "none"}, programFiles + 1000, []string{"--listen-fleet"}},
		{FleetOptions{Devices: 1000, Listen: "none", PTY: "/tmp/x"}, programFiles + 1000*ptyFiles, []string{"--pty none"}},
		{FleetOptions{Devices: 1000, Listen: "none", PTY: "none", ListenFleet: "127.0.0.1:7900"}, programFiles + 1, nil},
	} {
		if got := c.opts.files(); got != c.need {
			t.Errorf("%+v: %d files, want %d", c.opts, got, c.need)
		}
		if err := c.opts.checkFiles(c.need); err != nil {
			t.Errorf("%+v: refused with room for it: %v", c.opts, err)
		}
		if err := c.opts.checkFiles(0); err != nil {
			t.Errorf("%+v: refused with no limit: %v", c.opts, err)
		}
		err := c.opts.checkFiles(c.need - 1)
		if !errors.Is(err, ErrFiles) || !strings.Contains(err.Error(), "1000 devices need about") || !strings.Contains(err.Error(), "ulimit -Hn") {
			t.Errorf("%+v: one short: %v", c.opts, err)
			continue
		}
		for _, f := range c.fix {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("%+v: the refusal does not say %s: %v", c.opts, f, err)
			}
		}
	}
}
