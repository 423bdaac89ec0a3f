package fault_test

import (
	"errors"
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
