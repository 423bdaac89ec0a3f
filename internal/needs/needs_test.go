package needs

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// recorder is a test that records how it ended instead of ending.
type recorder struct {
	testing.TB
	name            string
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Name() string                      { return r.name }
func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// nopCloser is a terminal for the test.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestMissing: a missing dependency skips the test, saying what to
// install, and says so on the terminal with the test's package and name;
// under CI it fails the test with the same reason, and the terminal hears
// nothing.
func TestMissing(t *testing.T) {
	var tty bytes.Buffer
	terminal = func() io.WriteCloser { return nopCloser{&tty} }
	t.Cleanup(func() { terminal = func() io.WriteCloser { return nil } })

	for _, ci := range []string{"", "false", "true", "1"} {
		t.Setenv("CI", ci)
		tty.Reset()
		r := &recorder{TB: t, name: "TestMissing/sub"}
		got := Program(r, "A program", "Debian: apt-get install a-program", "no-such-program-1", "no-such-program-2")
		want := "A program is missing: none of no-such-program-1, no-such-program-2 on PATH (Debian: apt-get install a-program)"
		if got != "" {
			t.Errorf("CI=%q: found %q", ci, got)
		}
		if ci == "true" || ci == "1" {
			if r.failed != want+"; CI runs every test" || r.skipped != "" || tty.Len() > 0 {
				t.Errorf("CI=%q: failed %q, skipped %q, terminal %q; want a failure %q", ci, r.failed, r.skipped, tty.String(), want)
			}
			continue
		}
		if r.skipped != want || r.failed != "" {
			t.Errorf("CI=%q: skipped %q, failed %q; want a skip %q", ci, r.skipped, r.failed, want)
		}
		if line := "go test: SKIP senseboard/internal/needs TestMissing/sub: " + want + "\n"; tty.String() != line {
			t.Errorf("CI=%q: the terminal heard %q, want %q", ci, tty.String(), line)
		}
	}

	t.Setenv("CI", "")
	t.Setenv("SENSEBOARD_DATA", t.TempDir())
	r := &recorder{TB: t, name: "TestData"}
	Data(r, "mitdb/999.hea")
	if !strings.Contains(r.skipped, "the test data mitdb/999.hea is absent") || !strings.Contains(r.skipped, ".ci/data DIR fetches it, then set SENSEBOARD_DATA=DIR") {
		t.Errorf("absent data: skipped %q", r.skipped)
	}
	t.Setenv("CI", "true")
	t.Setenv("SENSEBOARD_DATA", DataAbsent)
	r = &recorder{TB: t, name: "TestData"}
	Data(r, "mitdb/100.hea")
	if !strings.Contains(r.skipped, "declares the shared test data unavailable") || r.failed != "" {
		t.Errorf("data declared absent under CI: skipped %q, failed %q", r.skipped, r.failed)
	}
	t.Setenv("CI", "")
	r = &recorder{TB: t, name: "TestPython"}
	Python(r, "no_such_module_of_senseboard", "apt-get install python3-x")
	if r.skipped != "no python3 with the module no_such_module_of_senseboard (apt-get install python3-x)" {
		t.Errorf("a Python module: skipped %q", r.skipped)
	}
}

// TestFound: what is there is returned, and the test goes on.
func TestFound(t *testing.T) {
	r := &recorder{TB: t, name: "TestFound"}
	if p := Program(r, "a shell", "apt-get install bash", "no-such-program", "sh"); p == "" || r.skipped != "" || r.failed != "" {
		t.Errorf("sh: %q, skipped %q, failed %q", p, r.skipped, r.failed)
	}
	t.Setenv("SENSEBOARD_DATA", ".")
	if p := Data(r, "needs.go"); p != "needs.go" || r.skipped != "" {
		t.Errorf("a file that is there: %q, skipped %q", p, r.skipped)
	}
}
