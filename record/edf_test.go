package record_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/edf"
	"senseboard/internal/mnetest"
	"senseboard/record"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

// recordWithGap records six seconds of IMU9 at 104 Hz, ECG in mV at 256
// Hz, temperature and heart rate; one IMU9 notification is left out, as
// one lost on the way would be.
func recordWithGap(t *testing.T, path string, format record.Format) []string {
	t.Helper()
	d := sbt.New(t, senseboard.Config{})
	subs := []*sbt.Sub{d.SubscribeAll("/Meas/IMU9/104"), d.SubscribeAll("/Meas/ECG/256/mV"), d.SubscribeAll("/Meas/Temp"), d.SubscribeAll("/Meas/HR")}
	rec, err := record.New(path, format)
	if err != nil {
		t.Fatal(err)
	}
	imu := 0
	for range 6 {
		d.Advance(time.Second)
		for _, s := range subs {
			for _, e := range s.Events() {
				uri := e.Sub.Topic.URI()
				if strings.Contains(uri, "IMU9") {
					if imu++; imu == 40 {
						continue
					}
				}
				b, _ := resource.AppendJSON(nil, e.Content)
				if err := rec.Write(uri, b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return rec.Files()
}

// A recording, in either format, exports to EDF+: its sampled streams as
// signals at their rates, its events as annotations; MNE reads the files.
func TestEDF(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var labels [][]string
	for _, tt := range []struct {
		name   string
		format record.Format
	}{{"rec.csv", record.CSV}, {"rec.jsonl", record.JSONL}} {
		files := recordWithGap(t, filepath.Join(dir, tt.name), tt.format)
		f, err := record.EDF(files)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		f.Start = time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)
		b, err := edf.Marshal(f)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		g, err := edf.Unmarshal(b)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var names []string
		for _, s := range g.Signals {
			names = append(names, s.Label)
			if secs := float64(len(s.Samples)) / s.Rate; secs < 5.5 || secs > 7 {
				t.Errorf("%s: %s: %d samples at %g Hz, want about 6 s (a second more to hold the annotations)", tt.name, s.Label, len(s.Samples), s.Rate)
			}
		}
		want := []string{"IMU9 Acc x", "IMU9 Acc y", "IMU9 Acc z", "IMU9 Gyro x", "IMU9 Gyro y", "IMU9 Gyro z", "IMU9 Magn x", "IMU9 Magn y", "IMU9 Magn z", "ECG"}
		if !slices.Equal(names, want) || g.Signals[0].Rate != 104 || g.Signals[9].Rate != 256 || g.Signals[0].Unit != "m/s2" || g.Signals[9].Unit != "mV" {
			t.Errorf("%s: signals %q (%s at %g Hz)", tt.name, names, g.Signals[0].Unit, g.Signals[0].Rate)
		}
		count := map[string]int{}
		for _, a := range g.Annotations {
			kind, _, _ := strings.Cut(a.Text, " ")
			count[kind]++
			if kind == "IMU9:" && a.Text != "IMU9: 8 samples lost" {
				t.Errorf("%s: gap %q", tt.name, a.Text)
			}
		}
		if count["HR"] < 3 || count["Temp"] < 2 || count["IMU9:"] != 1 {
			t.Errorf("%s: annotations %v", tt.name, count)
		}
		path := filepath.Join(dir, tt.name+".edf")
		if err := edf.WriteFile(path, f); err != nil {
			t.Fatal(err)
		}
		paths, labels = append(paths, path), append(labels, names)
	}
	for i, raw := range mnetest.ReadFiles(t, paths...) {
		hr := slices.ContainsFunc(raw.Texts, func(s string) bool { return strings.HasPrefix(s, "HR ") })
		if !slices.Equal(raw.Names, labels[i]) || raw.Seconds < 5.5 || raw.Seconds > 7 || !hr || raw.Start != 1_795_471_200 {
			t.Errorf("MNE reads %s as %+v", paths[i], raw)
		}
	}
}

// What is not a recording, or has nothing to plot, is refused with why.
func TestEDFRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, text, want string
	}{
		{"hr.csv", "# senseboard recording\n# stream: /net/1/Meas/HR\n# units: x\nReceived,average,rr\n12,70,800\n", "no sampled stream"},
		{"hr1.csv", "# senseboard recording\n# stream: /net/1/Meas/HR\n# units: x\nReceived,average,rr\n12\n", "1 column, want 3"},
		{"bad.csv", "# senseboard recording\n# stream: /net/1/Meas/Acc/52\n# units: x\nTimestamp,x,y,z\n1,2,3\n", "3 columns, want 4"},
		{"nan.csv", "# senseboard recording\n# stream: /net/1/Meas/Acc/52\n# units: x\nTimestamp,x,y,z\n1,2,three,4\n", `"three" is not a number`},
		{"nohead.csv", "Timestamp,x,y,z\n1,2,3,4\n", `without its "# stream:" line`},
		{"jump.csv", "# senseboard recording\n# stream: /net/1/Meas/Acc/52\n# units: x\nTimestamp,x,y,z\n1,2,3,4\n4000000000,2,3,4\n", "jumps 4000000 s ahead at its sample 2"},
		{"bad.jsonl", "{\"t\": 1, \"uri\": \"/Meas/Acc/52\", \"content\": {\"ArrayAcc\": []}}\n", "without its Timestamp"},
	} {
		path := filepath.Join(dir, tt.name)
		if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := record.EDF([]string{path}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := record.EDF([]string{filepath.Join(dir, "none.csv")}); err == nil {
		t.Error("a file that does not exist exported")
	}
}

// FuzzEDF reads any bytes as a recording's CSV or JSON Lines file: an EDF+
// recording that writes, or an error, never a panic.
func FuzzEDF(f *testing.F) {
	f.Add(true, []byte("# senseboard recording\n# stream: /net/1/Meas/Acc/52\n# rate: 52\n# units: x\nTimestamp,x,y,z\n1,2,3,4\n20.2,2,3,4\n"))
	f.Add(true, []byte("# stream: /net/1/Meas/IMU6/104\nTimestamp,acc_x,acc_y,acc_z,gyro_x,gyro_y,gyro_z\n0,1,2,3,4,5,6\n500,1,2,3,4,5,6\n"))
	f.Add(true, []byte("# stream: /net/1/Meas/HR\nReceived,average,rr\n5,60,1000\n"))
	f.Add(true, []byte("# stream: /net/1/Meas/Acc/1666\nTimestamp,x,y,z\n0,1,2,3\n500000,1,2,3\n"))
	f.Add(false, []byte(`{"t":1,"uri":"/net/1/Meas/ECG/125","content":{"Timestamp":4,"Samples":[1,2,3]}}`+"\n"+`{"t":2,"uri":"/net/1/System/States/0","content":{"StateId":0,"NewState":1}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, csv bool, data []byte) {
		name := filepath.Join(dir, "rec.jsonl")
		if csv {
			name = filepath.Join(dir, "rec-Meas_Acc_52.csv")
		}
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
		g, err := record.EDF([]string{name})
		if err != nil {
			return
		}
		if len(g.Signals) == 0 {
			t.Fatal("an EDF+ recording without signals")
		}
		if _, err := edf.Marshal(g); err != nil && !errors.Is(err, edf.ErrInvalid) {
			t.Fatalf("write: %v", err)
		}
	})
}
