package air_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"senseboard/air"
	"senseboard/air/airtest"
)

// BenchmarkStream: notifications of 200 bytes from a device to a central
// in another program, through the computer's NATS server; it reports
// messages and bytes a second.
func BenchmarkStream(b *testing.B) {
	addr := airtest.FreeLocal(b)
	// room for what the writer runs ahead: this measures the carrier,
	// not the policy for slow readers
	o := air.Options{Missed: 1000, ReadBuffer: 1 << 30, PendingMessages: 1 << 22}
	dev, phone := airtest.Local(b, addr, o), airtest.Local(b, addr, o)
	ln, err := dev.Listen("000123")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := phone.Dial(context.Background(), "000123")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	d, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	msg := make([]byte, 200)
	done := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.Discard, c, int64(b.N*len(msg)))
		done <- err
	}()
	b.SetBytes(int64(len(msg)))
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		if _, err := d.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

// BenchmarkFleetStreams measures the carrier of a fleet: 1,000 and 10,000
// streams between two links of the process, through the computer's NATS
// server, each carrying 16 data messages of 150 bytes a second from the
// device to its central (about what a device streaming IMU6 at 52 Hz,
// ECG at 125 Hz and heart rate sends), for b.N seconds of real time. One
// goroutine writes for all the devices, spread evenly over each second;
// each central reads with a goroutine of its own. It reports the CPU time
// of the process (getrusage) per data message and per stream-second (16
// messages), and fails when a message does not arrive.
func BenchmarkFleetStreams(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { fleetStreams(b, n) })
	}
}

func fleetStreams(b *testing.B, n int) {
	const rate, size = 16, 150
	addr := airtest.FreeLocal(b)
	o := air.Options{Missed: 1000}
	dev, cen := airtest.Local(b, addr, o), airtest.Local(b, addr, o)
	devices := make([]*air.Stream, n)
	centrals := make([]*air.Stream, n)
	for i := range n {
		ln, err := dev.Listen(fmt.Sprintf("%06d", i))
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		if centrals[i], err = cen.Dial(context.Background(), fmt.Sprintf("%06d", i)); err != nil {
			b.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		devices[i] = c.(*air.Stream)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, c := range centrals {
		defer c.Close()
		defer devices[i].Close()
		wg.Go(func() { io.Copy(io.Discard, c) })
	}
	messages := func(streams []*air.Stream) (sent, received uint64) {
		for _, s := range streams {
			a, b := s.Messages()
			sent, received = sent+a, received+b
		}
		return sent, received
	}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() { // writes rate messages a second to every device, spread evenly
		msg := make([]byte, size)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		start, next := time.Now(), 0
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				due := int(now.Sub(start).Seconds() * rate * float64(n))
				for ; next < due; next++ {
					devices[next%n].Write(msg)
				}
			}
		}
	})
	time.Sleep(time.Second)
	b.ResetTimer()
	_, r0 := messages(centrals)
	cpu0 := cpuTime()
	time.Sleep(time.Duration(b.N) * time.Second)
	cpu := cpuTime() - cpu0
	_, r := messages(centrals)
	b.StopTimer()
	close(stop)
	writer.Wait()
	perMessage := float64(cpu.Nanoseconds()) / 1000 / float64(r-r0)
	b.ReportMetric(perMessage, "µs-CPU/msg")
	b.ReportMetric(perMessage*rate/1000, "ms-CPU/stream-s")
	sent, _ := messages(devices)
	deadline := time.Now().Add(time.Minute) // guards a hang only
	for _, got := messages(centrals); got < sent; _, got = messages(centrals) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d messages arrived", got, sent)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cpuTime returns the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
