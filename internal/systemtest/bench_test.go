package systemtest_test

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/resource"
	"senseboard/wire"
	"senseboard/world"
)

// wireSink encodes every notification to the wire format, as a serial
// session does, and discards the bytes.
type wireSink struct {
	mu    sync.Mutex
	buf   []byte
	count int
}

func (s *wireSink) Notify(n resource.Notification) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf, _ = wire.AppendJSONFrame(s.buf[:0], wire.Notification, 1, n.Content)
	s.count++
	return true
}

func (s *wireSink) Ended(*resource.Subscription, resource.EndReason) {}

// BenchmarkVirtualTime runs one second of device time per iteration with
// IMU9 at 1666 Hz, ECG at 512 Hz, heart rate and temperature subscribed,
// every notification encoded to the wire format, and reports how many times
// faster than real time that goes.
func BenchmarkVirtualTime(b *testing.B) {
	sc, _ := world.ParseScenario([]byte("segments:\n  - walk: 100h\n"))
	d, c := newDeviceScenario(b, sc)
	sink := &wireSink{buf: make([]byte, 0, 8192)}
	cl := resource.NewClient("bench", sink)
	defer cl.Close()
	for _, p := range []string{"/Meas/IMU9/1666", "/Meas/ECG/512", "/Meas/HR", "/Meas/Temp"} {
		if env, _ := d.Do(&resource.Request{Op: resource.Subscribe, Path: p, Client: cl}); !env.Status.OK() {
			b.Fatalf("%s: %d", p, env.Status)
		}
	}
	c.Advance(10 * time.Second) // past the heart rate's start
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Advance(time.Second)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "x-realtime")
	b.ReportMetric(float64(sink.count)/float64(b.N), "notifications/s")
}

func newDeviceScenario(b *testing.B, sc *world.Scenario) (*senseboard.Device, *clock.Virtual) {
	c := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Clock: c, Seed: 1, StateDir: b.TempDir(), Scenario: sc})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d, c
}

// latencySink records when each notification of one stream arrives.
type latencySink struct {
	mu      sync.Mutex
	arrived []time.Time
}

func (s *latencySink) Notify(resource.Notification) bool {
	s.mu.Lock()
	s.arrived = append(s.arrived, time.Now())
	s.mu.Unlock()
	return true
}

func (s *latencySink) Ended(*resource.Subscription, resource.EndReason) {}

// BenchmarkRealTimeLateness runs a device on real time with IMU9 at 1666 Hz
// and ECG at 512 Hz for b.N seconds and reports percentiles of how late each
// IMU9 notification leaves after its last sample was due.
func BenchmarkRealTimeLateness(b *testing.B) {
	d, err := senseboard.New(senseboard.Config{Seed: 1, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	imu, ecg := &latencySink{}, &latencySink{}
	ci, ce := resource.NewClient("imu", imu), resource.NewClient("ecg", ecg)
	defer ci.Close()
	defer ce.Close()
	start := time.Now()
	d.Do(&resource.Request{Op: resource.Subscribe, Path: "/Meas/IMU9/1666", Client: ci})
	d.Do(&resource.Request{Op: resource.Subscribe, Path: "/Meas/ECG/512", Client: ce})
	b.ResetTimer()
	time.Sleep(time.Duration(b.N) * time.Second)
	b.StopTimer()
	imu.mu.Lock()
	defer imu.mu.Unlock()
	var late []time.Duration
	for n, at := range imu.arrived {
		ideal := start.Add(time.Duration(int64(n+1) * 8 * int64(time.Second) / 1666))
		late = append(late, at.Sub(ideal))
	}
	if len(late) == 0 {
		b.Fatal("no notifications")
	}
	slices.Sort(late)
	pct := func(p float64) float64 {
		return float64(late[int(math.Min(float64(len(late)-1), p*float64(len(late))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.90), "p90-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(late[len(late)-1].Microseconds()), "max-µs")
}
