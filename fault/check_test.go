package fault_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"senseboard/fault"
)

// TestCheckLimits checks each limit of Check on both of its sides: the
// value at the limit is taken, the next one past it is refused.
func TestCheckLimits(t *testing.T) {
	dur := func(d time.Duration) *time.Duration { return &d }
	const ns = time.Nanosecond
	for _, tt := range []struct {
		f  fault.Fault
		ok bool
	}{
		{fault.Fault{Kind: 0}, false},
		{fault.Fault{Kind: fault.PhoneOff}, true},
		{fault.Fault{Kind: fault.PhoneOff + 1}, false},

		{fault.Fault{Kind: fault.Stall, For: 24 * time.Hour}, true},
		{fault.Fault{Kind: fault.Stall, For: 24*time.Hour + ns}, false},
		{fault.Fault{Kind: fault.Stall, For: -ns}, false},
		{fault.Fault{Kind: fault.Stuck, For: 100 * time.Millisecond}, true},
		{fault.Fault{Kind: fault.Stuck, For: 100*time.Millisecond - ns}, false},
		{fault.Fault{Kind: fault.DFU, For: time.Second}, true},
		{fault.Fault{Kind: fault.DFU, For: time.Second - ns}, false},
		{fault.Fault{Kind: fault.PhoneOff, For: time.Hour}, true},
		{fault.Fault{Kind: fault.PhoneOff, For: time.Hour + ns}, false},

		{fault.Fault{Kind: fault.Stall, Path: "/" + strings.Repeat("a", fault.MaxPath-1)}, true},
		{fault.Fault{Kind: fault.Stall, Path: "/" + strings.Repeat("a", fault.MaxPath)}, false},

		{fault.Fault{Kind: fault.Drop, Delay: 0}, true},
		{fault.Fault{Kind: fault.Drop, Delay: -ns}, false},
		{fault.Fault{Kind: fault.Drop, Delay: time.Minute}, true},
		{fault.Fault{Kind: fault.Drop, Delay: time.Minute + ns}, false},

		{fault.Fault{Kind: fault.ClockReset, Offset: dur(-24 * time.Hour)}, true},
		{fault.Fault{Kind: fault.ClockReset, Offset: dur(-24*time.Hour - ns)}, false},
		{fault.Fault{Kind: fault.ClockReset, Offset: dur(24 * time.Hour)}, true},
		{fault.Fault{Kind: fault.ClockReset, Offset: dur(24*time.Hour + ns)}, false},

		{fault.Fault{Kind: fault.Interference, Share: 1}, true},
		{fault.Fault{Kind: fault.Interference, Share: 1.000001}, false},
		{fault.Fault{Kind: fault.Interference, Share: 1e-9}, true},
		{fault.Fault{Kind: fault.Interference, Share: -1e-9}, false},

		{fault.Fault{Kind: fault.Battery, Rate: 0.01}, true},
		{fault.Fault{Kind: fault.Battery, Rate: 0.0099}, false},
		{fault.Fault{Kind: fault.Battery, Rate: 1000}, true},
		{fault.Fault{Kind: fault.Battery, Rate: 1000.001}, false},

		{fault.Fault{Kind: fault.FirstHR, Value: 1}, true},
		{fault.Fault{Kind: fault.FirstHR, Value: 0.999}, false},
		{fault.Fault{Kind: fault.FirstHR, Value: 300}, true},
		{fault.Fault{Kind: fault.FirstHR, Value: 300.001}, false},
	} {
		f := tt.f
		err := f.Check()
		if (err == nil) != tt.ok {
			t.Errorf("Check(%+v) = %v, want ok %v", tt.f, err, tt.ok)
		}
		if err != nil && !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("Check(%+v) = %v, not ErrInvalid", tt.f, err)
		}
	}
}

func TestKindString(t *testing.T) {
	kinds := fault.Kinds()
	if len(kinds) != 10 || kinds[0] != fault.Stall || kinds[9] != fault.PhoneOff {
		t.Errorf("Kinds() = %v, want stall..phoneoff, 10 of them", kinds)
	}
	for _, tt := range []struct {
		k    fault.Kind
		want string
	}{
		{0, "Kind(0)"},
		{fault.Stall, "stall"},
		{fault.PhoneOff, "phoneoff"},
		{fault.PhoneOff + 1, "Kind(11)"},
	} {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(tt.k), got, tt.want)
		}
	}
}

// TestScheduleSeeded pins the first faults seed 7 draws, so that a change
// to how a schedule draws its times and durations shows.
func TestScheduleSeeded(t *testing.T) {
	p, err := fault.ParsePlan([]byte(schedulePlan))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Schedule(7)
	for _, want := range []struct {
		at   time.Duration
		kind fault.Kind
		for_ time.Duration
	}{
		{time.Minute, fault.Busy, 0},
		{191053543433, fault.Stall, 17153 * time.Millisecond},
		{866065433671, fault.Drop, 0},
		{2125034807440, fault.Stall, 14382 * time.Millisecond},
		{2603218605247, fault.Stall, 12139 * time.Millisecond},
	} {
		o, ok := s.Next()
		if !ok || o.At != want.at || o.Fault.Kind != want.kind || o.Fault.For != want.for_ {
			t.Fatalf("Next() = %v %v for %v, %v; want %v %v for %v", o.At, o.Fault.Kind, o.Fault.For, ok, want.at, want.kind, want.for_)
		}
	}
}

// TestParsePlanLimits checks each limit of a plan's entry on both of its
// sides.
func TestParsePlanLimits(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{`[{fault: busy, at: 0s}]`, true},
		{`[{fault: busy, at: -1ns}]`, false},
		{`[{fault: busy, at: 8760h}]`, true},
		{`[{fault: busy, at: 8760h0m0.000000001s}]`, false},
		{`[{fault: busy, at: 1m, spread: 0s}]`, true},
		{`[{fault: busy, at: 1m, spread: -1ns}]`, false},
		{`[{fault: busy, at: 1m, spread: 8760h}]`, true},
		{`[{fault: busy, at: 1m, spread: 8760h0m0.000000001s}]`, false},
		{`[{fault: busy, perHour: 3600}]`, true},
		{`[{fault: busy, perHour: 3600.001}]`, false},
		{`[{fault: busy, perHour: 1e-9}]`, true},
		{`[{fault: busy, perHour: -1e-9}]`, false},
		{`[{fault: busy, perHour: 1, for: 1ns..5s}]`, true},
		{`[{fault: busy, perHour: 1, for: 0s..5s}]`, false},
		{`[{fault: busy, perHour: 1, for: 5s..5s}]`, true},
		{`[{fault: busy, perHour: 1, for: 5s..4.999999999s}]`, false},
	} {
		_, err := fault.ParsePlan([]byte(tt.in))
		if (err == nil) != tt.ok {
			t.Errorf("ParsePlan(%s) = %v, want ok %v", tt.in, err, tt.ok)
		}
		if err != nil && !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParsePlan(%s) = %v, not ErrInvalid", tt.in, err)
		}
	}
}

// TestDescribe checks that every fault is described, that each default a
// description gives is the one Parse fills in, and that a fault with no
// default duration says what 0 means.
func TestDescribe(t *testing.T) {
	ds := fault.Describe()
	if len(ds) != len(fault.Kinds()) {
		t.Fatalf("%d descriptions of %d faults", len(ds), len(fault.Kinds()))
	}
	for _, d := range ds {
		bare, err := fault.Parse([]byte(`{"fault": "` + d.Fault + `"}`))
		if err != nil {
			t.Fatalf("%s: %v", d.Fault, err)
		}
		given := map[string]any{"fault": d.Fault}
		for _, p := range d.Params {
			switch {
			case p.Default == "":
			case p.Name == "share" || p.Name == "rate" || p.Name == "value":
				given[p.Name] = json.Number(p.Default)
			case p.Default == "false":
				given[p.Name] = false
			default:
				given[p.Name] = p.Default
			}
		}
		b, _ := json.Marshal(given)
		full, err := fault.Parse(b)
		if err != nil || !reflect.DeepEqual(full, bare) {
			t.Errorf("%s with its defaults %s: %v, %v; want %v", d.Fault, b, full, err, bare)
		}
	}
	for _, tt := range []struct {
		fault, param, def, help string
	}{
		{"stall", "for", "", "; 0 until it ends otherwise"},
		{"stuck", "for", "30s", "100ms..24h0m0s"},
		{"drop", "delay", "1s", "0 to 1m"},
		{"stuck", "mode", "silent", "refuse"},
		{"interference", "share", "0.5", "above 0"},
		{"interference", "hideGap", "false", "true or false"},
		{"battery", "rate", "1", "0.01 to 1000"},
		{"firsthr", "value", "160", "1 to 300"},
		{"dfu", "stay", "false", "true or false"},
	} {
		var found bool
		for _, d := range ds {
			for _, p := range d.Params {
				if d.Fault == tt.fault && p.Name == tt.param {
					found = true
					if p.Default != tt.def || !strings.Contains(p.Help, tt.help) {
						t.Errorf("%s's %s: default %q, help %q; want %q and %q", tt.fault, tt.param, p.Default, p.Help, tt.def, tt.help)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s's %s is not described", tt.fault, tt.param)
		}
	}
}

// TestOverlaps checks a fault's span at both of its ends: a fault that
// starts at a span's end, or ends at its start, overlaps it.
func TestOverlaps(t *testing.T) {
	end := fault.Stamp{MS: 2000}
	ended := fault.Record{Start: fault.Stamp{MS: 1000}, End: &end}
	active := fault.Record{Start: fault.Stamp{MS: 1000}}
	for _, tt := range []struct {
		r        *fault.Record
		from, to uint32
		want     bool
	}{
		{&ended, 0, 999, false},
		{&ended, 0, 1000, true},
		{&ended, 2000, 3000, true},
		{&ended, 2001, 3000, false},
		{&active, 0, 999, false},
		{&active, 0, 1000, true},
		{&active, 5000, 6000, true},
	} {
		if got := tt.r.Overlaps(tt.from, tt.to); got != tt.want {
			t.Errorf("a fault from %d to %v: Overlaps(%d, %d) = %v, want %v", tt.r.Start.MS, tt.r.End, tt.from, tt.to, got, tt.want)
		}
	}
}

// TestReadJSONLNamesTheLine checks that a line that is no record is named
// by its number, blank lines counted.
func TestReadJSONLNamesTheLine(t *testing.T) {
	var buf bytes.Buffer
	rec := fault.Record{ID: 1, Device: "000123", Fault: fault.Fault{Kind: fault.Busy}, Origin: fault.FromAPI}
	if err := fault.WriteJSONL(&buf, []fault.Record{rec}); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n{\"id\": 2}\n")
	recs, err := fault.ReadJSONL(&buf)
	if err == nil || !strings.HasPrefix(err.Error(), "line 3:") || len(recs) != 1 {
		t.Errorf("ReadJSONL: %d records, %v; want 1 and an error of line 3", len(recs), err)
	}
}
