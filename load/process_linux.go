package load

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times of /proc/PID/stat: a hundredth of a
// second on every Linux system.
const userHZ = 100

// ReadUsage reads what a process has used from /proc: its CPU time, user
// and system, from /proc/PID/stat, and its resident set (VmRSS) from
// /proc/PID/status.
func ReadUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("load: process %d: %w", pid, err)
	}
	// the command's name, in parentheses, may hold spaces: the fields
	// follow the last parenthesis, state first (field 3)
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 13 {
		return Usage{}, fmt.Errorf("load: process %d: /proc/%d/stat does not parse", pid, pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return Usage{}, fmt.Errorf("load: process %d: /proc/%d/stat does not parse", pid, pid)
	}
	u := Usage{CPU: time.Duration(utime+stime) * time.Second / userHZ}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("load: process %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return Usage{}, fmt.Errorf("load: process %d: VmRSS %q does not parse", pid, v)
			}
			u.RSS = kb << 10
		}
	}
	return u, nil
}

// LoadAverage reads the system's load averages over 1, 5 and 15 minutes.
func LoadAverage() ([3]float64, error) {
	var la [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return la, err
	}
	f := strings.Fields(string(b))
	for i := range la {
		if i >= len(f) {
			return la, fmt.Errorf("load: /proc/loadavg does not parse")
		}
		if la[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return la, fmt.Errorf("load: /proc/loadavg does not parse")
		}
	}
	return la, nil
}

// MachineCPU reads the computer's CPU time from /proc/stat, all its
// processors together: busy and idle (idle and waiting for I/O), in
// clock ticks.
func MachineCPU() (busy, idle int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("load: /proc/stat does not parse")
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("load: /proc/stat does not parse")
		}
		switch {
		case i == 3 || i == 4: // idle, iowait
			idle += n
		case i < 8: // user, nice, system, irq, softirq, steal
			busy += n
		}
	}
	return busy, idle, nil
}

// ListenerPID finds the process of this computer that listens on a TCP
// address (host:port; the host a name or address of this computer), from
// /proc/net/tcp and tcp6 and the processes' descriptors; 0 when none that
// the load may read does.
func ListenerPID(address string) int {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return 0
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || !local(host) {
		return 0
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			if pb, err := hex.DecodeString(hexPort); ok && err == nil && len(pb) == 2 && uint64(pb[0])<<8|uint64(pb[1]) == p {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && inodes[l] {
				return pid
			}
		}
	}
	return 0
}

// local reports whether host names this computer: loopback, or one of its
// addresses or its name.
func local(host string) bool {
	if host == "localhost" {
		return true
	}
	if name, err := os.Hostname(); err == nil && strings.EqualFold(host, name) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
