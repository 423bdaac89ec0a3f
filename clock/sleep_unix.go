//go:build unix

package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep sleeps d in the kernel, to within the thread's timer slack
// (50 µs by default) rather than the runtime timers' millisecond.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
