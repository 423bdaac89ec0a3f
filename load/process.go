package load

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Usage is what a process has used: its CPU time and its memory.
type Usage struct {
	CPU time.Duration // user and system time, all its threads together
	RSS int64         // resident set, bytes
}

// ProcessReport is what a process cost while the load measured, as its
// user sees it: the process's CPU time and resident memory, each divided
// by the devices.
type ProcessReport struct {
	PID int
	// CPU is the CPU time the process took since the subscriptions were
	// made, and PerDeviceSecond that divided by the devices and the
	// seconds.
	CPU             time.Duration
	PerDeviceSecond time.Duration
	// RSS is its resident memory now, and PerDevice that divided by the
	// devices.
	RSS, PerDevice int64
	// IdleRSS is its resident memory before the load connected, its
	// devices idle, and IdlePerDevice that divided by the devices; 0 when
	// not known.
	IdleRSS, IdlePerDevice int64
}

// errNoProc is a system whose processes the load cannot read.
var errNoProc = errors.New("the load reads processes' figures on Linux only")

// meter measures a process from when it starts.
type meter struct {
	pid   int
	idle  Usage // before the load connected
	start Usage // when the subscriptions were made
	at    time.Time
}

// hostName is this computer's name, as a device's program names its own.
var hostName, _ = os.Hostname()

// newMeter starts measuring a process, its usage now its idle usage.
func newMeter(pid int) (*meter, error) {
	u, err := ReadUsage(pid)
	if err != nil {
		return nil, err
	}
	return &meter{pid: pid, idle: u}, nil
}

// startMeters starts measuring the devices' program, when cfg names its
// process or its TCP address is of this computer, and the load's own
// process. An error says that cfg's PID cannot be read.
func startMeters(cfg Config) (dev, self *meter, err error) {
	self, _ = newMeter(os.Getpid())
	pid := cfg.PID
	if pid == 0 && len(cfg.Addrs) > 0 {
		addr, _, _ := strings.Cut(cfg.Addrs[0], "/") // a fleet port's host:port/serial
		pid = ListenerPID(addr)
	}
	if pid > 0 {
		if dev, err = newMeter(pid); err != nil && cfg.PID == 0 {
			err = nil // found, but gone or not the load's to read
		} else if err != nil {
			err = fmt.Errorf("load: %w: the devices' process: %w", ErrConfig, err)
		}
	}
	return dev, self, err
}

// begin notes the process's usage when the subscriptions were made.
func (m *meter) begin(at time.Time) {
	if m == nil {
		return
	}
	m.start, m.at = m.idle, at
	if u, err := ReadUsage(m.pid); err == nil {
		m.start = u
	}
}

// report measures the process now, against n devices.
func (m *meter) report(n int, now time.Time) *ProcessReport {
	if m == nil || n == 0 {
		return nil
	}
	u, err := ReadUsage(m.pid)
	if err != nil {
		return nil
	}
	r := &ProcessReport{PID: m.pid, CPU: u.CPU - m.start.CPU, RSS: u.RSS, PerDevice: u.RSS / int64(n),
		IdleRSS: m.idle.RSS, IdlePerDevice: m.idle.RSS / int64(n)}
	if secs := now.Sub(m.at).Seconds(); secs > 0 {
		r.PerDeviceSecond = time.Duration(float64(r.CPU) / float64(n) / secs)
	}
	return r
}
