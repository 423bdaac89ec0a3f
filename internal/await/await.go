// Package await holds the tests' hang guards: waits for what a test
// expects that fail the test, saying what did not happen, after a minute,
// rather than hang until the test binary's timeout ends every test of the
// package. A minute bounds no speed: a loaded machine does not reach it.
package await

import (
	"testing"
	"time"
)

// Guard is how long a wait lasts before it fails the test.
const Guard = time.Minute

// Within returns what ch gives, or its zero value once ch is closed, and
// fails t, saying that what did not happen, after Guard.
func Within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	v, _ := Next(t, ch, what)
	return v
}

// Next returns what ch gives and whether it was open, and fails t, saying
// that what did not happen, after Guard.
func Next[T any](t testing.TB, ch <-chan T, what string) (v T, open bool) {
	t.Helper()
	select {
	case v, open = <-ch:
	case <-time.After(Guard):
		t.Fatalf("after a minute, %s", what)
	}
	return v, open
}

// Drained takes what ch still gives until it closes, and fails t, saying
// that what did not happen, if it is still open after Guard.
func Drained[T any](t testing.TB, ch <-chan T, what string) {
	t.Helper()
	guard := time.After(Guard)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-guard:
			t.Fatalf("after a minute, %s", what)
		}
	}
}
