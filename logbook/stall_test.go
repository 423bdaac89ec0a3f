package logbook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/edf"
	"senseboard/internal/await"
	"senseboard/internal/mnetest"
	"senseboard/logbook"
	"senseboard/logfile"
	"senseboard/resource"
)

// hostClock is a virtual clock that no work holds: the device's time goes
// on while the logger is held up, as real time does while a host
// deschedules the logger or an fsync stalls.
type hostClock struct{ clock.Clock }

// ecgPeriod is the time between two notifications of the ECG at 500 Hz:
// 16 samples.
const ecgPeriod = 32.0

// logHeldUp logs /Meas/ECG/500/mV and /Meas/IMU9/208 on a device whose
// time goes on while the logger is held up, holds the logger's first write
// of the log for held of device time, and returns the log once logging
// stopped.
func logHeldUp(t *testing.T, held time.Duration) []byte {
	t.Helper()
	return logHeldUpAt(t, stallScript{paths: []string{"/Meas/ECG/500/mV", "/Meas/IMU9/208"}, holds: []time.Duration{held}, after: 500 * time.Millisecond})
}

// stallScript is a run of the logger held up: the streams it logs, how
// long each of its first writes of the log is held (in device time, one
// after the other, the logger keeping up between them), and how long it
// keeps up after the last before logging stops; and, when stopHeld is
// not zero, how long the logger is held up (not writing) when the request
// that stops logging comes, so that notifications wait for it.
type stallScript struct {
	paths    []string
	holds    []time.Duration
	after    time.Duration
	stopHeld time.Duration
}

// logHeldUpAt logs sc's paths on a device whose time goes on while the
// logger is held up, holds its writes of the log as sc says, and returns
// the log once logging stopped.
func logHeldUpAt(t *testing.T, sc stallScript) []byte {
	t.Helper()
	v := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Clock: hostClock{v}, StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	// quit closes when the test ends, before the device closes: a wait that
	// failed leaves no write held, which the close would wait for.
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	expect := func(status resource.Status, op resource.Op, path string, params ...resource.Value) resource.Envelope {
		t.Helper()
		env, err := d.Call(op, path, params...)
		if err != nil || env.Status != status {
			t.Fatalf("%s %s: %v %d %s, want %d", op, path, err, env.Status, env.Error, status)
		}
		return env
	}
	// caughtUp returns once the logger has taken the notifications sent
	// before it: the app handles a request, then what waits for it, then
	// the next request.
	caughtUp := func() {
		t.Helper()
		for range 2 {
			expect(200, resource.Get, "/Mem/DataLogger/State")
		}
	}
	run := func(dt time.Duration) { // device time, the logger keeping up
		for range dt / (10 * time.Millisecond) {
			v.Advance(10 * time.Millisecond)
			caughtUp()
		}
	}

	expect(200, resource.Put, "/Time", resource.Int64(1_763_900_000_000_000))
	expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, append([]string{"/Time/Detailed"}, sc.paths...)...))
	holding, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	writes := 0
	logbook.HoldWrites(d.Logbook, func() {
		mu.Lock()
		writes++
		held := writes <= len(sc.holds)
		mu.Unlock()
		if held {
			select {
			case holding <- struct{}{}:
			case <-quit:
				return
			}
			select {
			case <-release:
			case <-quit:
			}
		}
	})
	expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	for _, held := range sc.holds {
		run(logbook.FlushInterval - 10*time.Millisecond)
		v.Advance(10 * time.Millisecond) // the next write of the log
		await.Within(t, holding, "the log's next write has not come")
		for range held / (10 * time.Millisecond) {
			v.Advance(10 * time.Millisecond)
		}
		release <- struct{}{}
		caughtUp()
	}
	run(sc.after)
	if sc.stopHeld == 0 {
		expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	} else {
		started, hold := make(chan struct{}), make(chan struct{})
		var once sync.Once
		letGo := func() { once.Do(func() { close(hold) }) }
		t.Cleanup(letGo) // also after a failed wait, before the device closes
		done := logbook.StopAfter(d.Logbook, started, hold)
		await.Within(t, started, "the app has not run the stop")
		for range sc.stopHeld / (10 * time.Millisecond) {
			v.Advance(10 * time.Millisecond)
		}
		letGo()
		if resp := await.Within(t, done, "the stop has not been answered"); resp.Status != resource.StatusOK {
			t.Fatalf("stop: %d %v", resp.Status, resp.Content)
		}
	}
	return expect(200, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(1)).Content.(*logbook.LogData).Data
}

// times returns the timestamps of a stream's records, and the records of
// its losses.
func times(recs []logfile.Record, stream string) (ts []float64, lost []logfile.Record) {
	for _, r := range recs {
		switch {
		case r.Stream == stream && r.Timestamp != nil:
			ts = append(ts, *r.Timestamp)
		case r.Stream == logbook.LostPrefix+stream:
			lost = append(lost, r)
		}
	}
	return ts, lost
}

// field returns the first value of a record's field.
func field(r logfile.Record, name string) float64 {
	for _, f := range r.Fields {
		if f.Name == name && len(f.Values) > 0 {
			return f.Values[0]
		}
	}
	return math.NaN()
}

// A logger held up for less than WriteStall (a disk whose fsync stalls, a
// host that deschedules it) loses nothing: the ECG at 500 Hz, whose front
// end lets a radio link's subscriber fall two notifications behind, and
// IMU9 at 208 Hz are logged without a gap.
func TestLoggerHeldUpLosesNothing(t *testing.T) {
	recs, err := logfile.Decode(logHeldUp(t, logbook.WriteStall*3/4))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		stream string
		period float64 // ms between two records
	}{
		{"MeasECGmV", ecgPeriod},
		{"MeasIMU9", imu9Step},
	} {
		ts, lost := times(recs, tt.stream)
		if len(lost) > 0 {
			t.Errorf("%s: %d loss records, the first of %.0f notifications from %.0f to %.0f ms", tt.stream, len(lost),
				field(lost[0], "Notifications"), *lost[0].Timestamp, field(lost[0], "Until"))
		}
		if len(ts) < 40 {
			t.Fatalf("%s: %d records", tt.stream, len(ts))
		}
		for i := 1; i < len(ts); i++ {
			if gap := ts[i] - ts[i-1]; gap > 1.5*tt.period {
				t.Errorf("%s: %.0f ms between records at %.0f and %.0f ms; records come every %.1f ms", tt.stream, gap, ts[i-1], ts[i], tt.period)
			}
		}
	}
}

// A logger held up for longer than WriteStall loses notifications, and the
// log says so where the loss is: a LostMeasECGmV record with as many
// notifications as the gap in the ECG's timestamps holds, between the
// records on either side of it. The exports show it: CSV rows and a JSON
// record of the stream LostMeasECGmV, and an EDF+ annotation that
// MNE-Python reads.
func TestLoggerRecordsWhatItLost(t *testing.T) {
	log := logHeldUp(t, 2*logbook.WriteStall)
	recs, err := logfile.Decode(log)
	if err != nil {
		t.Fatal(err)
	}
	if _, lost := times(recs, "MeasIMU9"); len(lost) > 0 {
		t.Errorf("IMU9: %+v lost; 16 notifications a second wait for the logger", lost)
	}
	ts, lost := times(recs, "MeasECGmV")
	if len(lost) != 1 {
		t.Fatalf("ECG: %d loss records, want 1: %+v", len(lost), lost)
	}
	from, until, n := *lost[0].Timestamp, field(lost[0], "Until"), field(lost[0], "Notifications")
	t.Logf("ECG: %.0f notifications lost from %.0f to %.0f ms", n, from, until)
	gaps := 0
	for i := 1; i < len(ts); i++ {
		if gap := ts[i] - ts[i-1]; gap > 1.5*ecgPeriod {
			gaps++
			if ts[i-1] != from || ts[i] != until {
				t.Errorf("ECG: gap from %.0f to %.0f ms; the loss record says %.0f to %.0f", ts[i-1], ts[i], from, until)
			}
			if want := math.Round(gap/ecgPeriod) - 1; n != want {
				t.Errorf("ECG: %.0f notifications lost, the gap of %.0f ms holds %.0f", n, gap, want)
			}
		}
	}
	if gaps != 1 || n < 1 {
		t.Errorf("ECG: %d gaps, %.0f notifications lost; want one gap", gaps, n)
	}

	var csv, js bytes.Buffer
	if err := logfile.WriteCSV(&csv, log); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Until", "Notifications"} {
		if !strings.Contains(csv.String(), ",LostMeasECGmV,") || !strings.Contains(csv.String(), ","+f+",0,") {
			t.Errorf("CSV has no LostMeasECGmV row of %s", f)
		}
	}
	if err := logfile.WriteJSON(&js, log); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Records []logfile.Record }
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, lost := times(doc.Records, "MeasECGmV"); len(lost) != 1 || field(lost[0], "Notifications") != n {
		t.Errorf("JSON: loss records %+v, want one of %.0f notifications", lost, n)
	}

	f, err := logfile.EDF(log)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "log.edf")
	if err := edf.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("ECGmV: %.0f notifications lost by the data logger", n)
	found := false
	for _, got := range mnetest.Read(t, path).Texts {
		found = found || strings.HasPrefix(got, text)
	}
	if !found {
		t.Errorf("MNE found no annotation %q", text)
	}
}

// lossesMatchGaps checks a stream's loss records against the gaps in its
// timestamps, its records coming every step ms and its notifications
// every period ms (a notification is one record or several): each gap of
// more than 1.5 steps has one record from the last notification before it
// to the first after it, with as many notifications as the gap holds; a
// record from the stream's last notification logged on (a loss at the
// stop) has none after it. It returns the records.
func lossesMatchGaps(t *testing.T, recs []logfile.Record, stream string, step, period float64) []logfile.Record {
	t.Helper()
	ts, lost := times(recs, stream)
	if len(ts) < 2 {
		t.Fatalf("%s: %d records", stream, len(ts))
	}
	var gaps [][2]float64
	for i := 1; i < len(ts); i++ {
		if ts[i]-ts[i-1] > 1.5*step {
			gaps = append(gaps, [2]float64{ts[i-1], ts[i]})
		}
	}
	// of the last notification: its first record's timestamp
	near := func(from, last float64) bool { return from <= last && last-from < period }
	for _, r := range lost {
		from, until, n := *r.Timestamp, field(r, "Until"), field(r, "Notifications")
		t.Logf("%s: %.0f notifications lost from %.0f to %.0f ms", stream, n, from, until)
		if near(from, ts[len(ts)-1]) && until > ts[len(ts)-1] {
			// at the stop: those that came before it
			if want := math.Floor((until-from)/period) - 1; n != want {
				t.Errorf("%s: %.0f notifications lost from %.0f ms to the stop at %.0f, which holds %.0f", stream, n, from, until, want)
			}
			continue
		}
		if len(gaps) == 0 || !near(from, gaps[0][0]) || until != gaps[0][1] {
			t.Errorf("%s: loss from %.0f to %.0f ms; the gaps in the timestamps are %v", stream, from, until, gaps)
			continue
		}
		if want := math.Round((until-from)/period) - 1; n != want {
			t.Errorf("%s: %.0f notifications lost from %.0f to %.0f ms, a gap that holds %.0f", stream, n, from, until, want)
		}
		gaps = gaps[1:]
	}
	if len(gaps) > 0 {
		t.Errorf("%s: gaps %v with no loss record", stream, gaps)
	}
	return lost
}

// IMU9 at 208 Hz comes as notifications of 8 samples, each logged as two
// records of 4 (a record stays below the SBEM escape).
const (
	imu9Period = 8 * 1000 / 208.0
	imu9Step   = imu9Period / 2
)

// Losses in every position are recorded where they are: two in a row,
// one at the stop (no notification logged after it), one while the stop
// waits for the logger held up, and several streams losing at once.
func TestLoggerRecordsEachLoss(t *testing.T) {
	for _, tt := range []struct {
		name string
		sc   stallScript
		want map[string]int // loss records of each stream
	}{
		{"two in a row", stallScript{paths: []string{"/Meas/ECG/500/mV"}, holds: []time.Duration{2 * logbook.WriteStall, 3 * logbook.WriteStall}, after: 500 * time.Millisecond}, map[string]int{"MeasECGmV": 2}},
		{"at the stop", stallScript{paths: []string{"/Meas/ECG/500/mV"}, holds: []time.Duration{2 * logbook.WriteStall}}, map[string]int{"MeasECGmV": 1}},
		// the notifications that waited while the stop came are logged
		{"stop while held up", stallScript{paths: []string{"/Meas/ECG/500/mV"}, after: 500 * time.Millisecond, stopHeld: 2 * logbook.WriteStall}, map[string]int{"MeasECGmV": 1}},
		// IMU9's wait, a notification a sample, lasts 16 s
		{"two streams", stallScript{paths: []string{"/Meas/ECG/500/mV", "/Meas/IMU9/208"}, holds: []time.Duration{20 * time.Second}, after: 500 * time.Millisecond}, map[string]int{"MeasECGmV": 1, "MeasIMU9": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := logfile.Decode(logHeldUpAt(t, tt.sc))
			if err != nil {
				t.Fatal(err)
			}
			for stream, want := range tt.want {
				step, period := ecgPeriod, ecgPeriod
				if stream == "MeasIMU9" {
					step, period = imu9Step, imu9Period
				}
				if lost := lossesMatchGaps(t, recs, stream, step, period); len(lost) != want {
					t.Errorf("%s: %d loss records, want %d", stream, len(lost), want)
				}
			}
		})
	}
}
