// Package gobuild builds the module's programs for tests that run them as
// separate processes. It builds through the go command's cache of the
// programs of go run, so that a program is linked once for all the tests of
// a run, in whichever package they are, and again only when its code
// changes; each test gets a copy of its own.
package gobuild

import (
	"fmt"
	"os/exec"
)

// Program builds the main package pkg (an import path of the module, such
// as "senseboard/cmd/wbcmd") into the executable file dst.
func Program(pkg, dst string) error {
	// go run -exec X pkg args runs "X program args": here cp copies the
	// program that go run built, or found in its cache, to dst.
	out, err := exec.Command("go", "run", "-exec", "cp", pkg, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	return nil
}
