// Package replay plays recordings through a device's sensors in place of
// the model: IMU, ECG and temperature series read from files, looped, and
// resampled to whatever rate a subscription asks for.
//
// Formats read (Load picks by name and content):
//
//   - senseboard CSV: one stream per file, "# key: value" header lines
//     (stream, rate, units), then a Timestamp column (ms) and value columns
//     (x,y,z; acc_x..magn_z; sample or mv; measurement). Recordings made with
//     the bridge are in this form.
//   - senseboard JSON Lines: one notification per line as
//     {"t": ms, "uri": "/Meas/...", "content": {...}}.
//   - the PC-simulator CSV of this device family: a "LoopingTimeStamp:<ms>"
//     line, then Timestamp and columns named /Meas/Acc/x, /Meas/Gyro/y, ...
//   - a logbook export of /Meas/IMU9 (JSON {"Meas":{"IMU9":[packets]}}).
//   - ECG exports: Timestamp_ms,Value (mV), and Timestamp,Sample (Unix
//     seconds, integer units of 0.38147 uV, -131072 marking lost samples).
//   - WFDB records (.hea with format 212 or 16 signals, read with its .dat): the
//     first signal is the ECG, and the second, when the record has one in
//     millivolts in the same file, its second lead.
//
// The ECG plays the first lead, and so does the heart rate unless the
// source offers it both leads of a recording of two (Source.SetHRLeads,
// sensor.TwoLeadSource); every format but WFDB holds the device's own
// single lead.
//
// Missing samples (gaps longer than MaxGap, or marked missing) read as
// electrodes off for the ECG.
package replay

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/sensor"
	"senseboard/signal"
)

// Channel is a kind of recorded signal.
type Channel uint8

// The channels.
const (
	Acc  Channel = iota // m/s^2, 3 axes
	Gyro                // deg/s, 3 axes
	Magn                // uT, 3 axes
	ECG                 // mV
	Temp                // K
	numChannels
)

var channelNames = [...]string{"acc", "gyro", "magn", "ecg", "temp"}

func (c Channel) String() string {
	if int(c) < len(channelNames) {
		return channelNames[c]
	}
	return fmt.Sprintf("Channel(%d)", uint8(c))
}

// MaxGap is the longest interval between samples that is bridged by
// interpolation, or two and a half sample intervals when that is longer;
// longer gaps are missing data.
const MaxGap = 250 * time.Millisecond

// MinRate and MaxRate bound the sample rate of a recorded series, in
// samples per second: from one sample in 1000 s to 100 kHz.
const (
	MinRate = 0.001
	MaxRate = 100000.0
)

// roundRate rounds a rate measured from sample times to 0.01 Hz, or to three
// significant digits below 1 Hz: 104.0002 is 104, one sample a minute is
// 0.0167.
func roundRate(r float64) float64 {
	if r >= 1 || r <= 0 {
		return math.Round(r*100) / 100
	}
	scale := math.Pow(10, 2-math.Floor(math.Log10(r)))
	return math.Round(r*scale) / scale
}

// sameSample is how close a time must be to a sample's to read it as is.
const sameSample = time.Microsecond

// maxGap returns the longest gap bridged in the series.
func (s *Series) maxGap() time.Duration {
	return max(MaxGap, time.Duration(2.5*float64(time.Second)/s.Rate))
}

// Series is one channel of a recording: samples at times from the
// recording's start. Axes holds one slice per axis: three for motion, one
// for temperature, and one per lead for the ECG (the first is what the ECG
// plays; a second, when a record has one, the heart rate may use too).
// NaN marks a missing sample.
type Series struct {
	Channel Channel
	Rate    float64 // nominal samples per second
	T       []time.Duration
	Axes    [][]float64

	// secondDropped is whether the ECG's second lead was let go
	// (Recording.DropSecondLead).
	secondDropped bool

	mu        sync.Mutex
	resampled map[float64]*Series // anti-aliased copies, by target rate
}

// Len returns the number of samples.
func (s *Series) Len() int { return len(s.T) }

// Recording is a set of series from one file.
type Recording struct {
	Name   string
	Series [numChannels]*Series
	// Length is the playback length: the loop point.
	Length time.Duration
	// Beats are reference beat times (annotations), when the file has them.
	Beats []time.Duration
}

// DropSecondLead lets the ECG's second lead go, when it has one: a
// recording that will play with the heart rate on the first lead alone
// then holds that lead and its times, about two thirds of what it held.
// A Source that plays its ECG offers the heart rate one lead (TwoLeads),
// and refuses SetHRLeads(2) with an error wrapping ErrSecondLeadDropped.
// Call it before the recording plays.
func (r *Recording) DropSecondLead() {
	if s := r.Series[ECG]; s != nil && len(s.Axes) > 1 {
		s.Axes = [][]float64{s.Axes[0]}
		s.secondDropped = true
	}
}

// Channels lists the recording's channels.
func (r *Recording) Channels() []Channel {
	var out []Channel
	for c, s := range r.Series {
		if s != nil {
			out = append(out, Channel(c))
		}
	}
	return out
}

// finish sorts, normalizes times to start at 0, infers rates and the
// length, and checks the recording.
func (r *Recording) finish() error {
	var start time.Duration = math.MaxInt64
	for _, s := range r.Series {
		if s != nil && s.Len() > 0 {
			start = min(start, s.T[0])
		}
	}
	found := false
	for _, s := range r.Series {
		if s == nil {
			continue
		}
		if s.Len() < 2 {
			return fmt.Errorf("%s: %s has %d samples; at least 2 are needed", r.Name, s.Channel, s.Len())
		}
		found = true
		idx := make([]int, s.Len())
		for i := range idx {
			idx[i] = i
		}
		if !sort.SliceIsSorted(idx, func(a, b int) bool { return s.T[idx[a]] < s.T[idx[b]] }) {
			sort.SliceStable(idx, func(a, b int) bool { return s.T[idx[a]] < s.T[idx[b]] })
			t := make([]time.Duration, len(idx))
			axes := make([][]float64, len(s.Axes))
			for k := range axes {
				axes[k] = make([]float64, len(idx))
			}
			for i, j := range idx {
				t[i] = s.T[j]
				for k := range axes {
					axes[k][i] = s.Axes[k][j]
				}
			}
			s.T, s.Axes = t, axes
		}
		for i := range s.T {
			s.T[i] -= start
		}
		if s.Rate == 0 {
			d := make([]time.Duration, 0, s.Len()-1)
			for i := 1; i < s.Len(); i++ {
				if g := s.T[i] - s.T[i-1]; g > 0 {
					d = append(d, g)
				}
			}
			if len(d) == 0 {
				return fmt.Errorf("%s: %s has no regular sample spacing", r.Name, s.Channel)
			}
			sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
			s.Rate = roundRate(float64(time.Second) / float64(d[len(d)/2]))
		}
		if !(s.Rate >= MinRate && s.Rate <= MaxRate) {
			return fmt.Errorf("%s: %s has a sample rate of %g Hz; %g to %g Hz are allowed", r.Name, s.Channel, s.Rate, MinRate, MaxRate)
		}
		s.snap()
		end := s.T[s.Len()-1] + time.Duration(float64(time.Second)/s.Rate)
		r.Length = max(r.Length, end)
	}
	if !found {
		return fmt.Errorf("%s: no IMU, ECG or temperature data found", r.Name)
	}
	for i := range r.Beats {
		r.Beats[i] -= start
	}
	return nil
}

// snap puts samples that lie within a millisecond of the rate's grid (from
// the first sample) exactly on it: recordings keep times in whole or
// thousandths of milliseconds, and a replay at the recorded rate should
// give back the recorded samples, not interpolations between them.
func (s *Series) snap() {
	t0 := s.T[0]
	per := float64(time.Second) / s.Rate
	for i, t := range s.T {
		k := math.Round(float64(t-t0) / per)
		exact := t0 + time.Duration(math.Round(k*per))
		if d := t - exact; d > -time.Millisecond && d < time.Millisecond {
			s.T[i] = exact
		}
	}
}

// at returns the series' value of axis k at recording time tau by linear
// interpolation, and false when the sample is missing.
func (s *Series) at(k int, tau time.Duration) (float64, bool) {
	i := sort.Search(len(s.T), func(i int) bool { return s.T[i] > tau }) // first after tau
	switch {
	case i == 0:
		return s.Axes[k][0], !math.IsNaN(s.Axes[k][0])
	case i == len(s.T):
		v := s.Axes[k][i-1]
		return v, !math.IsNaN(v) && (s.Channel == Temp || tau-s.T[i-1] <= s.maxGap())
	}
	t0, t1 := s.T[i-1], s.T[i]
	v0, v1 := s.Axes[k][i-1], s.Axes[k][i]
	// a sample within a microsecond is the sample itself: sample times of
	// streams and recordings differ by nanoseconds of rounding
	switch {
	case tau-t0 < sameSample:
		return v0, !math.IsNaN(v0)
	case t1-tau < sameSample:
		return v1, !math.IsNaN(v1)
	case s.Channel == Temp:
		// temperature is notified on change: between readings it holds
		return v0, !math.IsNaN(v0)
	}
	if t1-t0 > s.maxGap() || math.IsNaN(v0) || math.IsNaN(v1) {
		return math.NaN(), false
	}
	f := float64(tau-t0) / float64(t1-t0)
	return v0 + (v1-v0)*f, true
}

// forRate returns the series prepared for reading its first axes axes at
// rate: when the rate is below the recording's, a copy low-passed (forward
// and backward, so without delay) at 0.45 times the target rate, so that
// resampling does not alias. The copy filters an axis when it is first
// asked for: an ECG's second lead costs nothing until the heart rate reads
// it.
func (s *Series) forRate(rate float64, axes int) *Series {
	if rate >= s.Rate*0.95 {
		return s
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.resampled[rate]
	if !ok {
		c = &Series{Channel: s.Channel, Rate: s.Rate, T: s.T, Axes: make([][]float64, len(s.Axes))}
		if s.resampled == nil {
			s.resampled = map[float64]*Series{}
		}
		s.resampled[rate] = c
	}
	for k := range min(axes, len(s.Axes)) {
		if c.Axes[k] == nil {
			c.Axes[k] = zeroPhaseLowPass(s.Axes[k], 0.45*rate, s.Rate)
		}
	}
	return c
}

// zeroPhaseLowPass filters x forward and backward with a Butterworth
// low-pass, leaving missing samples missing.
func zeroPhaseLowPass(x []float64, fc, fs float64) []float64 {
	y := make([]float64, len(x))
	copy(y, x)
	f, err := signal.Butterworth(signal.LowPass, 2, fc, fs)
	if err != nil {
		return y
	}
	pass := func(idx func(int) int) {
		f.Reset()
		started := false
		for n := range y {
			i := idx(n)
			if math.IsNaN(y[i]) {
				started = false
				continue
			}
			if !started {
				f.Settle(y[i])
				started = true
			}
			y[i] = f.Step(y[i])
		}
	}
	pass(func(n int) int { return n })
	pass(func(n int) int { return len(y) - 1 - n })
	return y
}

// Source plays recordings as the device's sensors, looping each from the
// clock reading origin. A channel no recording has comes from the fallback.
type Source struct {
	origin time.Duration
	ch     [numChannels]*Series
	length [numChannels]time.Duration
	imu    sensor.IMUSource
	ecg    sensor.ECGSource
	temp   sensor.TempSource
	// hrLeads is how many leads the source offers the heart rate (1 or 2),
	// which it reads at every batch.
	hrLeads atomic.Int32
}

// Fallback is a model of every sensor, for the channels the recordings lack.
type Fallback interface {
	sensor.IMUSource
	sensor.ECGSource
	sensor.TempSource
}

// NewSource plays recs from origin. When two recordings have the same
// channel the first wins (Plays).
func NewSource(origin time.Duration, fallback Fallback, recs ...*Recording) *Source {
	s := &Source{origin: origin, imu: fallback, ecg: fallback, temp: fallback}
	s.hrLeads.Store(1)
	for c := range numChannels {
		if i := Plays(c, recs); i >= 0 {
			s.ch[c], s.length[c] = recs[i].Series[c], recs[i].Length
		}
	}
	return s
}

// Plays returns the index in recs of the recording whose channel c a
// Source of recs plays: the first that has it; -1 when none has. Its ECG
// is the one whose leads the heart rate may take (SetHRLeads).
func Plays(c Channel, recs []*Recording) int {
	for i, r := range recs {
		if r.Series[c] != nil {
			return i
		}
	}
	return -1
}

// Has reports whether a recording provides the channel.
func (s *Source) Has(c Channel) bool { return s.ch[c] != nil }

func (s *Source) tau(c Channel, t time.Duration) time.Duration {
	d := t - s.origin
	if d < 0 {
		d = 0
	}
	return d % s.length[c]
}

// FillIMU implements sensor.IMUSource: recorded axes where there are some
// (clipped to the ranges), the fallback for the others.
func (s *Source) FillIMU(acc, gyro, magn []sensor.XYZ, t0, dt time.Duration, r sensor.Ranges) {
	if s.ch[Acc] == nil || s.ch[Gyro] == nil || s.ch[Magn] == nil {
		// the fallback fills everything; recorded channels overwrite below
		s.imu.FillIMU(acc, gyro, magn, t0, dt, r)
	}
	rate := float64(time.Second) / float64(max(dt, 1))
	fill := func(dst []sensor.XYZ, c Channel, limit float64) {
		ser := s.ch[c]
		if dst == nil || ser == nil {
			return
		}
		ser = ser.forRate(rate, 3)
		for i := range dst {
			tau := s.tau(c, t0+time.Duration(i)*dt)
			var v [3]float64
			for k := range 3 {
				v[k], _ = ser.at(k, tau)
				if math.IsNaN(v[k]) {
					v[k] = 0
				}
			}
			dst[i] = sensor.XYZ{
				X: float32(math.Max(-limit, math.Min(limit, v[0]))),
				Y: float32(math.Max(-limit, math.Min(limit, v[1]))),
				Z: float32(math.Max(-limit, math.Min(limit, v[2]))),
			}
		}
	}
	fill(acc, Acc, float64(r.Acc)*9.80665)
	fill(gyro, Gyro, float64(r.Gyro))
	fill(magn, Magn, 4900)
}

// FillECG implements sensor.ECGSource: the first lead; missing samples
// read 0.
func (s *Source) FillECG(dst []float64, t0, dt time.Duration) {
	ser := s.ch[ECG]
	if ser == nil {
		s.ecg.FillECG(dst, t0, dt)
		return
	}
	s.fillLead(dst, ser.forRate(float64(time.Second)/float64(max(dt, 1)), 1), 0, t0, dt)
}

// ErrHRLeads is the error of a number of leads for the heart rate other
// than 1 or 2, or of 2 the ECG played cannot give.
var ErrHRLeads = errors.New("leads for the heart rate")

// ErrSecondLeadDropped is the error of two leads for the heart rate from
// a recording whose second lead was let go (Recording.DropSecondLead).
var ErrSecondLeadDropped = errors.New("the second lead of the ECG played was let go (Recording.DropSecondLead)")

// ErrNoSecondLead is the error of two leads for the heart rate from a
// source whose ECG has one: a recording of one lead, or none, which the
// fallback's ECG stands in for.
var ErrNoSecondLead = errors.New("the ECG played has no second lead (a WFDB record's second signal, in mV, in the first's .dat file)")

// SetHRLeads sets how many leads of a recording of two the source offers
// the heart rate (/Meas/HR): 1, the default, the first lead alone, which
// the ECG plays, as on the device; or 2, both, which the heart rate takes
// to its two-lead detector: fewer false beats where one lead is noisy,
// fewer beats found where the second lead is poor, and a beat up to 1.5 s
// later (docs/replay-and-recording.md). Other numbers are an error
// wrapping ErrHRLeads, and so is 2 when the ECG played has no second lead,
// wrapping ErrNoSecondLead too (a recording of one lead, or no recording of
// an ECG), or ErrSecondLeadDropped when the second lead of the recording
// the ECG plays was let go; an error leaves what the source offers as it
// was. It may be called while the source plays: a running heart rate
// takes the change at its next batch, with a new detector.
func (s *Source) SetHRLeads(n int) error {
	if n != 1 && n != 2 {
		return fmt.Errorf("%w: %d; give 1 (the lead the ECG plays) or 2 (both leads of a record of two)", ErrHRLeads, n)
	}
	if ecg := s.ch[ECG]; n == 2 {
		switch {
		case ecg != nil && ecg.secondDropped:
			return fmt.Errorf("%w: 2, but %w; give 1, or the recording with its second lead kept", ErrHRLeads, ErrSecondLeadDropped)
		case ecg == nil || len(ecg.Axes) < 2:
			return fmt.Errorf("%w: 2, but %w; give 1, or a record of two leads", ErrHRLeads, ErrNoSecondLead)
		}
	}
	s.hrLeads.Store(int32(n))
	return nil
}

// TwoLeads implements sensor.TwoLeadSource: whether the source offers the
// heart rate two leads, which it does when SetHRLeads gave it 2 and the
// recording played as the ECG has a second lead.
func (s *Source) TwoLeads() bool {
	return s.hrLeads.Load() == 2 && s.ch[ECG] != nil && len(s.ch[ECG].Axes) > 1
}

// FillTwoLeads implements sensor.TwoLeadSource: the first lead into lead0,
// as FillECG fills it, and the recording's second lead into lead1, whether
// or not the source offers it (TwoLeads). Missing samples read 0; a
// recording without a second lead gives lead1 0 throughout.
func (s *Source) FillTwoLeads(lead0, lead1 []float64, t0, dt time.Duration) {
	s.FillECG(lead0, t0, dt)
	ser := s.ch[ECG]
	if ser == nil || len(ser.Axes) < 2 {
		clear(lead1)
		return
	}
	s.fillLead(lead1, ser.forRate(float64(time.Second)/float64(max(dt, 1)), 2), 1, t0, dt)
}

// fillLead writes lead k of the ECG series ser at t0, t0+dt, ... into dst;
// missing samples read 0.
func (s *Source) fillLead(dst []float64, ser *Series, k int, t0, dt time.Duration) {
	for i := range dst {
		v, ok := ser.at(k, s.tau(ECG, t0+time.Duration(i)*dt))
		if !ok {
			v = 0
		}
		dst[i] = v
	}
}

// Contact implements sensor.ECGSource: the electrodes count as off where
// the recording misses samples.
func (s *Source) Contact(t time.Duration) bool {
	ser := s.ch[ECG]
	if ser == nil {
		return s.ecg.Contact(t)
	}
	_, ok := ser.at(0, s.tau(ECG, t))
	return ok
}

// Temperature implements sensor.TempSource.
func (s *Source) Temperature(t time.Duration) (float64, bool) {
	ser := s.ch[Temp]
	if ser == nil {
		return s.temp.Temperature(t)
	}
	return ser.at(0, s.tau(Temp, t))
}
