package record_test

import (
	"math"
	"os"
	"path/filepath"
	"senseboard/content"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/record"
	"senseboard/replay"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
	"senseboard/sensor"
)

// played is what a device streamed: IMU9 at 104 Hz and ECG in mV at 256 Hz.
type played struct {
	imu []sensor.XYZ // acc, gyro, magn per sample, in that order
	ecg []float32
}

// play records ten seconds of a walking device's streams.
func play(t *testing.T, path string, format record.Format) played {
	t.Helper()
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "segments:\n  - walk: 1h\n")})
	imu, ecg, temp := d.SubscribeAll("/Meas/IMU9/104"), d.SubscribeAll("/Meas/ECG/256/mV"), d.SubscribeAll("/Meas/Temp")
	rec, err := record.New(path, format)
	if err != nil {
		t.Fatal(err)
	}
	var p played
	for range 10 {
		d.Advance(time.Second)
		for _, s := range []*sbt.Sub{imu, ecg, temp} {
			for _, e := range s.Events() {
				b, _ := resource.AppendJSON(nil, e.Content)
				if err := rec.Write(e.Sub.Topic.URI(), b); err != nil {
					t.Fatal(err)
				}
				switch c := e.Content.(type) {
				case *content.MotionData:
					for i := range c.ArrayAcc {
						p.imu = append(p.imu, c.ArrayAcc[i], c.ArrayGyro[i], c.ArrayMagn[i])
					}
				case *content.ECGDataMV:
					p.ecg = append(p.ecg, c.Samples...)
				}
			}
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRecordThenReplay records in both formats, reads the files back with
// the replay package, and gets the same samples.
func TestRecordThenReplay(t *testing.T) {
	for _, format := range []record.Format{record.CSV, record.JSONL} {
		dir := t.TempDir()
		base := filepath.Join(dir, "walk."+format.String())
		p := play(t, base, format)
		var recs []*replay.Recording
		var files []string
		if format == record.CSV {
			files, _ = filepath.Glob(filepath.Join(dir, "walk-*.csv"))
			if len(files) != 3 {
				t.Fatalf("CSV files %v, want one per stream", files)
			}
		} else {
			files = []string{base}
		}
		for _, f := range files {
			r, err := replay.Load(f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			recs = append(recs, r)
		}
		src := replay.NewSource(0, nil, recs...)
		n := len(p.imu) / 3
		acc, gyro, magn := make([]sensor.XYZ, n), make([]sensor.XYZ, n), make([]sensor.XYZ, n)
		src.FillIMU(acc, gyro, magn, 0, time.Second/104, sensor.Ranges{Acc: 16, Gyro: 2000})
		for i := range n {
			if acc[i] != p.imu[3*i] || gyro[i] != p.imu[3*i+1] || magn[i] != p.imu[3*i+2] {
				t.Fatalf("%s: IMU sample %d replays as %v %v %v, recorded %v %v %v", format, i, acc[i], gyro[i], magn[i], p.imu[3*i], p.imu[3*i+1], p.imu[3*i+2])
			}
		}
		ecg := make([]float64, len(p.ecg))
		src.FillECG(ecg, 0, time.Second/256)
		for i := range ecg {
			if math.Abs(ecg[i]-float64(p.ecg[i])) > 1e-6 {
				t.Fatalf("%s: ECG sample %d replays as %v, recorded %v", format, i, ecg[i], p.ecg[i])
			}
		}
		if _, ok := src.Temperature(5 * time.Second); !ok {
			t.Errorf("%s: no temperature replayed", format)
		}
	}
}

// A recording plays through a device's own resources.
func TestReplayThroughADevice(t *testing.T) {
	dir := t.TempDir()
	p := play(t, filepath.Join(dir, "walk.jsonl"), record.JSONL)
	r, err := replay.Load(filepath.Join(dir, "walk.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	d2 := sbt.New(t, senseboard.Config{Replay: []*replay.Recording{r}})
	s := d2.SubscribeAll("/Meas/IMU9/104")
	d2.Advance(2 * time.Second)
	i := 0
	for _, c := range s.Contents() {
		for _, v := range c.(*content.MotionData).ArrayAcc {
			if v != p.imu[3*i] {
				t.Fatalf("sample %d through the device %v, recorded %v", i, v, p.imu[3*i])
			}
			i++
		}
	}
	if i < 200 {
		t.Errorf("%d samples replayed", i)
	}
}

func TestCSVHeader(t *testing.T) {
	dir := t.TempDir()
	play(t, filepath.Join(dir, "h.csv"), record.CSV)
	b, _ := os.ReadFile(filepath.Join(dir, "h-Meas_IMU9_104.csv"))
	if !strings.HasPrefix(string(b), "# senseboard recording\n# stream: /net/000123/Meas/IMU9/104\n# rate: 104\n# units: Timestamp=ms, acc=m/s^2, gyro=deg/s, magn=uT\nTimestamp,acc_x,") {
		t.Errorf("header:\n%s", b[:200])
	}
}

// TestCSVOfOtherStreams: heart rate gets a row per RR interval (or one
// without when a notification brings no beat), other resources their JSON,
// both stamped with the time since the recording started.
func TestCSVOfOtherStreams(t *testing.T) {
	dir := t.TempDir()
	rec, err := record.New(filepath.Join(dir, "r.csv"), record.CSV)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ uri, content string }{
		{"/net/000123/Meas/HR", `{"average":61.5,"rrData":[970,981]}`},
		{"/net/000123/Meas/HR", `{"average":0,"rrData":[]}`},
		{"/net/000123/System/States/3", `{"Timestamp":15300,"StateId":[3,"DoubleTap"],"NewState":1}`},
	} {
		if err := rec.Write(w.uri, []byte(w.content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Write("/net/000123/Meas/HR", []byte(`{"rrData":[1]}`)); err == nil {
		t.Error("a heart-rate notification without an average was recorded")
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	hr, _ := os.ReadFile(filepath.Join(dir, "r-Meas_HR.csv"))
	rows := strings.Split(strings.TrimSpace(string(hr)), "\n")
	if len(rows) != 4+3 || rows[3] != "Received,average,rr" { // no rate line: HR has none
		t.Fatalf("HR file:\n%s", hr)
	}
	for i, want := range []string{",61.5,970", ",61.5,981", ",0,"} {
		ms, rest, _ := strings.Cut(rows[4+i], ",")
		if ","+rest != want || len(ms) > 4 {
			t.Errorf("HR row %q, want <ms since the start>%s", rows[4+i], want)
		}
	}
	st, _ := os.ReadFile(filepath.Join(dir, "r-System_States_3.csv"))
	if !strings.Contains(string(st), `,"{\"Timestamp\":15300,\"StateId\":[3,\"DoubleTap\"],\"NewState\":1}"`) {
		t.Errorf("states file:\n%s", st)
	}
}

// File says where each stream goes before anything is written.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		base   string
		format record.Format
		uri    string
		want   string
	}{
		{filepath.Join(dir, "ecg.csv"), record.CSV, "/net/000123/Meas/ECG/250", filepath.Join(dir, "ecg-Meas_ECG_250.csv")},
		{filepath.Join(dir, "walk"), record.CSV, "/Meas/Acc/104", filepath.Join(dir, "walk-Meas_Acc_104")},
		{filepath.Join(dir, "all.jsonl"), record.JSONL, "/net/000123/Meas/HR", filepath.Join(dir, "all.jsonl")},
	}
	for _, tt := range tests {
		r, err := record.New(tt.base, tt.format)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.File(tt.uri); got != tt.want {
			t.Errorf("File(%s) of %s: %s; want %s", tt.uri, tt.base, got, tt.want)
		}
		if err := r.Write(tt.uri, []byte(`{"Timestamp":1,"Samples":[1]}`)); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if files := r.Files(); len(files) != 1 || files[0] != tt.want {
			t.Errorf("%s: files %v; want %s", tt.base, files, tt.want)
		}
	}
}
