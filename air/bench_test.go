package air_test

import (
	"context"
	"io"
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
