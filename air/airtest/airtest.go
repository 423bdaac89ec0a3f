// Package airtest helps tests that put devices on the air: a free
// loopback address for the computer's NATS server, and links to it that
// close when the test ends.
package airtest

import (
	"testing"

	"senseboard/air"
	"senseboard/internal/loopback"
)

// FreeLocal returns a loopback address with a free port.
func FreeLocal(tb testing.TB) string {
	tb.Helper()
	return loopback.FreeAddr(tb)
}

// Local joins (or starts) the local server at addr, as air.Local does,
// until the test ends.
func Local(tb testing.TB, addr string, o air.Options) *air.Link {
	tb.Helper()
	l, err := air.Local(addr, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}
