package needs

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCIInstallsEverything: every Debian package a test asks for
// ("Debian: apt-get install P") is one .ci/run installs, and every file of
// the shared test data .ci/data fetches is the one the tests have here.
func TestCIInstallsEverything(t *testing.T) {
	root := filepath.Join("..", "..")
	apt, err := os.ReadFile(filepath.Join(root, ".ci", "apt-packages"))
	if err != nil {
		t.Fatal(err)
	}
	var installed []string
	for _, l := range strings.Split(string(apt), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			installed = append(installed, l)
		}
	}
	asked := regexp.MustCompile(`Debian: apt-get install ([a-z0-9][a-z0-9.+-]*)`)
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Dir(path) == filepath.Join(root, "internal", "needs") {
			return err // this package's tests ask for packages that do not exist
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range asked.FindAllSubmatch(b, -1) {
			seen++
			if pkg := string(m[1]); !slices.Contains(installed, pkg) && pkg != "bash" {
				t.Errorf("%s asks for the Debian package %s, which .ci/apt-packages does not list", path, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 3 {
		t.Errorf("%d tests ask for Debian packages; the tests of Chromium, websockets and MNE do", seen)
	}

	f, err := os.Open(filepath.Join(root, ".ci", "data-files"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 3 || len(fields[0]) != 64 || !strings.HasPrefix(fields[2], "https://") {
			t.Errorf(".ci/data-files: %q is not: sha256, path, https URL", sc.Text())
			continue
		}
		b, err := os.ReadFile(filepath.Join(DataDir(), filepath.FromSlash(fields[1])))
		if err != nil {
			continue // not here: .ci/data fetches it
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != fields[0] {
			t.Errorf(".ci/data-files: %s here has SHA-256 %x, the list says %s", fields[1], sum, fields[0])
		}
	}
}
