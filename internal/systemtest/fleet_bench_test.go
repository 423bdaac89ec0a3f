package systemtest_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/content"
	"senseboard/resource"
	"senseboard/wire"
	"senseboard/world"
)

// fleetStreams are the streams of the fleet figures: what a load test of a
// wearable backend subscribes to.
var fleetStreams = []string{"/Meas/IMU6/52", "/Meas/ECG/125", "/Meas/HR"}

// heapInUse returns the bytes of live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// subscribeFleet subscribes sink to the fleet streams of d.
func subscribeFleet(b *testing.B, d *senseboard.Device, sink resource.Sink) *resource.Client {
	cl := resource.NewClient("bench", sink)
	for _, p := range fleetStreams {
		if env, _ := d.Do(&resource.Request{Op: resource.Subscribe, Path: p, Client: cl}); !env.Status.OK() {
			b.Fatalf("%s: %d", p, env.Status)
		}
	}
	return cl
}

// BenchmarkIdleDeviceMemory reports the live heap of an idle device: made
// and started, nobody subscribed, on a virtual clock.
func BenchmarkIdleDeviceMemory(b *testing.B) {
	const n = 20
	c := clock.NewVirtual()
	// what all devices share (the parsed interface definitions) is made with
	// the first device: not counted
	first, err := senseboard.New(senseboard.Config{Clock: c, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	first.Close()
	var perDevice float64
	for b.Loop() {
		before := heapInUse()
		devs := make([]*senseboard.Device, n)
		for i := range devs {
			d, err := senseboard.New(senseboard.Config{Clock: c, Seed: int64(i), StateDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			devs[i] = d
		}
		c.Advance(time.Second)
		perDevice = float64(heapInUse()-before) / n
		for _, d := range devs {
			d.Close()
		}
	}
	b.ReportMetric(perDevice/1024, "KiB/device")
}

// BenchmarkStreamingDeviceMemory streams IMU6 at 52 Hz, ECG at 125 Hz and
// heart rate from one device for an hour of virtual time per iteration and
// reports its live heap after a minute and after the hour: a device that
// streams must stay flat.
func BenchmarkStreamingDeviceMemory(b *testing.B) {
	var minute, hour float64
	warm, err := senseboard.New(senseboard.Config{Clock: clock.NewVirtual(), StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	warm.Close() // what all devices share is not counted
	for b.Loop() {
		sink := &wireSink{buf: make([]byte, 0, 8192)} // the subscriber's, not counted
		base := heapInUse()
		c := clock.NewVirtual()
		d, err := senseboard.New(senseboard.Config{Clock: c, Seed: 1, StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		cl := subscribeFleet(b, d, sink)
		c.Advance(time.Minute)
		minute = float64(heapInUse() - base)
		c.Advance(time.Hour - time.Minute)
		hour = float64(heapInUse() - base)
		cl.Close()
		d.Close()
	}
	b.ReportMetric(minute/1024, "KiB-at-1min")
	b.ReportMetric(hour/1024, "KiB-at-1h")
}

// cpuTime returns the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRealTimeCPU runs 200 and 2,000 devices on the real clock, each
// streaming IMU6 at 52 Hz, ECG at 125 Hz and heart rate to a sink that
// encodes every notification as a wire frame, for b.N seconds, and reports
// the CPU time of the process (getrusage) per device-second: the device
// side of a fleet, without the connections' write calls. The fleet's
// clock's scheduler wakes about a thousand times a second whatever the number of
// devices, so the figure falls as the fleet grows. It also reports how
// late the IMU6 notifications leave, each against its device's first
// (p50 and p99): the scheduler's own lateness, with no connection between.
func BenchmarkRealTimeCPU(b *testing.B) {
	for _, n := range []int{200, 2000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) { realTimeCPU(b, n) })
	}
}

func realTimeCPU(b *testing.B, n int) {
	devs := make([]*senseboard.Device, n)
	var clients []*resource.Client
	late := &lateness{}
	c := clock.NewReal() // one clock, and its scheduler, for the fleet
	b.Cleanup(c.Close)
	for i := range devs {
		d, err := senseboard.New(senseboard.Config{Clock: c, Seed: int64(i), StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		devs[i] = d
		// a sink per device, as each has its own connection
		clients = append(clients, subscribeFleet(b, d, &lateSink{late: late}))
	}
	defer func() {
		for i, d := range devs {
			clients[i].Close()
			d.Close()
		}
	}()
	time.Sleep(time.Second) // past the start of every stream
	late.reset()
	b.ResetTimer()
	cpu0, wall0 := cpuTime(), time.Now()
	time.Sleep(time.Duration(b.N) * time.Second)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/(float64(n)*wall.Seconds()), "ms-CPU/device-s")
	p50, p99 := late.percentiles()
	b.ReportMetric(float64(p50.Microseconds())/1000, "late-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "late-p99-ms")
}

// lateness gathers how late notifications leave, over many sinks.
type lateness struct {
	mu   sync.Mutex
	late []time.Duration
}

func (l *lateness) add(d time.Duration) {
	l.mu.Lock()
	l.late = append(l.late, d)
	l.mu.Unlock()
}

func (l *lateness) reset() {
	l.mu.Lock()
	l.late = l.late[:0]
	l.mu.Unlock()
}

func (l *lateness) percentiles() (p50, p99 time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.late) == 0 {
		return 0, 0
	}
	slices.Sort(l.late)
	return l.late[len(l.late)/2], l.late[len(l.late)*99/100]
}

// lateSink encodes every notification as a wire frame, as wireSink does,
// and notes how late each motion notification is against the device's
// first: its Timestamp says when it is due.
type lateSink struct {
	late  *lateness
	mu    sync.Mutex
	buf   []byte
	first time.Time // when the first motion notification came
	ts0   uint32    // and its Timestamp
}

func (s *lateSink) Notify(n resource.Notification) bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf, _ = wire.AppendJSONFrame(s.buf[:0], wire.Notification, 1, n.Content)
	if m, ok := n.Content.(*content.MotionData); ok {
		if s.first.IsZero() {
			s.first, s.ts0 = now, m.Timestamp
		} else {
			s.late.add(now.Sub(s.first.Add(time.Duration(m.Timestamp-s.ts0) * time.Millisecond)))
		}
	}
	return true
}

func (s *lateSink) Ended(*resource.Subscription, resource.EndReason) {}

// BenchmarkFleetDeviceSecond runs one second of every device per
// iteration, with IMU6 at 52 Hz, ECG at 125 Hz and heart rate subscribed
// and encoded as wire frames, on the virtual clock: the work of a fleet
// device without the real-time plumbing, for one device alone and among
// 2,000, whose state the processor's caches cannot all hold. It reports
// the CPU time of the process (getrusage) per device-second, which a busy
// machine disturbs less than ns/op.
func BenchmarkFleetDeviceSecond(b *testing.B) {
	for _, n := range []int{1, 2000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) { fleetDeviceSecond(b, n) })
	}
}

func fleetDeviceSecond(b *testing.B, n int) {
	c := clock.NewVirtual()
	for i := range n {
		d, err := senseboard.New(senseboard.Config{Clock: c, Seed: int64(1 + i), StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		defer subscribeFleet(b, d, &wireSink{buf: make([]byte, 0, 8192)}).Close()
	}
	c.Advance(10 * time.Second) // past the heart rate's start
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		c.Advance(time.Second)
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N)/float64(n), "ms-CPU/device-s")
}

// countSink counts the notifications and wire bytes of one stream.
type countSink struct {
	mu           sync.Mutex
	buf          []byte
	frames, size int
}

func (s *countSink) Notify(n resource.Notification) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf, _ = wire.AppendJSONFrame(s.buf[:0], wire.Notification, 1, n.Content)
	s.frames++
	s.size += len(s.buf)
	return true
}

func (s *countSink) Ended(*resource.Subscription, resource.EndReason) {}

// BenchmarkStreamWireSize reports, for each fleet stream of a walking
// wearer, the notifications and the bytes of their wire frames per
// device-second: the traffic a fleet puts on its links.
func BenchmarkStreamWireSize(b *testing.B) {
	sc, _ := world.ParseScenario([]byte("segments:\n  - walk: 100h\n"))
	for _, p := range fleetStreams {
		b.Run(p[1:], func(b *testing.B) {
			d, c := newDeviceScenario(b, sc)
			sink := &countSink{}
			cl := resource.NewClient("bench", sink)
			defer cl.Close()
			if env, _ := d.Do(&resource.Request{Op: resource.Subscribe, Path: p, Client: cl}); !env.Status.OK() {
				b.Fatalf("%s: %d", p, env.Status)
			}
			c.Advance(10 * time.Second)
			sink.frames, sink.size = 0, 0
			for b.Loop() {
				c.Advance(10 * time.Second)
			}
			secs := 10 * float64(b.N)
			b.ReportMetric(float64(sink.frames)/secs, "msgs/s")
			b.ReportMetric(float64(sink.size)/secs, "bytes/s")
		})
	}
}
