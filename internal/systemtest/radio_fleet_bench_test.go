package systemtest_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/link"
	"senseboard/profile"
)

// BenchmarkRadioStreams runs a fleet on the radio link over NATS: 100 and
// 1,000 devices in a fleet whose link runs the computer's NATS server, each
// streaming IMU6 at 52 Hz, ECG at 125 Hz and heart rate to a central of
// its own on a second link of the same process, for b.N seconds of real
// time. It reports the CPU time of the process (getrusage; devices,
// server and centrals together) per device-second, the notifications a
// device delivers a second, and the NATS messages (data, keepalives and
// adverts, both ways) per notification.
func BenchmarkRadioStreams(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) { radioStreams(b, n) })
	}
}

func radioStreams(b *testing.B, n int) {
	addr := airtest.FreeLocal(b)
	o := air.Options{Missed: 1000} // no stream ends on a busy machine
	devLink := airtest.Local(b, addr, o)
	cenLink := airtest.Local(b, addr, o)
	h, err := senseboard.NewFleet(senseboard.Config{Profile: profile.Default().WithSerial("100000"), StateDir: b.TempDir()},
		senseboard.FleetOptions{Devices: n, PTY: "none", Listen: "none", Air: devLink})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			b.Error(err)
		}
	}()

	var notes atomic.Int64
	count := func([]byte, time.Time) { notes.Add(1) }
	centrals := make([]*link.Conn, n)
	streams := make([]*air.Stream, n)
	defer func() {
		for _, c := range centrals {
			if c != nil {
				c.Close()
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i, r := range h.Members {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s, c, err := openCentral(ctx, cenLink, r.Device.Serial(), i, count)
			streams[i], centrals[i] = s, c
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	time.Sleep(time.Second) // past the start of every stream
	sent0, recv0 := devLink.Stats(), cenLink.Stats()
	notes0, data0, sys0 := notes.Load(), dataMessages(streams), ioCalls()
	b.ResetTimer()
	cpu0, wall0 := cpuTime(), time.Now()
	time.Sleep(time.Duration(b.N) * time.Second)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	b.StopTimer()
	sys := ioCalls() - sys0
	sent, recv := devLink.Stats(), cenLink.Stats()
	delivered := float64(notes.Load() - notes0)
	msgs := float64(sent.OutMsgs - sent0.OutMsgs + recv.OutMsgs - recv0.OutMsgs)
	deviceSeconds := float64(n) * wall.Seconds()
	b.ReportMetric(float64(cpu.Microseconds())/1000/deviceSeconds, "ms-CPU/device-s")
	b.ReportMetric(delivered/deviceSeconds, "notifications/device-s")
	b.ReportMetric(float64(dataMessages(streams)-data0)/delivered, "data-msgs/notification")
	b.ReportMetric(msgs/delivered, "nats-msgs/notification")
	if sys0 >= 0 {
		b.ReportMetric(float64(sys)/delivered, "io-syscalls/notification")
	}
}

// ioCalls returns the read and write system calls of the process so far
// (syscr and syscw of /proc/self/io), or -1 where there is no such file.
func ioCalls() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		if k == "syscr" || k == "syscw" {
			c, _ := strconv.ParseInt(v, 10, 64)
			n += c
		}
	}
	return n
}

// dataMessages returns the data messages the centrals have received.
func dataMessages(streams []*air.Stream) uint64 {
	var n uint64
	for _, s := range streams {
		_, received := s.Messages()
		n += received
	}
	return n
}

// openCentral dials a device as central i, connects and subscribes to the
// fleet streams, handing each notification to fn.
func openCentral(ctx context.Context, l *air.Link, serial string, i int, fn func([]byte, time.Time)) (*air.Stream, *link.Conn, error) {
	s, err := l.Dial(ctx, serial)
	if err != nil {
		return nil, nil, err
	}
	central := &link.Central{Address: fmt.Sprintf("C0:00:00:%02X:%02X:%02X", i>>16&0xff, i>>8&0xff, i&0xff), Name: "central", Timeout: time.Minute}
	c, err := central.Open(ctx, "radio "+serial, s, link.Handlers{})
	if err != nil {
		return s, nil, err
	}
	if _, err := c.Connect(ctx); err != nil {
		return s, c, fmt.Errorf("device %s: connect: %w", serial, err)
	}
	for _, p := range fleetStreams {
		if _, env, err := c.SubscribeFunc(ctx, p, fn); err != nil || !env.OK() {
			return s, c, fmt.Errorf("device %s: subscribe %s: %v, %v", serial, p, env, err)
		}
	}
	return s, c, nil
}
