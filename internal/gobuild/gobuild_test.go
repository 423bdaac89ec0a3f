package gobuild_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"senseboard/internal/gobuild"
)

// TestProgram builds a program that runs, and names the package of a
// build that fails.
func TestProgram(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dst := filepath.Join(t.TempDir(), "wbcmd")
	if err := gobuild.Program("senseboard/cmd/wbcmd", dst); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(dst, "-h").CombinedOutput(); !strings.Contains(string(out), "--port") {
		t.Errorf("the built wbcmd -h: %v\n%s", err, out)
	}
	if err := gobuild.Program("senseboard/no/such/program", filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "senseboard/no/such/program") {
		t.Errorf("a package that is not there: %v", err)
	}
}
