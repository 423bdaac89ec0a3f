package replay

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"senseboard/internal/needs"
	"senseboard/sensor"
	"senseboard/wfdb"
	"senseboard/world"
)

// needData returns the path of a file of the shared test data, beside the
// repository or where SENSEBOARD_DATA says; tests that need it skip without
// it (fail under CI).
func needData(t testing.TB, rel string) string {
	t.Helper()
	return needs.Data(t, rel)
}

func TestRealRecordings(t *testing.T) {
	tests := []struct {
		file     string
		channels []Channel
		rate     float64
		check    func(*Recording) error
	}{
		{"movesense/tjrantal_movesenseJsonReader/MovesenseLog_3_786.json", []Channel{Acc, Gyro, Magn}, 104, func(r *Recording) error {
			if z := r.Series[Acc].Axes[2][0]; math.Abs(z+9.66) > 0.1 {
				return fmt.Errorf("first acc z %.3f, want about -9.66", z)
			}
			return nil
		}},
		{"movesense/sensein_movesense-py/log_002030_5_MeasECGmV.csv", []Channel{ECG}, 200, nil},
		{"movesense/lenaadel_tutorial_dyadic_movesense/234130000540_ECG-2025_01_25-16_42_59.csv", []Channel{ECG}, 200, func(r *Recording) error {
			missing := 0
			for _, v := range r.Series[ECG].Axes[0] {
				if math.IsNaN(v) {
					missing++
				}
			}
			if missing == 0 {
				return errors.New("no sample marked missing; the export holds -131072 sentinels")
			}
			return nil
		}},
		{"mitdb/100s.hea", []Channel{ECG}, 360, func(r *Recording) error {
			if len(r.Beats) < 60 || len(r.Beats) > 90 {
				return fmt.Errorf("%d annotated beats in 60 s", len(r.Beats))
			}
			if r.Length < 59*time.Second || r.Length > 61*time.Second {
				return fmt.Errorf("length %v", r.Length)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		r, err := Load(needData(t, tt.file))
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if got := fmt.Sprint(r.Channels()); got != fmt.Sprint(tt.channels) {
			t.Errorf("%s: channels %s, want %v", tt.file, got, tt.channels)
		}
		if s := r.Series[tt.channels[0]]; math.Abs(s.Rate-tt.rate) > tt.rate*0.02 {
			t.Errorf("%s: rate %.2f, want %g", tt.file, s.Rate, tt.rate)
		}
		if tt.check != nil {
			if err := tt.check(r); err != nil {
				t.Errorf("%s: %v", tt.file, err)
			}
		}
	}
}

func TestWFDBBeatCounts(t *testing.T) {
	want := map[string]int{"100": 2273, "101": 1865, "103": 2084, "105": 2572, "119": 1987, "208": 2955}
	for rec, n := range want {
		r, err := Load(needData(t, "mitdb/"+rec+".hea"))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Beats) != n {
			t.Errorf("record %s: %d beats, want %d (WFDB rule)", rec, len(r.Beats), n)
		}
	}
}

// Every WFDB record of the shared data loads, and each of its signals, not
// only those Load plays, decodes with its checksum checked: every signal
// line gives one, and every record line the number of samples.
func TestSharedWFDBRecords(t *testing.T) {
	n := 0
	for _, dir := range []string{"mitdb", "devcorpus/svdb", "devcorpus/qtdb", "devcorpus/nstdb"} {
		heas, err := filepath.Glob(filepath.Join(needData(t, dir), "*.hea"))
		if err != nil || len(heas) == 0 {
			t.Fatalf("%s: no headers (%v)", dir, err)
		}
		for _, hea := range heas {
			n++
			if _, err := Load(hea); err != nil {
				t.Error(err)
				continue
			}
			b, err := os.ReadFile(hea)
			if err != nil {
				t.Fatal(err)
			}
			h, err := wfdb.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			for sig, s := range h.Signals {
				if !s.HasChecksum || h.Samples == 0 {
					t.Errorf("%s signal %d: nothing to check its samples against (checksum given %v, %d samples)", hea, sig, s.HasChecksum, h.Samples)
				}
				dat, err := os.ReadFile(filepath.Join(filepath.Dir(hea), s.File))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.Decode(dat, sig); err != nil {
					t.Errorf("%s: %v", hea, err)
				}
			}
		}
	}
	t.Logf("%d records", n)
}

func TestOwnCSVAndPCSimulator(t *testing.T) {
	own := "# senseboard recording\n# stream: /Meas/Acc/104\n# rate: 104\n# units: Timestamp=ms, x=m/s^2, y=m/s^2, z=m/s^2\nTimestamp,x,y,z\n" +
		"1000,0.1,0.2,9.8\n1009.615,0.2,0.3,9.7\n1019.23,0.3,0.4,9.6\n"
	r, err := Parse("own.csv", []byte(own))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Series[Acc]
	if s == nil || s.Rate != 104 || s.Len() != 3 || s.T[0] != 0 || s.Axes[2][2] != 9.6 {
		t.Fatalf("own CSV read as %+v", s)
	}
	sim := "LoopingTimeStamp:20\nTimestamp,/Meas/Acc/x,/Meas/Acc/y,/Meas/Acc/z,/Meas/Gyro/x,/Meas/Gyro/y,/Meas/Gyro/z,/Meas/Temp\n" +
		"0,1,2,3,4,5,6,300\n10,1.5,2,3,4,5,6,300.5\n20,2,2,3,4,5,6,301\n"
	r, err = Parse("sim.csv", []byte(sim))
	if err != nil {
		t.Fatal(err)
	}
	if r.Length != 20*time.Millisecond || r.Series[Gyro].Axes[2][0] != 6 || r.Series[Temp].Axes[0][2] != 301 || r.Series[Acc].Rate != 100 {
		t.Errorf("PC-simulator CSV: length %v, %+v", r.Length, r.Series[Gyro])
	}
}

func TestJSONLines(t *testing.T) {
	data := `{"t":0,"uri":"/net/1/Meas/IMU6/52","content":{"Timestamp":100,"ArrayAcc":[{"x":1,"y":2,"z":3},{"x":1,"y":2,"z":4}],"ArrayGyro":[{"x":0,"y":0,"z":1},{"x":0,"y":0,"z":2}]}}
{"t":40,"uri":"/net/1/Meas/ECG/128/mV","content":{"Timestamp":100,"Samples":[0.1,0.2,0.3]}}
{"t":80,"uri":"/net/1/Meas/Temp","content":{"Timestamp":100,"Measurement":306.5}}
{"t":90,"uri":"/net/1/Meas/Temp","content":{"Timestamp":1100,"Measurement":306.6}}
{"t":100,"uri":"/net/1/Meas/HR","content":{"average":60,"rrData":[1000]}}
`
	r, err := Parse("rec.jsonl", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Series[Acc]; a.Len() != 2 || a.Rate != 52 || a.Axes[2][1] != 4 {
		t.Errorf("acc %+v", a)
	}
	if e := r.Series[ECG]; e.Len() != 3 || e.Rate != 128 || e.Axes[0][2] != 0.3 {
		t.Errorf("ecg %+v", e)
	}
	if r.Series[Temp].Len() != 2 {
		t.Errorf("temp %+v", r.Series[Temp])
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, data, msg string }{
		{"empty.csv", "", "empty"},
		{"x.bin", "\x00\x01", "not a recording format"},
		{"a.csv", "Timestamp_ms,Value\n1,abc\n", `"abc" is not a number`},
		{"b.csv", "Timestamp,/Meas/Acc/x\n1,2,3\n", "3 fields"},
		{"c.csv", "Timestamp,foo\n1,2\n", "no column of a known signal"},
		{"d.jsonl", "{\"uri\":\"/Meas/Acc\",\"content\":{\"Timestamp\":1,\"ArrayAcc\":[{\"x\":1,\"y\":1,\"z\":1}]}}\n", "no sample rate"},
		{"e.jsonl", "{nope\n", "line 1"},
		{"f.csv", "Timestamp_ms,Value\n1,2\n", "at least 2"},
		{"h.csv", "Timestamp,Sample\n10,0\n7000,0\n", "sample rate of 0.000143 Hz; 0.001 to 100000 Hz are allowed"},
		{"g.json", `{"Meas":{"IMU9":[{"Timestamp":5,"ArrayAcc":[{"x":1,"y":1,"z":1}]},{"Timestamp":5,"ArrayAcc":[{"x":1,"y":1,"z":1}]}]}}`, "do not increase"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.name, []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%s: %v, want naming the file and %q", tt.name, err, tt.msg)
		}
	}
	for _, hea := range []string{"r 1 360\nr.dat 8 200\n", "r 2 360\nr.dat 16 200\nr.dat 212 200\n"} {
		if _, err := WFDB("r", []byte(hea), make([]byte, 12), nil); !errors.Is(err, wfdb.ErrFormat) {
			t.Errorf("header %q: %v, want the formats read named", hea, err)
		}
	}
	// a second signal at twice the first's rate is not read as a lead of
	// the first's
	if _, err := WFDB("r", []byte("r 2 360\nr.dat 16 200\nr.dat 16x2 200\n"), make([]byte, 12), nil); !errors.Is(err, wfdb.ErrSamplesPerFrame) {
		t.Errorf("a second signal of two samples a frame: %v, want ErrSamplesPerFrame", err)
	}
}

// A format 16 record reads as one in format 212 does: the first signal, in
// mV from its baseline and gain.
func TestWFDBFormat16(t *testing.T) {
	dat := []byte{0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80}
	r, err := WFDB("r", []byte("r 2 360\nr.dat 16 100(10)\nr.dat 16 100\n"), dat, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Series[ECG].Axes[0]; fmt.Sprint(got) != "[-0.09 327.57]" {
		t.Errorf("format 16 record: ECG %v mV, want [-0.09 327.57]", got)
	}
}

// Plays names the recording whose channel a source plays: the first with
// it, as NewSource takes it, or none.
func TestPlays(t *testing.T) {
	rec := func(length time.Duration, cs ...Channel) *Recording {
		r := &Recording{Length: length}
		for _, c := range cs {
			r.Series[c] = &Series{Channel: c}
		}
		return r
	}
	recs := []*Recording{rec(1, Acc), rec(2, ECG, Acc), rec(3, Temp, ECG)}
	src := NewSource(0, nil, recs...)
	for c, want := range map[Channel]int{Acc: 0, Gyro: -1, Magn: -1, ECG: 1, Temp: 2} {
		i := Plays(c, recs)
		if i != want {
			t.Errorf("Plays(%s) = %d; want %d", c, i, want)
			continue
		}
		switch {
		case i < 0 && src.ch[c] != nil:
			t.Errorf("%s: the source plays a series no recording has", c)
		case i >= 0 && (src.ch[c] != recs[i].Series[c] || src.length[c] != recs[i].Length):
			t.Errorf("%s: the source plays another recording's than Plays says", c)
		}
	}
	if got := Plays(ECG, nil); got != -1 {
		t.Errorf("Plays of no recording = %d; want -1", got)
	}
}

// WFDB and a record's one signal read a header alike: a signal alone is
// the lead WFDB gives for it, with the file's prolog (its byte offset)
// and the signal's skew honoured; a signal the header lacks, and a header
// that does not parse, are refused naming the record.
func TestWFDBSignal(t *testing.T) {
	// a prolog of 2 bytes, then frames (1, 10), (2, 20), (3, 30); the
	// second signal a frame late
	hea := "r 2 360\nr.dat 16+2 100\nr.dat 16:1+2 100\n"
	dat := []byte{9, 9, 1, 0, 10, 0, 2, 0, 20, 0, 3, 0, 30, 0}
	both, err := WFDB("r", []byte(hea), dat, nil)
	if err != nil {
		t.Fatal(err)
	}
	axes := both.Series[ECG].Axes
	if got := fmt.Sprint(axes); got != "[[0.01 0.02 0.03] [0.2 0.3 NaN]]" {
		t.Errorf("leads %s mV, want [[0.01 0.02 0.03] [0.2 0.3 NaN]]", got)
	}
	h, err := wfdb.ParseHeader([]byte(hea))
	if err != nil {
		t.Fatal(err)
	}
	for lead := range 2 {
		one, err := wfdbRecord("r", h, dat, nil, lead)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(one.Series[ECG].Axes), fmt.Sprint(axes[lead:lead+1]); got != want {
			t.Errorf("signal %d alone: %s mV, want %s", lead, got, want)
		}
	}
	if _, err := wfdbRecord("r", h, dat, nil, 2); !errors.Is(err, wfdb.ErrSignalNumber) || !strings.Contains(err.Error(), "r: signal 2 of 2") {
		t.Errorf("signal 2 of 2: %v", err)
	}
	if _, err := WFDB("bad", []byte("r 2 360\nr.dat 16:x 100\n"), dat, nil); err == nil || !strings.HasPrefix(err.Error(), "bad: ") {
		t.Errorf("a header of a bad skew: %v, want an error naming the record", err)
	}
}

// A record's second signal is the ECG's second lead when it is in
// millivolts and in the first's file; the ECG's first axis is the first
// signal whatever the second is. A source offers the second lead to the
// heart rate only when told to (SetHRLeads 2), which a record of one
// refuses.
func TestWFDBSecondLead(t *testing.T) {
	// frames (1, -1) and (32767, -32768): -32768 marks a missing sample
	dat := []byte{0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80}
	for _, tt := range []struct {
		header string
		second string // the second axis, "" for none
	}{
		{"r 2 360\nr.dat 16 100(10)\nr.dat 16 100\n", "[-0.01 NaN]"},
		{"r 2 360\nr.dat 16 100(10)/mV\nr.dat 16 100/mV\n", "[-0.01 NaN]"},
		{"r 2 360\nr.dat 16 100(10)\nr.dat 16 50(-3)/mV\n", "[0.04 NaN]"}, // its own gain and baseline
		{"r 2 360\nr.dat 16 100(10)\nr.dat 16 100/mmHg\n", ""},
		{"r 2 360\nr.dat 16 100(10)\ns.dat 16 100\n", ""},
		{"r 1 360\nr.dat 16 100(10)\n", ""},
	} {
		d := dat
		if strings.Count(tt.header, "r.dat") == 1 { // the first signal alone in r.dat
			d = []byte{0x01, 0x00, 0xFF, 0x7F}
		}
		r, err := WFDB("r", []byte(tt.header), d, nil)
		if err != nil {
			t.Errorf("%q: %v", tt.header, err)
			continue
		}
		axes := r.Series[ECG].Axes
		if got := fmt.Sprint(axes[0]); got != "[-0.09 327.57]" {
			t.Errorf("%q: first lead %v mV, want [-0.09 327.57]", tt.header, got)
		}
		switch {
		case tt.second == "" && len(axes) != 1:
			t.Errorf("%q: %d leads, want 1", tt.header, len(axes))
		case tt.second != "" && (len(axes) != 2 || fmt.Sprint(axes[1]) != tt.second):
			t.Errorf("%q: leads %v, want a second of %s", tt.header, axes, tt.second)
		}
		src := NewSource(0, nil, r)
		if src.TwoLeads() {
			t.Errorf("%q: the source offers two leads by default", tt.header)
		}
		if err := src.SetHRLeads(2); (err != nil) != (tt.second == "") {
			t.Errorf("%q: SetHRLeads(2): %v", tt.header, err)
		}
		if two := src.TwoLeads(); two != (tt.second != "") {
			t.Errorf("%q: the source's TwoLeads() = %v after SetHRLeads(2)", tt.header, two)
		}
	}
}

// A record of two leads plays its first lead as the ECG, as a record of
// its first signal alone does, and gives the second with it
// (FillTwoLeads), as a record of its second signal alone plays it; a
// source without a second lead gives none, and refuses to offer one
// (SetHRLeads).
func TestSourceTwoLeads(t *testing.T) {
	hea := needData(t, "mitdb/100s.hea")
	both, err := Load(hea)
	if err != nil {
		t.Fatal(err)
	}
	var one [2]*Recording
	for lead := range one {
		if one[lead], err = loadLead(hea, lead); err != nil {
			t.Fatal(err)
		}
	}
	if len(both.Series[ECG].Axes) != 2 || len(one[1].Series[ECG].Axes) != 1 {
		t.Fatalf("%d and %d leads, want 2 and 1", len(both.Series[ECG].Axes), len(one[1].Series[ECG].Axes))
	}
	src := NewSource(time.Second, nil, both)
	if sensor.SecondLead(src) != nil {
		t.Fatal("a record of two leads offers the heart rate two by default")
	}
	if err := src.SetHRLeads(2); err != nil {
		t.Fatal(err)
	}
	if sensor.SecondLead(src) == nil {
		t.Fatal("a record of two leads offers one after SetHRLeads(2)")
	}
	for _, rate := range []float64{128, 256, 360, 512} {
		dt := time.Duration(float64(time.Second) / rate)
		t0 := 3*time.Second + dt/3
		n := int(rate) * 5
		ecg, lead0, lead1 := make([]float64, n), make([]float64, n), make([]float64, n)
		src.FillECG(ecg, t0, dt)
		src.FillTwoLeads(lead0, lead1, t0, dt)
		for lead, want := range one {
			w := make([]float64, n)
			NewSource(time.Second, nil, want).FillECG(w, t0, dt)
			got := [2][]float64{ecg, lead1}[lead]
			if !slices.Equal(got, w) {
				t.Errorf("%g Hz: lead %d plays otherwise than a record of that signal alone", rate, lead)
			}
		}
		if !slices.Equal(lead0, ecg) {
			t.Errorf("%g Hz: FillTwoLeads's first lead is not FillECG's", rate)
		}
	}
	model := sensor.NewModel(world.New(1, nil, 0), 1)
	for name, src := range map[string]*Source{"one lead": NewSource(0, nil, one[0]), "the model's ECG": NewSource(0, model)} {
		if err := src.SetHRLeads(2); !errors.Is(err, ErrNoSecondLead) {
			t.Errorf("%s: SetHRLeads(2): %v; want ErrNoSecondLead", name, err)
		}
		if sensor.SecondLead(src) != nil {
			t.Errorf("%s: a second lead", name)
		}
		lead1 := []float64{1, 2, 3}
		src.FillTwoLeads(make([]float64, 3), lead1, 0, time.Millisecond)
		if !slices.Equal(lead1, []float64{0, 0, 0}) {
			t.Errorf("%s: FillTwoLeads's second lead %v, want zeros", name, lead1)
		}
	}
}

// rampRecord returns a record of two leads of a second at 360 Hz, each a
// ramp (the second twice as steep), wrapping at 256 ADC units.
func rampRecord(t *testing.T) *Recording {
	t.Helper()
	dat := make([]byte, 0, 4*360)
	for i := range 360 {
		dat = append(dat, byte(i), 0, byte(2*i), 0)
	}
	r, err := WFDB("r", []byte("r 2 360\nr.dat 16 100\nr.dat 16 100\n"), dat, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A record of two leads played below its rate filters its second lead
// only once the heart rate reads it: by default the ECG's resampled copy
// holds the first lead alone, as for a record of one.
func TestSourceSecondLeadFilteredWhenRead(t *testing.T) {
	r := rampRecord(t)
	ser := r.Series[ECG]
	filtered := func() (n [2]int) {
		ser.mu.Lock()
		defer ser.mu.Unlock()
		for _, c := range ser.resampled {
			for k, a := range c.Axes {
				if a != nil {
					n[k]++
				}
			}
		}
		return n
	}
	src := NewSource(0, nil, r)
	buf, lead1 := make([]float64, 64), make([]float64, 64)
	src.FillECG(buf, 0, time.Second/256)
	src.Contact(0)
	if got := filtered(); got != [2]int{1, 0} {
		t.Errorf("after FillECG at 256 Hz: %v copies of each lead filtered, want [1 0]", got)
	}
	src.FillTwoLeads(buf, lead1, 0, time.Second/256)
	if got := filtered(); got != [2]int{1, 1} {
		t.Errorf("after FillTwoLeads at 256 Hz: %v copies of each lead filtered, want [1 1]", got)
	}
	if lead1[10] == 0 {
		t.Error("FillTwoLeads gives no second lead")
	}
}

// DropSecondLead leaves a record of two leads with its first, as it was,
// and lets the second go (the garbage collector takes it); a source of it
// then refuses SetHRLeads(2), saying the second lead was let go, offers
// one lead, and plays as before. A record of one lead, and one without an
// ECG, are left as they were: a source of the record of one lead refuses
// SetHRLeads(2) after it as before, saying it has no second lead, not that
// one was let go.
func TestDropSecondLead(t *testing.T) {
	r := rampRecord(t)
	first := slices.Clone(r.Series[ECG].Axes[0])
	played := make([]float64, 64)
	NewSource(0, nil, r).FillECG(played, 0, time.Second/256)
	second := weak.Make(&r.Series[ECG].Axes[1][0])
	r.DropSecondLead()
	runtime.GC()
	if got := r.Series[ECG].Axes; len(got) != 1 || !slices.Equal(got[0], first) {
		t.Errorf("after DropSecondLead: %d leads; want the first alone, as it was", len(got))
	}
	if second.Value() != nil {
		t.Error("the second lead is still held after DropSecondLead")
	}
	src := NewSource(0, nil, r)
	if err := src.SetHRLeads(2); !errors.Is(err, ErrSecondLeadDropped) || !errors.Is(err, ErrHRLeads) {
		t.Errorf("SetHRLeads(2) of a recording whose second lead was dropped: %v; want ErrHRLeads and ErrSecondLeadDropped", err)
	}
	if src.TwoLeads() {
		t.Error("a source offers two leads of a recording whose second was dropped")
	}
	if err := src.SetHRLeads(1); err != nil {
		t.Errorf("SetHRLeads(1) of a recording whose second lead was dropped: %v", err)
	}
	// a recording of two leads whose ECG plays before the one dropped
	if err := NewSource(0, nil, rampRecord(t), r).SetHRLeads(2); err != nil {
		t.Errorf("SetHRLeads(2) of a source playing the ECG of a recording of two leads: %v", err)
	}
	got := make([]float64, 64)
	src.FillECG(got, 0, time.Second/256)
	if !slices.Equal(got, played) {
		t.Error("the ECG plays otherwise after DropSecondLead")
	}
	one, err := WFDB("one", []byte("one 1 360\none.dat 16 100\n"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	axes := one.Series[ECG].Axes
	one.DropSecondLead()
	if len(one.Series[ECG].Axes) != 1 || &one.Series[ECG].Axes[0][0] != &axes[0][0] {
		t.Error("DropSecondLead changed a record of one lead")
	}
	if err := NewSource(0, nil, one).SetHRLeads(2); !errors.Is(err, ErrNoSecondLead) || errors.Is(err, ErrSecondLeadDropped) {
		t.Errorf("SetHRLeads(2) of a record of one lead, after DropSecondLead: %v; want ErrNoSecondLead, as before it", err)
	}
	(&Recording{}).DropSecondLead() // no ECG: nothing to drop, no panic
}

// A second lead let go after SetHRLeads(2) took it, before the source
// plays: the source offers one lead then (TwoLeads), gives the heart rate
// no second (FillTwoLeads), and refuses SetHRLeads(2) from then on.
func TestDropSecondLeadAfterSetHRLeads(t *testing.T) {
	r := rampRecord(t)
	src := NewSource(0, nil, r)
	if err := src.SetHRLeads(2); err != nil {
		t.Fatal(err)
	}
	if !src.TwoLeads() {
		t.Fatal("a source of a recording of two leads does not offer them after SetHRLeads(2)")
	}
	r.DropSecondLead()
	if src.TwoLeads() {
		t.Error("a source offers two leads of a recording whose second was let go after SetHRLeads(2)")
	}
	lead0, lead1 := make([]float64, 8), make([]float64, 8)
	for i := range lead1 {
		lead1[i] = 1
	}
	src.FillTwoLeads(lead0, lead1, 0, time.Second/360)
	if slices.ContainsFunc(lead1, func(v float64) bool { return v != 0 }) {
		t.Errorf("the second lead after it was let go: %v; want 0 throughout", lead1)
	}
	if err := src.SetHRLeads(2); !errors.Is(err, ErrSecondLeadDropped) {
		t.Errorf("SetHRLeads(2) again: %v; want ErrSecondLeadDropped", err)
	}
}

// SetHRLeads takes 1 from any source, and 2 from one whose ECG has two
// leads; it refuses at once, leaving what the source offers as it was,
// any other number, and 2 from a source whose ECG has one lead: a
// recording of one, none with an ECG (the fallback's plays), or one whose
// second lead was let go, each with its own error.
func TestSetHRLeadsRefused(t *testing.T) {
	model := sensor.NewModel(world.New(1, nil, 0), 1)
	imu, err := Parse("imu.csv", []byte("# senseboard recording\n# stream: /Meas/Acc/104\n# rate: 104\nTimestamp,x,y,z\n0,1,2,3\n10,1,2,3\n20,1,2,3\n"))
	if err != nil {
		t.Fatal(err)
	}
	one, err := WFDB("one", []byte("one 1 360\none.dat 16 100\n"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dropped := rampRecord(t)
	dropped.DropSecondLead()
	sources := []struct {
		name string
		src  func() *Source
		two  error // SetHRLeads(2)'s error, besides ErrHRLeads; nil for none
	}{
		{"a recording of two leads", func() *Source { return NewSource(0, model, rampRecord(t)) }, nil},
		{"a recording of two leads before one of one", func() *Source { return NewSource(0, model, rampRecord(t), one) }, nil},
		{"a recording of one lead", func() *Source { return NewSource(0, model, one) }, ErrNoSecondLead},
		{"a recording of one lead before one of two", func() *Source { return NewSource(0, model, one, rampRecord(t)) }, ErrNoSecondLead},
		{"a recording without an ECG", func() *Source { return NewSource(0, model, imu) }, ErrNoSecondLead},
		{"no recording", func() *Source { return NewSource(0, model) }, ErrNoSecondLead},
		{"a recording whose second lead was let go", func() *Source { return NewSource(0, model, dropped) }, ErrSecondLeadDropped},
	}
	for _, tt := range sources {
		for _, before := range []int{1, 2} {
			src := tt.src()
			if before == 2 && tt.two != nil {
				continue // the source cannot offer two to begin with
			}
			if err := src.SetHRLeads(before); err != nil {
				t.Fatalf("%s: SetHRLeads(%d): %v", tt.name, before, err)
			}
			for _, n := range []int{-1, 0, 1, 2, 3} {
				var want error // besides ErrHRLeads
				switch {
				case n == 2:
					want = tt.two
				case n != 1:
					want = ErrHRLeads
				}
				err := src.SetHRLeads(n)
				if want == nil {
					if err != nil {
						t.Errorf("%s: SetHRLeads(%d): %v", tt.name, n, err)
					}
					if src.TwoLeads() != (n == 2) {
						t.Errorf("%s: TwoLeads() = %v after SetHRLeads(%d)", tt.name, src.TwoLeads(), n)
					}
					if err := src.SetHRLeads(before); err != nil {
						t.Fatalf("%s: SetHRLeads(%d) back: %v", tt.name, before, err)
					}
					continue
				}
				if !errors.Is(err, ErrHRLeads) || !errors.Is(err, want) {
					t.Errorf("%s: SetHRLeads(%d): %v; want ErrHRLeads and %v", tt.name, n, err, want)
				}
				if src.TwoLeads() != (before == 2) {
					t.Errorf("%s: TwoLeads() = %v after SetHRLeads(%d) was refused; want %v, as before", tt.name, src.TwoLeads(), n, before == 2)
				}
			}
		}
	}
}

// SetHRLeads may change what a source offers while a heart rate reads it
// (go test -race tells), and what it offers is the last number set, at
// once. That a running heart rate takes it at its next batch,
// TestHeartRateLeadsAtNextBatch (package meas) holds on a virtual clock.
func TestSourceHRLeadsWhilePlaying(t *testing.T) {
	r, err := WFDB("r", []byte("r 2 360\nr.dat 16 100\nr.dat 16 100\n"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := NewSource(0, nil, r)
	done := make(chan int)
	go func() {
		n := 0
		for range 1000 {
			if sensor.SecondLead(src) != nil {
				n++
			}
		}
		done <- n
	}()
	for i := range 1000 {
		if err := src.SetHRLeads(1 + i%2); err != nil {
			t.Fatal(err)
		}
		if two := src.TwoLeads(); two != (i%2 == 1) {
			t.Fatalf("SetHRLeads(%d), then TwoLeads() = %v", 1+i%2, two)
		}
	}
	<-done
	if err := src.SetHRLeads(2); err != nil || !src.TwoLeads() {
		t.Errorf("SetHRLeads(2) = %v, then TwoLeads() = %v; want nil, true", err, src.TwoLeads())
	}
}

// SetHRLeads takes 1 or 2, and refuses other numbers with ErrHRLeads,
// leaving what the source offers as it was.
func TestSourceHRLeads(t *testing.T) {
	hea, dat := "r 2 360\nr.dat 16 100\nr.dat 16 100\n", []byte{1, 0, 2, 0, 3, 0, 4, 0}
	r, err := WFDB("r", []byte(hea), dat, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := NewSource(0, nil, r)
	for _, tt := range []struct {
		n    int
		ok   bool
		want bool // TwoLeads after it
	}{
		{2, true, true},
		{0, false, true},
		{3, false, true},
		{1, true, false},
		{-2, false, false},
		{2, true, true},
	} {
		err := src.SetHRLeads(tt.n)
		if tt.ok != (err == nil) || !tt.ok && !errors.Is(err, ErrHRLeads) {
			t.Errorf("SetHRLeads(%d) = %v; want ok %v, else ErrHRLeads", tt.n, err, tt.ok)
		}
		if got := src.TwoLeads(); got != tt.want {
			t.Errorf("after SetHRLeads(%d), TwoLeads() = %v; want %v", tt.n, got, tt.want)
		}
	}
}

// The Noise Stress Test's record 119e00 (format 16) is MIT-BIH record 119
// (format 212) until the noise starts at 5 minutes: the two readers give the
// same signal there, up to the baseline the headers set apart.
func TestFormat16ReadsTheNoiseStressTest(t *testing.T) {
	clean, err := Load(needData(t, "mitdb/119.hea"))
	if err != nil {
		t.Fatal(err)
	}
	noisy, err := Load(needData(t, "devcorpus/nstdb/119e00.hea"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := clean.Series[ECG].Axes[0], noisy.Series[ECG].Axes[0]
	if len(a) != len(b) || len(noisy.Beats) != 1987 {
		t.Fatalf("119e00: %d samples and %d beats, want %d and 1987", len(b), len(noisy.Beats), len(a))
	}
	const noiseFrom = 300 * 360
	offset := b[0] - a[0]
	for i := range noiseFrom {
		if math.Abs(b[i]-a[i]-offset) > 1e-9 {
			t.Fatalf("sample %d: 119e00 %.3f mV, 119 %.3f mV, want them %.3f mV apart as at the start", i, b[i], a[i], offset)
		}
	}
	differ := 0
	for i := noiseFrom; i < noiseFrom+360; i++ {
		if math.Abs(b[i]-a[i]-offset) > 1e-9 {
			differ++
		}
	}
	if differ < 300 {
		t.Errorf("only %d of the first 360 samples after 5 minutes carry noise", differ)
	}
}

func sine(rate, freq float64, n int) *Recording {
	s := newSeries(ECG)
	for i := range n {
		ts := float64(i) / rate
		s.add(time.Duration(ts*float64(time.Second)), math.Sin(2*math.Pi*freq*ts))
	}
	r := &Recording{Name: "sine"}
	r.Series[ECG] = s
	r.finish()
	return r
}

func TestSourceResamplesAndLoops(t *testing.T) {
	rec := sine(200, 2, 2000) // 10 s of a 2 Hz sine at 200 Hz
	fallback := sensor.NewModel(world.New(1, nil, 0), 1)
	src := NewSource(0, fallback, rec)
	for _, rate := range []float64{512, 125} {
		dt := time.Duration(float64(time.Second) / rate)
		buf := make([]float64, int(rate)*2)
		src.FillECG(buf, time.Second, dt)
		var worst float64
		for i, v := range buf {
			ts := (time.Second + time.Duration(i)*dt).Seconds()
			worst = math.Max(worst, math.Abs(v-math.Sin(2*math.Pi*2*ts)))
		}
		if worst > 0.01 {
			t.Errorf("at %g Hz the resampled sine is off by %.4f", rate, worst)
		}
	}
	a, b := make([]float64, 1), make([]float64, 1)
	src.FillECG(a, 3*time.Second, 0)
	src.FillECG(b, 13*time.Second, 0) // one loop later
	if math.Abs(a[0]-b[0]) > 1e-9 {
		t.Errorf("loop: %v vs %v", a[0], b[0])
	}
	// channels without a recording come from the fallback
	acc := make([]sensor.XYZ, 1)
	src.FillIMU(acc, nil, nil, time.Second, 0, sensor.Ranges{Acc: 8, Gyro: 2000})
	if acc[0].X > -9 {
		t.Errorf("fallback acc %v", acc[0])
	}
	if !src.Has(ECG) || src.Has(Acc) {
		t.Error("Has")
	}
}

// Downsampling removes what the lower rate cannot carry instead of aliasing it.
func TestResamplingDoesNotAlias(t *testing.T) {
	rec := sine(360, 100, 3600) // 100 Hz at 360 Hz
	src := NewSource(0, nil, rec)
	buf := make([]float64, 125)
	src.FillECG(buf, 4*time.Second, time.Second/125)
	var peak float64
	for _, v := range buf {
		peak = math.Max(peak, math.Abs(v))
	}
	if peak > 0.05 {
		t.Errorf("100 Hz read at 125 Hz leaves amplitude %.3f; it should be filtered out", peak)
	}
}

func TestGapsReadAsNoContact(t *testing.T) {
	data := "Timestamp,Sample\n1000.000,100\n1000.005,100\n1000.010,-131072\n1000.015,100\n1000.020,100\n1002.020,100\n1002.025,100\n"
	r, err := Parse("gaps.csv", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	src := NewSource(0, nil, r)
	if !src.Contact(2*time.Millisecond) || src.Contact(10*time.Millisecond) || src.Contact(time.Second) || !src.Contact(2022*time.Millisecond) {
		t.Error("contact does not follow the missing samples and the gap")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a.csv", []byte("Timestamp_ms,Value\n1,0.1\n6,0.2\n"))
	f.Add("b.csv", []byte("# stream: /Meas/Gyro/52\nTimestamp,x,y,z\n0,1,2,3\n19.2,1,2,3\n"))
	f.Add("c.csv", []byte("LoopingTimeStamp:100\nTimestamp,/Meas/Magn/x,/Meas/Magn/y,/Meas/Magn/z\n0,1,1,1\n10,2,2,2\n"))
	f.Add("d.jsonl", []byte(`{"t":0,"uri":"/Meas/ECG/128","content":{"Timestamp":0,"Samples":[1,2,3]}}`))
	f.Add("e.json", []byte(`{"Meas":{"IMU9":[{"Timestamp":0,"ArrayAcc":[{"x":1,"y":1,"z":1}]},{"Timestamp":10,"ArrayAcc":[{"x":1,"y":1,"z":1}]}]}}`))
	f.Add("f.csv", []byte("x\nTimestamp,Sample\n1.0,5\n1.005,-131072\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		r, err := Parse(name, data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if r.Length <= 0 {
			t.Fatalf("recording of length %v", r.Length)
		}
		src := NewSource(0, sensor.NewModel(world.New(1, nil, 0), 1), r)
		buf := make([]float64, 8)
		src.FillECG(buf, 0, time.Millisecond)
		xyz := make([]sensor.XYZ, 8)
		src.FillIMU(xyz, xyz, xyz, 0, time.Millisecond, sensor.Ranges{Acc: 2, Gyro: 245})
		src.Temperature(time.Second)
	})
}

func FuzzWFDB(f *testing.F) {
	f.Add([]byte("100s 2 360 4\n100s.dat 212 200 11 1024 995 -1514 0 MLII\n100s.dat 212 200 11 1024 1011 30 0 V5\n"), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, []byte{0x01, 0x04, 0x00, 0x00})
	f.Add([]byte("119e00 2 360 3\n119e00.dat 16 200(1024) 11 0 -199 32370 0 MLII\n119e00.dat 16 200(1024) 11 0 -94 -187 0 V1\n"), []byte{0x39, 0xFF, 0xA2, 0xFF, 0x39, 0xFF, 0xA2, 0xFF, 0x00, 0x80, 0x01, 0x00}, []byte{0x01, 0x04, 0x00, 0x00})
	f.Add([]byte("r 2 360 3\nr.dat 16:3+2 200\nr.dat 16:1+2 200\n"), []byte{9, 9, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}, []byte{0x01, 0x04, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, hea, dat, atr []byte) {
		r, err := WFDB("fuzz", hea, dat, atr)
		if err != nil {
			return
		}
		if r.Series[ECG] == nil || r.Length <= 0 {
			t.Fatal("recording without ECG")
		}
	})
}

// A record wfdb.Write writes loads as a recording: its samples in mV, the
// missing one missing, and its beats at their times.
func TestLoadWrittenWFDB(t *testing.T) {
	dir := t.TempDir()
	rec := &wfdb.Record{Name: "sb_1", Rate: 360, Samples: make([]float64, 3601)}
	for i := range rec.Samples {
		rec.Samples[i] = 1.5 * math.Sin(float64(i)/20)
	}
	rec.Samples[7] = math.NaN()
	for k := range 10 {
		rec.Annotations = append(rec.Annotations, wfdb.Annotation{Sample: int64(k * 360), Code: wfdb.CodeNormal})
	}
	if err := wfdb.Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	r, err := Load(filepath.Join(dir, "sb_1.hea"))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Series[ECG]
	if s == nil || s.Rate != 360 || s.Len() != len(rec.Samples) {
		t.Fatalf("read back %+v", s)
	}
	for i, v := range s.Axes[0] {
		if want := rec.Samples[i]; i == 7 && !math.IsNaN(v) || i != 7 && math.Abs(v-want) > 0.5/200+1e-12 {
			t.Fatalf("sample %d: %g, want %g", i, v, want)
		}
	}
	if len(r.Beats) != 10 || r.Beats[3] != 3*time.Second {
		t.Errorf("beats %v", r.Beats)
	}
}

// Load builds a record, whichever of its files (or its path without an
// extension) it is given, as WFDB builds it from the files' contents.
func TestLoadWFDBAnyFile(t *testing.T) {
	dir := t.TempDir()
	hea := []byte("r 2 360\nr.dat 16 100\nr.dat 16 100\n")
	dat := []byte{1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}
	atr := []byte{0x01, 0x04, 0x01, 0x04, 0x00, 0x00}
	for name, data := range map[string][]byte{"r.hea": hea, "r.dat": dat, "r.atr": atr} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := WFDB("r.hea", hea, dat, atr)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"r.hea", "r.dat", "r.atr", "r"} {
		r, err := Load(filepath.Join(dir, path))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got := r.Series[ECG]
		if r.Name != want.Name || r.Length != want.Length || !slices.Equal(r.Beats, want.Beats) ||
			!slices.Equal(got.T, want.Series[ECG].T) || fmt.Sprint(got.Axes) != fmt.Sprint(want.Series[ECG].Axes) {
			t.Errorf("%s: Load gives %+v, WFDB %+v", path, r, want)
		}
	}
}

// Load reads a WFDB header only as the record its file's name gives: one
// whose record line names another record is refused, naming both and the
// file once, whether given as the .hea, the .dat or the record's path.
// WFDB (from contents, not files) takes the header's name as it is.
func TestLoadWFDBRecordName(t *testing.T) {
	dat := []byte{1, 0, 2, 0, 3, 0, 4, 0}
	for _, tt := range []struct {
		record, file string // the header's record name, and its file's
		load         string // the path given Load, in the file's directory
		names        string // what the error names; "" for none
	}{
		{"r", "r", "r.hea", ""},
		{"r", "r", "r", ""},
		{"s", "r", "r.hea", "the header in r.hea is of record s, not r"},
		{"s", "r", "r.dat", "the header in r.hea is of record s, not r"},
		{"r", "r_1", "r_1", "the header in r_1.hea is of record r, not r_1"},
	} {
		dir := t.TempDir()
		hea := fmt.Sprintf("%s 1 360\n%s.dat 16 100\n", tt.record, tt.file)
		for name, b := range map[string][]byte{tt.file + ".hea": []byte(hea), tt.file + ".dat": dat} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Load(filepath.Join(dir, tt.load))
		if tt.names == "" {
			if err != nil {
				t.Errorf("record %s in %s.hea: %v", tt.record, tt.file, err)
			}
		} else if !errors.Is(err, wfdb.ErrRecordName) || !strings.Contains(err.Error(), tt.names) || strings.Count(err.Error(), tt.file+".hea") != 1 {
			t.Errorf("record %s in %s.hea, loading %s: %v; want ErrRecordName naming %s, the file once", tt.record, tt.file, tt.load, err, tt.names)
		}
		if _, err := WFDB(tt.file+".hea", []byte(hea), dat, nil); err != nil {
			t.Errorf("WFDB of record %s as %s.hea: %v", tt.record, tt.file, err)
		}
	}
}

// A record whose .dat has the length its header gives but a sample
// changed is refused, naming the record, the signal whose samples do not
// sum to its header's checksum and that sum; its other signal, untouched,
// loads alone.
func TestLoadWFDBCorrupt(t *testing.T) {
	src := needData(t, "mitdb/100s.hea")
	for _, tt := range []struct {
		name    string
		at      int  // the byte changed
		xor     byte // how
		corrupt int  // the signal it belongs to (format 212: frame 0's first sample in bytes 0 and 1, the second in 1 and 2)
		names   string
	}{
		{"signal 0's first sample one unit down", 0, 0x01, 0, "record 100s, signal 0: the samples of 100s.dat sum to 21536 in 16 bits, and the header's checksum is 21537"},
		{"signal 0's first sample's high bits", 1, 0x04, 0, "record 100s, signal 0: the samples of 100s.dat sum to"},
		{"signal 1's first sample's high bits", 1, 0x40, 1, "record 100s, signal 1: the samples of 100s.dat sum to"},
		{"signal 1's last sample", 21600*3 - 1, 0x80, 1, "record 100s, signal 1: the samples of 100s.dat sum to"},
	} {
		dir := t.TempDir()
		for _, ext := range []string{".hea", ".dat", ".atr"} {
			b, err := os.ReadFile(strings.TrimSuffix(src, ".hea") + ext)
			if err != nil {
				t.Fatal(err)
			}
			if ext == ".dat" {
				if len(b) != 21600*3 {
					t.Fatalf("100s.dat of %d bytes, want %d", len(b), 21600*3)
				}
				b[tt.at] ^= tt.xor
			}
			if err := os.WriteFile(filepath.Join(dir, "100s"+ext), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		hea := filepath.Join(dir, "100s.hea")
		if _, err := Load(hea); !errors.Is(err, wfdb.ErrChecksum) || !strings.Contains(err.Error(), tt.names) {
			t.Errorf("%s: %v; want ErrChecksum naming %s", tt.name, err, tt.names)
		}
		if _, err := loadLead(hea, 1-tt.corrupt); err != nil {
			t.Errorf("%s: the other signal: %v", tt.name, err)
		}
		if _, err := loadLead(hea, tt.corrupt); !errors.Is(err, wfdb.ErrChecksum) {
			t.Errorf("%s: the signal alone: %v; want ErrChecksum", tt.name, err)
		}
	}
}

// Load refuses a record whose .dat is shorter than its header says, as a
// file cut short, and a multi-segment record, naming the file and what
// was wrong, rather than playing less than the record or misreading its
// segment lines as signals.
func TestLoadWFDBRefused(t *testing.T) {
	dir := t.TempDir()
	rec := &wfdb.Record{Name: "cut", Rate: 360, Samples: make([]float64, 3600)}
	if err := wfdb.Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	dat := filepath.Join(dir, "cut.dat")
	b, err := os.ReadFile(dat)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dat, b[:len(b)-30], 0o644); err != nil { // 20 samples of format 212 lost
		t.Fatal(err)
	}
	_, err = Load(filepath.Join(dir, "cut.hea"))
	if want := "cut.hea: record cut, signal 0: the header gives 3600 samples and cut.dat holds 3580"; !errors.Is(err, wfdb.ErrShortData) || !strings.Contains(err.Error(), want) {
		t.Errorf("a .dat cut short: %v, want ErrShortData saying %q", err, want)
	}
	multi := filepath.Join(dir, "m.hea")
	if err := os.WriteFile(multi, []byte("m/2 2 360 650000\r\nm_1 325000\r\nm_2 325000\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(multi)
	if want := `m.hea: header line 1: record "m/2"`; !errors.Is(err, wfdb.ErrMultiSegment) || !strings.Contains(err.Error(), want) {
		t.Errorf("a multi-segment record: %v, want ErrMultiSegment saying %q", err, want)
	}
}
