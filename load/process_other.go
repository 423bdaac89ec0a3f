//go:build !linux

package load

// ReadUsage returns errNoProc: the load reads processes on Linux only.
func ReadUsage(pid int) (Usage, error) { return Usage{}, errNoProc }

// LoadAverage returns errNoProc.
func LoadAverage() ([3]float64, error) { return [3]float64{}, errNoProc }

// ListenerPID returns 0: the load finds processes on Linux only.
func ListenerPID(address string) int { return 0 }

// MachineCPU returns errNoProc.
func MachineCPU() (busy, idle int64, err error) { return 0, 0, errNoProc }
