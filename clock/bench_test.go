package clock_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"senseboard/clock"
)

// BenchmarkFleetCalls runs the calls of a fleet's streams on the virtual
// clock: 50,000 calls, each scheduling itself again at its own rate (13,
// 8 or 4 a second, as a device's motion, ECG and heart-rate streams), the
// calls of 2,000 devices. It reports the time per call, the clock's
// ordering of them included, in CPU time (getrusage), which a busy machine
// disturbs less than the time it takes.
func BenchmarkFleetCalls(b *testing.B) {
	c := clock.NewVirtual()
	periods := []time.Duration{time.Second / 13, time.Second * 16 / 125, time.Second / 4}
	ran := 0
	for i := range 50000 {
		p := periods[i%len(periods)]
		var call *clock.Call
		next := time.Duration(i) * time.Microsecond
		call = clock.NewCall(c, func() {
			ran++
			next += p
			call.At(next)
		})
		call.At(next)
	}
	c.Advance(time.Second)
	ran = 0
	cpu0 := cpuTime()
	for b.Loop() {
		c.Advance(time.Second)
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(ran), "ns-CPU/call")
}

// cpuTime returns the process's CPU time, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCallStop stops a pending Call among the calls of a fleet's
// streams on the virtual clock, and schedules it again: its Stop takes
// the call's entry out of the clock's heap, which it scans for it.
func BenchmarkCallStop(b *testing.B) {
	for _, n := range []int{15000, 50000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			c := clock.NewVirtual()
			periods := []time.Duration{time.Second / 13, time.Second * 16 / 125, time.Second / 4}
			calls := make([]*clock.Call, n)
			for i := range calls {
				calls[i] = clock.NewCall(c, func() {})
				calls[i].At(time.Duration(i) * periods[i%len(periods)] / time.Duration(n))
			}
			i := 0
			for b.Loop() {
				call := calls[i*7919%n] // all over the heap
				at := time.Duration(i%n) * periods[i%len(periods)] / time.Duration(n)
				call.Stop()
				call.At(at)
				i++
			}
		})
	}
}
