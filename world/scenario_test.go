package world

import (
	"strings"
	"testing"
	"time"
)

func TestParseInjection(t *testing.T) {
	tests := []struct {
		in   string
		want Event
		err  string
	}{
		{in: `{"doubleTap": true}`, want: Event{Kind: DoubleTap}},
		{in: `{"gear": "off"}`, want: Event{Kind: Gear, On: false}},
		{in: `gear: on`, want: Event{Kind: Gear, On: true}},
		{in: `{"freeFall": "300ms"}`, want: Event{Kind: FreeFall, Duration: 300 * time.Millisecond}},
		{in: `{"activity": "run", "heartRate": 70}`, want: Event{Kind: SetActivity, Activity: Run, HeartRate: 70}},
		{in: `{"activity": "walk"}`, want: Event{Kind: SetActivity, Activity: Walk}},
		{in: `{"activity": "fly"}`, err: "fly"},
		{in: `{"activity": "run", "speed": 3}`, err: "unknown setting speed of an activity switch; allowed: activity, heartRate"},
		{in: `{"at": "1s", "tap": true}`, err: "leave out at"},
		{in: `{"jump": true}`, err: "unknown event jump; allowed: activity, tap"},
		{in: `{}`, err: "exactly one of activity, tap"},
		{in: `{"tap": true, "doubleTap": true}`, err: "exactly one of"},
		{in: `[1, 2]`, err: "event:"},
		{in: `{"battery": "150%"}`, err: "battery"},
	}
	for _, tt := range tests {
		got, err := ParseInjection([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseInjection(f *testing.F) {
	for _, s := range []string{`{"doubleTap": true}`, `{"activity": "run", "heartRate": 70}`, `gear: off`, `{"freeFall": "2s"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseInjection(data)
		if err == nil && e.Kind == 0 {
			t.Errorf("%q: no error and no event", data)
		}
	})
}
