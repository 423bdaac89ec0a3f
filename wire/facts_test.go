package wire

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultStateDir(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err)
	}
	for _, tt := range []struct {
		xdg, want string
	}{
		{"/var/state", "/var/state/senseboard"},
		{"", filepath.Join(home, ".local", "state", "senseboard")},
	} {
		t.Setenv("XDG_STATE_HOME", tt.xdg)
		if got := DefaultStateDir(); got != tt.want {
			t.Errorf("XDG_STATE_HOME=%q: %s, want %s", tt.xdg, got, tt.want)
		}
	}
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok := NewToken()
		if b, err := hex.DecodeString(tok); err != nil || len(b) != 8 || seen[tok] {
			t.Fatalf("token %q: not 8 random bytes in hex (%v), or seen before", tok, err)
		}
		seen[tok] = true
	}
}
