package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
)

// motion returns an IMU6 notification of n samples at Timestamp ts.
func motion(ts uint32, n int) []byte {
	xyz := strings.Repeat(`{"x":1.5,"y":-2,"z":9.8},`, n)
	xyz = strings.TrimSuffix(xyz, ",")
	return fmt.Appendf(nil, `{"Timestamp":%d,"ArrayAcc":[%s],"ArrayGyro":[%s]}`, ts, xyz, xyz)
}

// ecg returns an ECG notification of n samples at Timestamp ts.
func ecg(ts uint32, n int) []byte {
	s := strings.TrimSuffix(strings.Repeat("-12,", n), ",")
	return fmt.Appendf(nil, `{"Samples":[%s],"Timestamp":%d}`, s, ts)
}

func TestTallyCountsGaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name                            string
		path                            string
		payloads                        [][]byte
		samples, lost, disorder, notifs int64
	}{
		{"IMU6 at 52 in order", "/Meas/IMU6/52", [][]byte{motion(100, 4), motion(176, 4), motion(253, 4), motion(330, 4)}, 16, 0, 0, 4},
		{"IMU6 at 52, two notifications missing", "/Meas/IMU6/52", [][]byte{motion(100, 4), motion(176, 4), motion(407, 4)}, 12, 8, 0, 3},
		{"ECG at 125, one missing", "/Meas/ECG/125", [][]byte{ecg(0, 16), ecg(128, 16), ecg(384, 16)}, 48, 16, 0, 3},
		{"IMU9 at 1666, ms timestamps", "/Meas/IMU9/1666", [][]byte{motion(0, 8), motion(4, 8), motion(9, 8), motion(14, 8), motion(19, 8)}, 40, 0, 0, 5},
		{"IMU9 at 1666, one missing", "/Meas/IMU9/1666", [][]byte{motion(0, 8), motion(4, 8), motion(14, 8)}, 24, 8, 0, 3},
		{"a timestamp that goes back", "/Meas/IMU6/52", [][]byte{motion(100, 4), motion(90, 4)}, 8, 0, 1, 2},
		{"no samples", "/Meas/IMU6/52", [][]byte{[]byte(`{"Timestamp":5,"ArrayAcc":[]}`)}, 0, 0, 1, 1},
		{"not a notification of the stream", "/Meas/ECG/125", [][]byte{ecg(0, 16), []byte(`{"Samples":[1.5]}`), ecg(128, 16)}, 32, 0, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rate, err := PathRate(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			tl := newTally(tt.path, rate, nil)
			for i, p := range tt.payloads {
				tl.add(p, t0.Add(time.Duration(i)*time.Second))
			}
			if tl.samples != tt.samples || tl.lost != tt.lost || tl.disorder != tt.disorder || tl.notifications != tt.notifs {
				t.Errorf("samples %d lost %d disorder %d notifications %d, want %d %d %d %d",
					tl.samples, tl.lost, tl.disorder, tl.notifications, tt.samples, tt.lost, tt.disorder, tt.notifs)
			}
		})
	}
}

func TestTallyLateness(t *testing.T) {
	// ECG at 125 Hz, 16 samples (128 ms) a notification; the first arrives
	// 2 ms after its due time, the second on time, the third 5 ms late.
	t0 := time.Unix(1000, 0)
	tl := newTally("/Meas/ECG/125", 125, new(histogram))
	tl.add(ecg(0, 16), t0.Add(2*time.Millisecond))
	tl.add(ecg(128, 16), t0.Add(128*time.Millisecond))
	tl.add(ecg(256, 16), t0.Add(261*time.Millisecond))
	if got, want := tl.late.n.Load(), int64(3); got != want {
		t.Fatalf("%d lateness figures, want %d", got, want)
	}
	// relative to the least delayed (the second), the third is 5 ms late
	if got := time.Duration(tl.late.max.Load()); got < 4900*time.Microsecond || got > 5100*time.Microsecond {
		t.Errorf("largest lateness %v, want 5ms", got)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * 10 * time.Microsecond) // 10 µs .. 10 ms
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.99, 9900 * time.Microsecond}} {
		got := h.quantile(tc.q)
		if got > tc.want || float64(got) < 0.93*float64(tc.want) {
			t.Errorf("quantile %v = %v, want within 7%% below %v", tc.q, got, tc.want)
		}
	}
	for _, d := range []time.Duration{0, 15 * time.Microsecond, 31 * time.Microsecond, 5 * time.Millisecond, time.Hour} {
		if v := bucketValue(bucket(d)); v > d || float64(v) < 0.93*float64(d) {
			t.Errorf("bucket of %v starts at %v", d, v)
		}
	}
}

// The heart rate is counted by the intervals its notifications carry, from
// the second notification on.
func TestTallyCountsBeats(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tl := newTally("/Meas/HR", 0, nil)
	tl.add([]byte(`{"average":61.2,"rrData":[980, 1002]}`), t0)
	tl.add([]byte(`{"average":61.2,"rrData":[990,1010]}`), t0.Add(2*time.Second))
	tl.add([]byte(`{"average":null,"rrData":null}`), t0.Add(3*time.Second))
	if tl.rrSum != 2000 || tl.lastRR != 0 || tl.samples != 3 || tl.disorder != 0 {
		t.Errorf("RR sum %v, latest %v, notifications counted %d, disorder %d; want 2000, 0, 3, 0", tl.rrSum, tl.lastRR, tl.samples, tl.disorder)
	}
}

func TestPathRate(t *testing.T) {
	for _, tc := range []struct {
		path string
		rate float64
		ok   bool
	}{
		{"/Meas/IMU6/52", 52, true}, {"/Meas/ECG/125", 125, true}, {"/Meas/ECG/125/mV", 125, true},
		{"/Meas/HR", 0, true}, {"/Meas/Temp", 0, false}, {"Meas/ECG/125", 0, false},
	} {
		r, err := PathRate(tc.path)
		if errors.Is(err, ErrConfig) == tc.ok || (err == nil) != tc.ok || r != tc.rate {
			t.Errorf("PathRate(%q) = %v, %v; want %v, ok %v", tc.path, r, err, tc.rate, tc.ok)
		}
	}
}

func TestAddrs(t *testing.T) {
	a, err := Addrs("127.0.0.1:7809", 3)
	if err != nil || strings.Join(a, " ") != "127.0.0.1:7809 127.0.0.1:7810 127.0.0.1:7811" {
		t.Errorf("Addrs = %v, %v", a, err)
	}
	if _, err := Addrs("127.0.0.1:65535", 2); !errors.Is(err, ErrConfig) {
		t.Error("ports past 65535 accepted")
	}
	if a, err := Addrs("127.0.0.1:7809", -1); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "-1 devices: at least 1") {
		t.Errorf("Addrs of -1 devices = %v, %v", a, err)
	}
}

func TestFleetAddrs(t *testing.T) {
	a, err := FleetAddrs("127.0.0.1:7809", "000998", 3)
	if err != nil || strings.Join(a, " ") != "127.0.0.1:7809/000998 127.0.0.1:7809/000999 127.0.0.1:7809/001000" {
		t.Errorf("FleetAddrs = %v, %v", a, err)
	}
	for _, tc := range []struct {
		fleet, first string
		n            int
		want         string // in the error
		is           error  // the error wraps it, when not nil
	}{
		{"127.0.0.1:7809", "ABC", 2, `first serial "ABC"`, strconv.ErrSyntax},
		{"127.0.0.1:7809", "99999999999999999999", 2, `first serial "99999999999999999999"`, strconv.ErrRange},
		{"nowhere", "000123", 2, `fleet address "nowhere"`, nil},
		{"127.0.0.1:7809", "000123", 0, "0 devices: at least 1", nil},
		{"127.0.0.1:7809", "000123", -1, "-1 devices: at least 1", nil},
	} {
		a, err := FleetAddrs(tc.fleet, tc.first, tc.n)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("FleetAddrs(%q, %q, %d) = %v, %v; want an error with %q (wrapping %v)", tc.fleet, tc.first, tc.n, a, err, tc.want, tc.is)
		}
	}
}

func TestCheck(t *testing.T) {
	r := Report{Streams: []StreamReport{{Path: "/Meas/ECG/125", Delivered: 0.95}, {Path: "/Meas/IMU6/52", Delivered: 1}}}
	err := r.Check(0.99)
	if !errors.Is(err, ErrBelowThreshold) || !strings.Contains(err.Error(), "/Meas/ECG/125") || strings.Contains(err.Error(), "IMU6") {
		t.Errorf("Check(0.99) = %v, want the ECG stream below the threshold", err)
	}
	if err := r.Check(0.9); err != nil {
		t.Errorf("Check(0.9) = %v", err)
	}
}

// TestFleet runs the load against a fleet of three devices in this process,
// on real time over TCP: on their own ports, and on one fleet port.
func TestFleet(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(map[bool]string{false: "own ports", true: "fleet port"}[fleet], func(t *testing.T) {
			t.Parallel()
			testFleet(t, fleet)
		})
	}
}

func testFleet(t *testing.T, fleet bool) {
	opts := senseboard.FleetOptions{Devices: 3, PTY: "none", Listen: "127.0.0.1:0"}
	if fleet {
		opts.Listen, opts.ListenFleet = "none", "127.0.0.1:0"
	}
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir(), Seed: 7}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	var addrs []string
	for _, d := range h.Members {
		addrs = append(addrs, d.TCP)
	}
	if fleet {
		if addrs, err = FleetAddrs(h.Addr, "000123", 3); err != nil {
			t.Fatal(err)
		}
	}
	var progress []Report
	paths := []string{"/Meas/IMU6/52", "/Meas/ECG/125", "/Meas/HR"}
	r, err := Run(ctx, Config{Addrs: addrs, Subscribe: paths, Duration: 1500 * time.Millisecond,
		Interval: 500 * time.Millisecond, Progress: func(r Report) { progress = append(progress, r) }, Timeout: time.Minute}) // a guard against hanging, not a bound
	if err != nil {
		t.Fatal(err)
	}
	if r.Reached != 3 || r.Failed != 0 || r.Devices != 3 || !r.Final {
		t.Errorf("reached %d, failed %d of %d, final %v; want 3, 0 of 3, true", r.Reached, r.Failed, r.Devices, r.Final)
	}
	if len(progress) == 0 || progress[0].Final {
		t.Errorf("%d progress reports, want some before the summary", len(progress))
	}
	// whole notifications in order; on the real clock a device held back
	// by the machine's other work may lose whole ECG notifications, as the
	// hardware does, which the test does not count against it (TestAir)
	batch := map[string]int64{"/Meas/IMU6/52": 4, "/Meas/ECG/125": 16}
	for _, s := range r.Streams[:2] {
		if s.Notifications < 3 || s.Samples != s.Notifications*batch[s.Path] || s.Lost%batch[s.Path] != 0 || s.Disorder != 0 {
			t.Errorf("%s: %d notifications, %d samples, lost %d, out of order %d; want at least one per device, %d samples each, whole notifications lost if any",
				s.Path, s.Notifications, s.Samples, s.Lost, s.Disorder, batch[s.Path])
		}
	}
	// the devices' program, this one, is found by its TCP port
	for _, p := range []*ProcessReport{r.Process, r.Self} {
		if p == nil || p.PID != os.Getpid() || p.RSS <= 0 || p.PerDevice != p.RSS/3 || p.IdleRSS <= 0 || p.CPU < 0 {
			t.Errorf("process figures %+v; want this process's, per device of 3", p)
		}
	}
	var b strings.Builder
	Print(&b, r)
	for _, want := range append(paths, fmt.Sprintf("device program (PID %d): CPU", os.Getpid()), "per device (", "load program: CPU", "machine load average", "processors idle") {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary without %q:\n%s", want, b.String())
		}
	}
}

// TestReadUsage: a process's CPU time grows as it works, and its memory is
// read; a process that does not exist is an error.
func TestReadUsage(t *testing.T) {
	u0, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if u0.RSS <= 0 || u0.CPU < 0 {
		t.Errorf("usage %+v", u0)
	}
	x := 1.0
	for u := u0; u.CPU <= u0.CPU; u, _ = ReadUsage(os.Getpid()) {
		for range 1_000_000 {
			x = x*1.0000001 + 1e-9
		}
	}
	if x == 0 {
		t.Log(x)
	}
	if _, err := ReadUsage(1 << 30); err == nil {
		t.Error("a process that does not exist read")
	}
}

// TestMachineCPU: the computer's processors' time is read, and grows.
func TestMachineCPU(t *testing.T) {
	busy0, idle0, err := MachineCPU()
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for busy, idle := busy0, idle0; busy+idle == busy0+idle0; busy, idle, _ = MachineCPU() {
		time.Sleep(time.Millisecond)
	}
	if busy0 <= 0 || idle0 < 0 {
		t.Errorf("busy %d, idle %d", busy0, idle0)
	}
}

// TestListenerPID: the process that listens on a TCP address of this
// computer is found; an address nobody listens on, or of another
// computer, finds none.
func TestListenerPID(t *testing.T) {
	if _, err := ReadUsage(os.Getpid()); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if pid := ListenerPID(addr); pid != os.Getpid() {
		t.Errorf("ListenerPID(%s) = %d, want %d", addr, pid, os.Getpid())
	}
	ln.Close()
	if pid := ListenerPID(addr); pid != 0 {
		t.Errorf("ListenerPID of a closed port = %d", pid)
	}
	if pid := ListenerPID("192.0.2.1:7809"); pid != 0 {
		t.Errorf("ListenerPID of another computer = %d", pid)
	}
}

func TestDeviceNotReached(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Run(context.Background(), Config{Addrs: []string{addr}, Subscribe: []string{"/Meas/HR"}, Duration: time.Millisecond})
	if !errors.Is(err, ErrDevices) {
		t.Errorf("err = %v, want ErrDevices", err)
	}
}

func TestPrintDelivered(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    StreamReport
		want string
	}{
		{"some expected", StreamReport{Path: "/Meas/ECG/125", Rate: 125, Expected: 1000, Delivered: 0.995, Notifications: 62}, "delivered  99.500%"},
		{"nothing expected", StreamReport{Path: "/Meas/ECG/125", Rate: 125, Delivered: 1}, "nothing expected yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			Print(&b, Report{Final: true, Streams: []StreamReport{tc.s}})
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("summary says\n%s\nwant %q in it", b.String(), tc.want)
			}
			if tc.s.Expected == 0 && strings.Contains(b.String(), "100.000%") {
				t.Errorf("summary claims full delivery of nothing:\n%s", b.String())
			}
		})
	}
}
