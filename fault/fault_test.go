package fault_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"senseboard/fault"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // the fault's JSON, with its defaults
	}{
		{`{"fault": "stall"}`, `{"fault":"stall","for":"0s","path":""}`},
		{`{"fault": "stall", "path": "/Meas/ECG", "for": "30s"}`, `{"fault":"stall","for":"30s","path":"/Meas/ECG"}`},
		{`{"fault": "drop"}`, `{"fault":"drop","delay":"1s"}`},
		{`{"fault": "drop", "delay": "0s"}`, `{"fault":"drop","delay":"0s"}`},
		{`{"fault": "stuck", "mode": "refuse", "for": "2s"}`, `{"fault":"stuck","for":"2s","mode":"refuse"}`},
		{`{"fault": "stuck"}`, `{"fault":"stuck","for":"30s","mode":"silent"}`},
		{`{"fault": "busy"}`, `{"fault":"busy","for":"0s"}`},
		{`{"fault": "dfu"}`, `{"fault":"dfu","for":"2m0s","stay":false}`},
		{`{"fault": "dfu", "stay": true}`, `{"fault":"dfu","for":"0s","stay":true}`},
		{`{"fault": "clockreset"}`, `{"fault":"clockreset","for":"0s"}`},
		{`{"fault": "clockreset", "offset": "-800ms"}`, `{"fault":"clockreset","for":"0s","offset":"-800ms"}`},
		{`{"fault": "firsthr"}`, `{"fault":"firsthr","for":"0s","value":160}`},
		{`{"fault": "interference", "share": 0.9, "hideGap": true}`, `{"fault":"interference","for":"10s","share":0.9,"hideGap":true}`},
		{`{"fault": "battery", "rate": 50}`, `{"fault":"battery","for":"0s","rate":50}`},
		{`{"fault": "PhoneOff"}`, `{"fault":"phoneoff","for":"5s"}`},
		{"fault: battery\nrate: 2\n", `{"fault":"battery","for":"0s","rate":2}`},
	} {
		f, err := fault.Parse([]byte(tt.in))
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.in, err)
			continue
		}
		if got := f.String(); got != tt.want {
			t.Errorf("Parse(%s) = %s, want %s", tt.in, got, tt.want)
		}
		again, err := fault.Parse([]byte(f.String()))
		if err != nil || !reflect.DeepEqual(again, f) {
			t.Errorf("Parse(%s) again: %+v, %v; want %+v", f, again, err, f)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // in the message
	}{
		{`{}`, `name the fault with "fault"; allowed: stall, drop, stuck, busy, dfu, clockreset, firsthr, interference, battery, phoneoff`},
		{`{"fault": "meltdown"}`, `unknown fault "meltdown"; allowed: stall, drop`},
		{`{"fault": "drop", "for": "5s"}`, "a drop is momentary"},
		{`{"fault": "busy", "path": "/Meas/ECG"}`, "busy does not take path; it takes for"},
		{`{"fault": "stall", "speed": 3}`, "unknown parameter speed; it takes for, path"},
		{`{"fault": "stall", "for": "5"}`, `for "5": a duration as Go writes them`},
		{`{"fault": "stall", "for": "25h"}`, "for 25h0m0s is outside 0s..24h0m0s, or 0 until it ends otherwise"},
		{`{"fault": "stall", "path": "Meas/ECG"}`, "a stream's path, such as /Meas/ECG"},
		{`{"fault": "stuck", "for": "10ms"}`, "for 10ms is outside 100ms..24h0m0s"},
		{`{"fault": "stuck", "mode": "loud"}`, "silent (it does not advertise) or refuse"},
		{`{"fault": "interference", "share": 1.5}`, "a number above 0 and at most 1"},
		{`{"fault": "interference", "share": 0}`, "leave it out for its default"},
		{`{"fault": "interference", "hideGap": "yes"}`, "hideGap \"yes\": true or false"},
		{`{"fault": "battery", "rate": 5000}`, "percent per minute, 0.01 to 1000"},
		{`{"fault": "firsthr", "value": "high"}`, "value \"high\": a number"},
		{`{"fault": "dfu", "stay": true, "for": "5s"}`, "leave out for"},
		{`{"fault": "drop", "delay": "2m"}`, "delay 2m0s is outside 0..1m"},
		{`{"fault": "clockreset", "offset": "48h"}`, "offset 48h0m0s is outside -24h..24h"},
		{`{"fault": "stall", "fault": "drop"}`, "fault given twice"},
		{`[1, 2]`, "want an object"},
		{``, "empty"},
		{"{\"fault\": \"stall\"}\n---\n{}", "more than one document"},
	} {
		_, err := fault.Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s): %v, want an error with %q", tt.in, err, tt.want)
		}
		if err != nil && !errors.Is(err, fault.ErrInvalid) && !errors.Is(err, fault.ErrUnknown) {
			t.Errorf("Parse(%s): %v is neither ErrInvalid nor ErrUnknown", tt.in, err)
		}
	}
}

func TestMatches(t *testing.T) {
	for _, tt := range []struct {
		stall, path string
		want        bool
	}{
		{"", "/Meas/ECG/125", true},
		{"/Meas/ECG", "/Meas/ECG/125", true},
		{"/meas/ecg", "/Meas/ECG/125/mV", true},
		{"/Meas/ECG", "/Meas/ECGX/125", false},
		{"/Meas/ECG/125", "/Meas/ECG", false},
		{"/Meas/Acc/52", "/Meas/Acc/52", true},
		{"/Meas/Acc", "/Meas/IMU6/52", false},
	} {
		if got := fault.Matches(tt.stall, tt.path); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v", tt.stall, tt.path, got)
		}
	}
}

func TestRecordJSONL(t *testing.T) {
	off := -800 * time.Millisecond
	start := fault.Stamp{MS: 1500, UTC: time.Date(2024, 5, 1, 12, 0, 0, 250e6, time.UTC)}
	end := fault.Stamp{MS: 31500, UTC: start.UTC.Add(30 * time.Second)}
	recs := []fault.Record{
		{ID: 1, Device: "000123", Fault: fault.Fault{Kind: fault.Stall, Path: "/Meas/ECG"}, Start: start, End: &end, Origin: fault.FromAPI, EndedBy: fault.EndedResubscribed},
		{ID: 2, Device: "000123", Fault: fault.Fault{Kind: fault.ClockReset, Offset: &off}, Start: end, Origin: fault.FromScenario},
	}
	var buf bytes.Buffer
	if err := fault.WriteJSONL(&buf, recs); err != nil {
		t.Fatal(err)
	}
	want := `{"id":1,"device":"000123","fault":"stall","for":"0s","path":"/Meas/ECG","start":{"ms":1500,"utc":"2024-05-01T12:00:00.25Z"},"end":{"ms":31500,"utc":"2024-05-01T12:00:30.25Z"},"origin":"api","endedBy":"resubscribed"}` + "\n" +
		`{"id":2,"device":"000123","fault":"clockreset","for":"0s","offset":"-800ms","start":{"ms":31500,"utc":"2024-05-01T12:00:30.25Z"},"end":null,"origin":"scenario","endedBy":""}` + "\n"
	if buf.String() != want {
		t.Errorf("JSON Lines:\n%s\nwant\n%s", buf.String(), want)
	}
	// a fault written again when it ends: the last line of an id wins
	buf.WriteString(`{"id":2,"device":"000123","fault":"clockreset","for":"0s","offset":"-800ms","start":{"ms":31500,"utc":"2024-05-01T12:00:30.25Z"},"end":{"ms":40000,"utc":"2024-05-01T12:00:39Z"},"origin":"scenario","endedBy":"time set"}` + "\n")
	got, err := fault.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Fault.Path != "/Meas/ECG" || got[1].End == nil || got[1].End.MS != 40000 || got[1].EndedBy != fault.EndedTimeSet || *got[1].Fault.Offset != off {
		t.Errorf("read back %+v", got)
	}
	if !got[0].Overlaps(0, 2000) || got[0].Overlaps(32000, 50000) || !got[1].Overlaps(39000, 50000) {
		t.Error("Overlaps")
	}
}

func TestParsePlan(t *testing.T) {
	p, err := fault.ParsePlan([]byte(`
- at: 2m
  fault: stall
  path: /Meas/ECG
  for: 30s
- fault: stall
  path: /Meas/ECG
  perHour: 2
  for: 5s..30s
- at: 10m
  spread: 1m
  fault: drop
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 3 || p[0].At != 2*time.Minute || p[1].PerHour != 2 || p[1].Fault.For != 5*time.Second || p[1].ForMax != 30*time.Second || p[2].Spread != time.Minute {
		t.Fatalf("plan %+v", p)
	}
	for _, bad := range []struct{ in, want string }{
		{`[{fault: stall}]`, "give at (a time since the device started"},
		{`[{fault: stall, at: 1m, perHour: 2}]`, "at and perHour both given"},
		{`[{fault: stall, at: 1m, for: 1s..2s}]`, "a range is for faults that come at random"},
		{`[{fault: stall, perHour: 0}]`, "perHour \"0\": how many times an hour"},
		{`[{fault: stall, perHour: 1, for: 30s..5s}]`, "the shorter first"},
		{`[{fault: stuck, perHour: 1, for: 1s..30h}]`, "outside 100ms..24h0m0s"},
		{`[{fault: stall, perHour: 1, spread: 1m}]`, "spread is for timed faults"},
		{`{fault: stall}`, "unknown key fault"},
		{`{faults: {}}`, "want a list of faults"},
	} {
		_, err := fault.ParsePlan([]byte(bad.in))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParsePlan(%s): %v, want %q", bad.in, err, bad.want)
		}
	}
}

// schedulePlan has two timed entries, one with a spread, and a random one.
const schedulePlan = `
- at: 1m
  fault: busy
- at: 10m
  spread: 5m
  fault: drop
- fault: stall
  path: /Meas/ECG
  perHour: 2
  for: 5s..30s
`

// TestSchedule draws a plan's faults for a device: the same seed gives the
// same faults at the same times, another seed other random ones, and a
// random entry comes about as often as it says.
func TestSchedule(t *testing.T) {
	p, err := fault.ParsePlan([]byte(schedulePlan))
	if err != nil {
		t.Fatal(err)
	}
	draw := func(seed uint64, until time.Duration) []fault.Occurrence {
		var out []fault.Occurrence
		s := p.Schedule(seed)
		for {
			o, ok := s.Next()
			if !ok || o.At > until {
				return out
			}
			out = append(out, o)
		}
	}
	a, b, c := draw(7, 100*time.Hour), draw(7, 100*time.Hour), draw(8, 100*time.Hour)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed drew other faults")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("another seed drew the same faults")
	}
	stalls, busy, drops := 0, 0, 0
	for i, o := range a {
		if i > 0 && o.At < a[i-1].At {
			t.Fatalf("out of order at %d: %v after %v", i, o.At, a[i-1].At)
		}
		switch o.Fault.Kind {
		case fault.Stall:
			stalls++
			if o.Fault.For < 5*time.Second || o.Fault.For > 30*time.Second {
				t.Errorf("a stall of %v, outside 5s..30s", o.Fault.For)
			}
		case fault.Busy:
			busy++
			if o.At != time.Minute {
				t.Errorf("busy at %v", o.At)
			}
		case fault.Drop:
			drops++
			if o.At < 10*time.Minute || o.At >= 15*time.Minute {
				t.Errorf("drop at %v, outside 10m..15m", o.At)
			}
		}
	}
	if stalls < 150 || stalls > 250 { // 200 expected in 100 h; σ ≈ 14
		t.Errorf("%d stalls in 100 h at 2 an hour", stalls)
	}
	if busy != 1 || drops != 1 {
		t.Errorf("%d busy and %d drops, want each timed entry once", busy, drops)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"fault": "stall", "path": "/Meas/ECG", "for": "30s"}`))
	f.Add([]byte(`{"fault": "clockreset", "offset": "-1s"}`))
	f.Add([]byte(`{"fault": "interference", "share": 0.3, "hideGap": true}`))
	f.Add([]byte(`{"fault": "dfu", "stay": true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		flt, err := fault.Parse(data)
		if err != nil {
			return
		}
		again, err := fault.Parse([]byte(flt.String()))
		if err != nil || !reflect.DeepEqual(again, flt) {
			t.Fatalf("%q parsed to %s, which parses to %+v, %v", data, flt, again, err)
		}
	})
}

func FuzzParsePlan(f *testing.F) {
	f.Add([]byte("- at: 2m\n  fault: stall\n- fault: drop\n  perHour: 3\n"))
	f.Add([]byte("faults:\n  - fault: stuck\n    perHour: 1\n    for: 1s..2s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := fault.ParsePlan(data)
		if err != nil {
			return
		}
		s := p.Schedule(1)
		last := time.Duration(-1)
		for range 100 {
			o, ok := s.Next()
			if !ok {
				break
			}
			if o.At < last {
				t.Fatalf("%q: fault at %v after one at %v", data, o.At, last)
			}
			if err := o.Fault.Check(); err != nil {
				t.Fatalf("%q: drew %s: %v", data, o.Fault, err)
			}
			last = o.At
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"id":1,"device":"000123","fault":"stall","for":"0s","path":"","start":{"ms":1,"utc":"2024-05-01T12:00:00Z"},"end":null,"origin":"api","endedBy":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := fault.ParseRecord(data)
		if err != nil {
			return
		}
		again, err := fault.ParseRecord(r.AppendJSON(nil))
		if err != nil || !reflect.DeepEqual(again.AppendJSON(nil), r.AppendJSON(nil)) {
			t.Fatalf("%q read as %s, which reads as %s, %v", data, r.AppendJSON(nil), again.AppendJSON(nil), err)
		}
	})
}
