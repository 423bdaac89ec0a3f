package phone

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The central address derived from a state directory is a static random
// one (its two top bits set), the same whether the directory is named by
// an absolute path or a relative one, and another for another directory.
func TestDeriveCentral(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs := deriveCentral(filepath.Join(wd, "state"))
	for _, tt := range []struct {
		dir  string
		same bool
	}{
		{"state", true},
		{"./state", true},
		{filepath.Join(wd, "state"), true},
		{"other", false},
	} {
		got := deriveCentral(tt.dir)
		if (got == abs) != tt.same {
			t.Errorf("deriveCentral(%q) = %s, that of %s/state is %s; want the same %v", tt.dir, got, wd, abs, tt.same)
		}
		if !addressRE.MatchString(got) || got[0] < 'C' {
			t.Errorf("deriveCentral(%q) = %s, want XX:XX:XX:XX:XX:XX with the two top bits set", tt.dir, got)
		}
	}
}

// A phone's settings left out, or zero or negative where only a positive
// one makes sense, take their defaults; those given are kept, a negative
// Idle too (it keeps connections).
func TestNewDefaults(t *testing.T) {
	type settings struct {
		name                string
		idle, scan, timeout time.Duration
	}
	for _, tt := range []struct {
		in   Config
		want settings
	}{
		{Config{}, settings{DefaultName, DefaultIdle, time.Second, 5 * time.Second}},
		{Config{Idle: -1, ScanInterval: -1, Timeout: -1}, settings{DefaultName, -1, time.Second, 5 * time.Second}},
		{Config{Name: "x", Idle: 1, ScanInterval: 1, Timeout: 1}, settings{"x", 1, 1, 1}},
	} {
		ph, err := New(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got := settings{ph.cfg.Name, ph.cfg.Idle, ph.cfg.ScanInterval, ph.cfg.Timeout}
		ph.Close()
		if got != tt.want {
			t.Errorf("New(%+v): %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// A phone that cannot start lets go of its state directory, which another
// phone may then take.
func TestNewFailsFreeingTheStateDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(Config{StateDir: dir, Address: "not an address"}); err == nil {
		t.Fatal("a phone of central address \"not an address\" started")
	}
	ph, err := New(Config{StateDir: dir})
	if err != nil {
		t.Fatalf("the state directory of a phone that failed to start: %v", err)
	}
	ph.Close()
}
