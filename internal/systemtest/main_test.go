// Package systemtest holds the tests of complete devices on their calling
// paths, across packages and programs: streams byte for byte over the
// serial protocol and the radio, the radio's throughput, the README's
// tour on built programs, devices and bridges of several programs on one
// NATS network, and the benchmarks of devices and fleets
// (docs/performance.md gives the commands).
package systemtest_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/clock"
	"senseboard/senseboardtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// next returns what ch gives and whether it was open, and fails the test,
// saying that what did not happen, after a minute.
func next[T any](t *testing.T, ch <-chan T, what string) (v T, open bool) {
	t.Helper()
	select {
	case v, open = <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("after a minute, %s", what)
	}
	return v, open
}

// drained takes what ch still gives until it closes, and fails the test,
// saying that what did not happen, if it is still open after a minute.
func drained[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	guard := time.After(time.Minute)
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

// newDevice starts a device of the default profile on a virtual clock,
// closed when the test ends.
func newDevice(t testing.TB) (*senseboard.Device, *clock.Virtual) {
	r := senseboardtest.New(t, senseboard.Config{})
	return r.Device, r.Clock
}
