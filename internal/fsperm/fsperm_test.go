package fsperm_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"senseboard/internal/fsperm"
)

func TestEnforced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	var inside error
	if err := fsperm.Enforced(func() { _, inside = os.ReadFile(path) }); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inside, fs.ErrPermission) {
		t.Errorf("a file of mode 0 read as %v, want permission denied", inside)
	}
	if os.Geteuid() == 0 {
		if _, err := os.ReadFile(path); err != nil {
			t.Errorf("after Enforced root cannot read: %v", err)
		}
	}
}
