// Package airtest helps tests that put devices on the air: a free
// loopback address for the computer's NATS server, a token file for it
// that the test owns, and links to it that close when the test ends.
package airtest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"senseboard/air"
	"senseboard/internal/loopback"
)

// Main runs the tests of a package, as TestMain, with XDG_STATE_HOME in
// a directory of their own: the programs they run keep the token of the
// computer's NATS server, and whatever else they keep in the user's state
// directory, there instead. It exits with the tests' code.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "senseboard-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// FreeLocal returns a loopback address with a free port.
func FreeLocal(tb testing.TB) string {
	tb.Helper()
	return loopback.FreeAddr(tb)
}

// tokenFiles holds each running test's token file.
var tokenFiles sync.Map // testing.TB → string

// TokenFile returns the file of the token of the test's local NATS
// servers, in a directory of the test's own, instead of the user's: one
// file for all the links of the test, as for all the programs of a user.
func TokenFile(tb testing.TB) string {
	tb.Helper()
	if f, ok := tokenFiles.Load(tb); ok {
		return f.(string)
	}
	f, _ := tokenFiles.LoadOrStore(tb, filepath.Join(tb.TempDir(), "nats.token"))
	tb.Cleanup(func() { tokenFiles.Delete(tb) })
	return f.(string)
}

// Local joins (or starts) the local server at addr, as air.Local does,
// until the test ends; the test's TokenFile serves when o names none.
func Local(tb testing.TB, addr string, o air.Options) *air.Link {
	tb.Helper()
	if o.TokenFile == "" {
		o.TokenFile = TokenFile(tb)
	}
	l, err := air.Local(addr, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}
