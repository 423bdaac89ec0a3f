package bridge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// go test ./bridge -run TestDashboard -artifacts -outputdir out works where
// out does not exist yet: the package's tests make it (TestMain), so the
// dashboard's screenshots have somewhere to go.
func TestOutputDirIsMade(t *testing.T) {
	if os.Getenv("SENSEBOARD_OUTPUTDIR_CHILD") != "" {
		return // the run below: nothing to do but TestMain's work
	}
	out := filepath.Join(t.TempDir(), "not", "there", "out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutputDirIsMade$", "-test.artifacts", "-test.outputdir="+out)
	cmd.Env = append(os.Environ(), "SENSEBOARD_OUTPUTDIR_CHILD=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the tests with -outputdir %s: %v\n%s", out, err, b)
	}
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		t.Errorf("-outputdir %s after the tests: %v", out, err)
	}
}
