// Package meas provides the measurement resources, /Meas/...: the
// accelerometer, gyroscope and magnetometer, alone and combined (IMU6,
// IMU6m, IMU9), the ECG, heart rate and temperature, and the detectors that
// turn the accelerometer into movement, tap, double-tap and free-fall states.
//
// Every stream samples its source at exact times: sample k of a stream
// started at t0 is taken at t0 + k/rate (computed in integer nanoseconds,
// so nothing drifts), and a notification leaves when its last sample has
// been taken. Its Timestamp is the relative time of its first sample.
package meas

import (
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/device"
)

// stream emits batches of samples at an exact rate. Its methods run with
// the owning provider's lock held; its batcher's fireBatch runs with it
// held too.
type stream struct {
	// what a batch's call reads first, together
	call    clock.Call // s.tick, scheduled again for each batch without allocating
	mu      *sync.Mutex
	batcher batcher
	k       int64 // next sample
	t0      time.Duration
	rate    int
	batch   int
	run     bool
	made    bool // call is made

	clk clock.Clock
}

// A batcher is the stream's owner (the stream of a provider, which embeds
// it): fireBatch publishes a batch of n samples whose first is taken at t.
// An interface on the owner rather than a closure, so that the call of a
// batch reaches the stream's state without a pointer more to follow.
type batcher interface {
	fireBatch(t time.Duration, n int)
}

// sampleTime returns the clock reading of sample k.
func (s *stream) sampleTime(k int64) time.Duration {
	return s.t0 + time.Duration(k*int64(time.Second)/int64(s.rate))
}

// period returns the nominal sample interval.
func (s *stream) period() time.Duration { return time.Second / time.Duration(s.rate) }

func (s *stream) start() {
	s.begin()
	s.resume()
}

// begin sets the stream's first sample at the clock's time, without running it.
func (s *stream) begin() {
	s.t0, s.k = s.clk.Now(), 0
	if !s.made {
		s.call.Init(s.clk, s.tick)
		s.made = true
	}
}

// resume runs the stream from its next sample on.
func (s *stream) resume() {
	s.run = true
	s.schedule()
}

func (s *stream) schedule() {
	s.call.At(s.sampleTime(s.k + int64(s.batch)))
}

func (s *stream) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.run {
		return
	}
	k := s.k
	s.k += int64(s.batch)
	s.batcher.fireBatch(s.sampleTime(k), s.batch)
	s.schedule()
}

func (s *stream) stop() {
	s.run = false
	if s.made {
		s.call.Stop()
	}
}

// relTime returns the relative time of clock reading t.
func relTime(d *device.Core, t time.Duration) uint32 {
	return d.RelativeTimeAt(t)
}

func contains(list []uint16, v uint64) bool {
	for _, x := range list {
		if uint64(x) == v {
			return true
		}
	}
	return false
}

func listRates(list []uint16) string {
	b := make([]byte, 0, 64)
	for i, r := range list {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendUint(b, uint64(r))
	}
	return string(b)
}

func appendUint(b []byte, v uint64) []byte {
	if v >= 10 {
		b = appendUint(b, v/10)
	}
	return append(b, byte('0'+v%10))
}
