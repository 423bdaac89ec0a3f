// Package systemtest holds the tests of complete devices on their calling
// paths, across packages and programs: streams byte for byte over the
// serial protocol and the radio, the radio's throughput, the README's
// tour on built programs, devices and bridges of several programs on one
// NATS network, and the benchmarks of devices and fleets
// (docs/performance.md gives the commands).
package systemtest_test

import (
	"testing"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/clock"
	"senseboard/senseboardtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newDevice starts a device of the default profile on a virtual clock,
// closed when the test ends.
func newDevice(t testing.TB) (*senseboard.Device, *clock.Virtual) {
	r := senseboardtest.New(t, senseboard.Config{})
	return r.Device, r.Clock
}
