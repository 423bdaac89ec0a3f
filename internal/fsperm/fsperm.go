// Package fsperm lets tests meet file permissions as an ordinary user
// does, also when they run as root: Enforced runs a function on an
// operating-system thread of its own that lacks the capabilities with which
// root reads and writes files whatever their modes (CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH). A file of mode 0 is then unreadable to it, as to
// any user, and the rest of the process keeps its privileges.
package fsperm

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Enforced calls f on a thread on which file permissions hold for root too,
// and returns once f has returned. Only what f does itself, on its own
// goroutine, runs there. The thread ends with f: it is never given back to
// other goroutines.
func Enforced(f func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if err := dropOverride(); err != nil {
			errc <- err
			return
		}
		f()
		errc <- nil
	}()
	return <-errc
}

// dropOverride takes the permission-override capabilities out of the
// calling thread's effective set.
func dropOverride() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
	return unix.Capset(&hdr, &data[0])
}
