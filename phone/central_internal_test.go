package phone

import (
	"os"
	"path/filepath"
	"testing"
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
