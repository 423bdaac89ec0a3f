// Package needs is how a test says that it needs something the machine may
// lack: a program, a Python module, a file of the shared test data. When it
// is missing, the test skips with a message that names what to install or
// fetch; under CI=true it fails with that message instead, so that CI runs
// every test (.ci/run installs and fetches everything).
//
// go test hides what a passing package's tests print, skips included; so
// a skip is also said at once on the terminal go test runs in (/dev/tty),
// one line per test, for example:
//
//	go test: SKIP senseboard/bridge TestDashboard: Chromium is missing (Debian: apt-get install chromium)
//
// Without a terminal (a pipe, an editor), go test -v shows the skips.
package needs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"senseboard/internal/syspython"
)

// Program returns the path of the first of names found on PATH. When none
// is, the test skips, or fails under CI, saying that what is missing, and
// how to install it.
func Program(tb testing.TB, what, install string, names ...string) string {
	tb.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(tb, fmt.Sprintf("%s is missing: none of %s on PATH (%s)", what, strings.Join(names, ", "), install))
	return ""
}

// Python returns a Python interpreter that can import module: python3 on
// PATH or the system's (syspython.With). When neither can, the test skips,
// or fails under CI, naming the package to install.
func Python(tb testing.TB, module, install string) string {
	tb.Helper()
	py := syspython.With(module)
	if py == "" {
		Missing(tb, fmt.Sprintf("no python3 with the module %s (%s)", module, install))
	}
	return py
}

// DataDir returns the directory of the shared test data: $SENSEBOARD_DATA,
// or else shared/data beside the module's directory.
func DataDir() string {
	if d := os.Getenv("SENSEBOARD_DATA"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	for err == nil {
		if _, serr := os.Stat(filepath.Join(dir, "go.mod")); serr == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			err = fs.ErrNotExist
		}
		dir = parent
	}
	return filepath.Join(dir, "..", "shared", "data")
}

// DataAbsent is the value of $SENSEBOARD_DATA that declares the shared
// test data unavailable on this machine: .ci/run sets it when the data is
// neither beside the checkout nor fetchable, and says so. The tests that
// read the data then skip, under CI too, since nothing was left out by
// mistake.
const DataAbsent = "absent"

// Data returns the path of the file rel (slash-separated) in the shared
// test data (DataDir). When it is absent, the test skips, or fails under
// CI, saying how to fetch it; when $SENSEBOARD_DATA is DataAbsent, it skips.
func Data(tb testing.TB, rel string) string {
	tb.Helper()
	if os.Getenv("SENSEBOARD_DATA") == DataAbsent {
		tb.Skip(fmt.Sprintf("the test data %s: SENSEBOARD_DATA=%s declares the shared test data unavailable here", rel, DataAbsent))
		return ""
	}
	p := filepath.Join(DataDir(), filepath.FromSlash(rel))
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		Missing(tb, fmt.Sprintf("the test data %s is absent (%s): .ci/data DIR fetches it, then set SENSEBOARD_DATA=DIR", rel, p))
	}
	return p
}

// Missing skips the test, saying why: what is missing and how to get it.
// Under CI it fails the test instead.
func Missing(tb testing.TB, why string) {
	tb.Helper()
	if CI() {
		tb.Fatalf("%s; CI runs every test", why)
		return
	}
	if w := terminal(); w != nil {
		fmt.Fprintf(w, "go test: SKIP %s %s: %s\n", packageOf(tb), tb.Name(), why)
		w.Close()
	}
	tb.Skip(why)
}

// CI reports whether the tests run in CI: $CI is true (as CI services set
// it, and .ci/run does).
func CI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// terminal opens the terminal of the process, or returns nil without one.
// Tests replace it.
var terminal = func() io.WriteCloser {
	f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	return f
}

// packageOf returns the import path of the package of the test: the
// package of the test's function among the callers.
func packageOf(tb testing.TB) string {
	test, _, _ := strings.Cut(tb.Name(), "/")
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		// a function's name is its package's import path, a dot and its
		// name in the package (Test..., Test....funcN for a subtest's)
		slash := strings.LastIndex(f.Function, "/")
		pkg, name, _ := strings.Cut(f.Function[slash+1:], ".")
		if name == test || strings.HasPrefix(name, test+".") {
			return f.Function[:slash+1] + strings.TrimSuffix(pkg, "_test")
		}
		if !more {
			return "?"
		}
	}
}
