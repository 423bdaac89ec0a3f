package world

import (
	"fmt"
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
		{in: `{"tap": {}}`, want: Event{Kind: Tap}},
		{in: `{"freeFall": true}`, want: Event{Kind: FreeFall, Duration: 400 * time.Millisecond}},
		{in: `{"shake": {}}`, want: Event{Kind: Shake, Duration: time.Second}},
		// values that were ignored or repaired are refused, saying what was wrong
		{in: `{"tap": false}`, err: `event: tap: "false"; give tap: true (or {}) for the event, or leave it out`},
		{in: `{"doubleTap": false}`, err: `doubleTap: "false"; give doubleTap: true`},
		{in: `{"tap": null}`, err: "tap: no value; give tap: true"},
		{in: `{"tap": "yes"}`, err: `tap: "yes"`},
		{in: `{"tap": 1}`, err: `tap: "1"`},
		{in: `{"tap": {"strength": 3}}`, err: "tap: a mapping"},
		{in: `{"freeFall": {"height": 2}}`, err: "freeFall a mapping: a duration from 50ms to 3s"},
		{in: `{"freeFall": false}`, err: `freeFall "false"`},
		{in: `{"shake": [1, 2]}`, err: "shake a list"},
		{in: `{"gear": ["on"]}`, err: "gear:"},
		{in: `{"activity": "run", "heartRate": "NaN"}`, err: "heartRate: NaN bpm: 30..220"},
		{in: `{"battery": "NaN"}`, err: "0%..100%"},
		{in: "tap: true\n---\ngear: off\n", err: "more than one document"},
		{in: ``, err: "event: empty"},
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

// TestParseScenarioRefusesWhatItWouldIgnore: settings and values that a
// scenario would ignore or repair are errors.
func TestParseScenarioRefusesWhatItWouldIgnore(t *testing.T) {
	tests := []struct{ doc, msg string }{
		{"events:\n  - at: 1m\n    tap: false\n", `events[0] (line 2): tap: "false"; give tap: true (or {})`},
		{"events:\n  - at: 1m\n    doubleTap:\n", "doubleTap: no value"},
		{"events:\n  - at: 1m\n    freeFall: {height: 2}\n", "freeFall a mapping"},
		{"start:\n  heartrate: 70\n", "unknown setting start.heartrate; allowed in start: heartRate"},
		{"start:\n  heartRate: .nan\n", "start.heartRate: NaN bpm"},
		{"start:\n  ambient: NaNC\n", "233..398"},
		{"segments:\n  - walk: 1m\n    cadence: NaN\n", "20..240"},
		{"segments:\n  - walk: 1m\n    heartRate: NaN\n", "30..220"},
		{"segments:\n  - walk: 200000h\n  - walk: 2000000h\n", "last more than"},
		{"segments:\n  - walk: '1:NaN'\n", "not mm:ss"},
		{"name: a\n---\nname: b\n", "more than one YAML document"},
	}
	for _, tt := range tests {
		_, err := ParseScenario([]byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%q: %v, want containing %q", tt.doc, err, tt.msg)
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

func TestParseHeart(t *testing.T) {
	tests := []struct {
		in   string
		want Heart
		err  string
	}{
		{in: "heart:\n  pvc: 2\n  pac: 1/min\n", want: Heart{PVC: 2, PAC: 1}},
		{in: "heart:\n  episodes:\n    - at: 1m\n      afib: 30s\n    - at: 2m\n      bradycardia: 1m\n      heartRate: 35\n",
			want: Heart{Episodes: []Episode{{At: time.Minute, Duration: 30 * time.Second, Rhythm: AtrialFibrillation, HeartRate: defaultAFRate}, {At: 2 * time.Minute, Duration: time.Minute, Rhythm: Bradycardia, HeartRate: 35}}}},
		{in: "heart:\n  pvc: 40\n", err: "pvc \"40\": beats per minute, 0..30"},
		{in: "heart:\n  svt: 1\n", err: "unknown key svt; heart has pvc, pac and episodes"},
		{in: "heart:\n  episodes:\n    - afib: 30s\n", err: "an episode has at"},
		{in: "heart:\n  episodes:\n    - at: 1m\n      afib: 30s\n      tachycardia: 1m\n", err: "exactly one of afib, bradycardia, tachycardia"},
		{in: "heart:\n  episodes:\n    - at: 1m\n      afib: 2m\n    - at: 2m\n      tachycardia: 1m\n", err: "without overlap"},
		{in: "heart:\n  episodes:\n    - at: 1m\n      tachycardia: 1m\n      heartRate: 400\n", err: "30..220"},
		{in: "heart: 3\n", err: "want a mapping"},
	}
	for _, tt := range tests {
		sc, err := ParseScenario([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if fmt.Sprint(sc.Heart) != fmt.Sprint(tt.want) {
			t.Errorf("%q: %+v, want %+v", tt.in, sc.Heart, tt.want)
		}
	}
}
