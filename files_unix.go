//go:build unix

package senseboard

import "syscall"

// fileLimit raises the process's soft limit of open files to its hard
// limit, where a Go program's start has not (the runtime does on most
// systems), and returns the limit; 0 when the system does not say.
func fileLimit() int {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	if r.Cur < r.Max {
		raised := r
		raised.Cur = r.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			r = raised
		}
	}
	if r.Cur > 1<<30 {
		return 1 << 30
	}
	return int(r.Cur)
}
