package senseboard_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/resource"
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
	for b.Loop() {
		base := heapInUse()
		c := clock.NewVirtual()
		d, err := senseboard.New(senseboard.Config{Clock: c, Seed: 1, StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		sink := &wireSink{buf: make([]byte, 0, 8192)}
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

// BenchmarkRealTimeCPU runs 200 devices on the real clock, each streaming
// IMU6 at 52 Hz, ECG at 125 Hz and heart rate to a sink that encodes every
// notification as a wire frame, for b.N seconds, and reports the CPU time
// of the process (getrusage) per device-second: the device side of a fleet,
// without the connections' write calls.
func BenchmarkRealTimeCPU(b *testing.B) {
	const n = 200
	devs := make([]*senseboard.Device, n)
	var clients []*resource.Client
	sink := &wireSink{buf: make([]byte, 0, 8192)}
	for i := range devs {
		d, err := senseboard.New(senseboard.Config{Seed: int64(i), StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		devs[i] = d
		clients = append(clients, subscribeFleet(b, d, sink))
	}
	defer func() {
		for i, d := range devs {
			clients[i].Close()
			d.Close()
		}
	}()
	time.Sleep(time.Second) // past the start of every stream
	b.ResetTimer()
	cpu0, wall0 := cpuTime(), time.Now()
	time.Sleep(time.Duration(b.N) * time.Second)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/(n*wall.Seconds()), "ms-CPU/device-s")
}
