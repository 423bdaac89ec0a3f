//go:build !unix

package clock

import "time"

// preciseSleep sleeps d.
func preciseSleep(d time.Duration) { time.Sleep(d) }
