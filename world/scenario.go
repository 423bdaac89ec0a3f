package world

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"senseboard/fault"
	"senseboard/internal/yamlnode"
)

// Activity is what the wearer does.
type Activity uint8

// The activities.
const (
	Rest Activity = iota
	Walk
	Run
)

var activityNames = [...]string{"rest", "walk", "run"}

func (a Activity) String() string {
	if int(a) < len(activityNames) {
		return activityNames[a]
	}
	return fmt.Sprintf("Activity(%d)", uint8(a))
}

// ParseActivity parses rest, walk or run.
func ParseActivity(s string) (Activity, error) {
	for i, n := range activityNames {
		if strings.EqualFold(s, n) {
			return Activity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown activity %q; allowed: rest, walk, run", s)
}

// Posture is how the wearer holds the device.
type Posture uint8

// The postures. Upright postures wear the device on the chest, facing forward.
const (
	Standing   Posture = iota // torso upright
	Sitting                   // torso reclined 20 degrees
	LyingBack                 // supine: the device faces up
	LyingFront                // prone: the device faces down
	Table                     // off the body, flat on a table, face up
)

var postureNames = [...]string{"standing", "sitting", "lying-back", "lying-front", "table"}

func (p Posture) String() string {
	if int(p) < len(postureNames) {
		return postureNames[p]
	}
	return fmt.Sprintf("Posture(%d)", uint8(p))
}

// ParsePosture parses a posture name.
func ParsePosture(s string) (Posture, error) {
	for i, n := range postureNames {
		if strings.EqualFold(s, n) {
			return Posture(i), nil
		}
	}
	return 0, fmt.Errorf("unknown posture %q; allowed: %s", s, strings.Join(postureNames[:], ", "))
}

// EventKind is the kind of a momentary event.
type EventKind uint8

// The event kinds.
const (
	Tap         EventKind = iota + 1 // a knock on the device
	DoubleTap                        // two knocks 250 ms apart
	FreeFall                         // the device falls for Duration, then hits the ground
	Gear                             // electrodes connect (On) or disconnect
	SetPosture                       // the wearer changes posture
	Battery                          // the battery is found at Value (0..1), as after a charge
	SetActivity                      // the wearer switches activity now (runtime injection)
	Shake                            // the device is shaken for Duration
	ContactLoss                      // the electrodes lose contact for Duration, then touch again
)

var eventNames = map[EventKind]string{Tap: "tap", DoubleTap: "doubleTap", FreeFall: "freeFall", Gear: "gear",
	SetPosture: "posture", Battery: "battery", SetActivity: "activity", Shake: "shake", ContactLoss: "contactLoss"}

func (k EventKind) String() string {
	if n, ok := eventNames[k]; ok {
		return n
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is something that happens at a moment.
type Event struct {
	At        time.Duration
	Kind      EventKind
	Duration  time.Duration // FreeFall, Shake, ContactLoss
	On        bool          // Gear
	Posture   Posture       // SetPosture
	Value     float64       // Battery level 0..1
	Activity  Activity      // SetActivity
	HeartRate float64       // SetActivity: target at rest, bpm (0: unchanged)
}

// Segment is a stretch of one activity.
type Segment struct {
	Activity  Activity
	Duration  time.Duration
	HeartRate float64 // resting heart rate during the segment, bpm; 0 keeps the previous
	Cadence   float64 // steps per minute while walking or running; 0 is the activity's default
}

// Scenario is a timeline for the wearer.
type Scenario struct {
	Name     string
	Seed     *uint64
	Start    Start
	Segments []Segment
	Events   []Event // sorted by At
	Loop     bool    // repeat the segments (and events) forever
	Heart    Heart   // ectopic beats and rhythm episodes; zero for a healthy rhythm
	ECGNoise ECGNoise
	// ClockDrift sets the device oscillator's rate error, ppm; nil leaves
	// the device's own seeded drift, 0 makes the oscillator perfect.
	ClockDrift *float64
	// Faults are the device's field faults on the scenario's timeline
	// (package fault, docs/faults.md); none by default.
	Faults fault.Plan
}

// ECGNoise is noise added to the ECG as in the MIT-BIH Noise Stress Test:
// each kind at a signal-to-noise ratio in dB, nil for none. The signal power
// is the NST's: the square of the QRS peak-to-peak amplitude over 8; the
// noise power is the noise's mean square.
type ECGNoise struct {
	BaselineWander  *float64 // slow drift below 1 Hz, as from breathing and electrode impedance
	Muscle          *float64 // broadband muscle (EMG) noise
	ElectrodeMotion *float64 // electrode motion artefact: sudden QRS-like deflections, 30 to 150 ms wide
}

// Start is the wearer's state when the scenario begins.
type Start struct {
	HeartRate float64 // resting heart rate, bpm
	Posture   Posture
	Gear      bool    // electrodes connected
	Battery   float64 // 0..1
	Ambient   float64 // ambient temperature, kelvin
}

// Length returns the duration of the segments.
func (s *Scenario) Length() time.Duration {
	var d time.Duration
	for _, seg := range s.Segments {
		d += seg.Duration
	}
	return d
}

// DefaultScenario is what a device does without a scenario: the wearer
// stands at rest with the gear on, at 62 bpm.
func DefaultScenario() *Scenario {
	return &Scenario{
		Name:  "default",
		Start: Start{HeartRate: 62, Posture: Standing, Gear: true, Battery: 0.95, Ambient: 295.15},
	}
}

// The scenario file format, YAML (JSON is YAML too):
//
//	name: morning walk
//	seed: 7                 # optional; the device's --seed wins when given
//	start:                  # optional; these are the defaults
//	  heartRate: 62
//	  posture: standing     # standing, sitting, lying-back, lying-front, table
//	  gear: on
//	  battery: 95%
//	  ambient: 22C
//	segments:               # activities one after another; the last one lasts
//	  - rest: 60s
//	    heartRate: 62
//	  - walk: 5m
//	    cadence: 110        # steps per minute
//	  - run: 2m
//	heart:                  # optional; a healthy sinus rhythm by default
//	  pvc: 2                # premature ventricular beats per minute, 0..30
//	  pac: 1                # premature atrial beats per minute, 0..30
//	  episodes:             # other rhythms, in order, not overlapping
//	    - at: 2m
//	      afib: 90s         # or bradycardia, tachycardia
//	      heartRate: 110    # optional: 110 (afib), 40, 160 by default
//	clockDrift: off         # optional: the oscillator's error in ppm; seeded by default
//	ecgNoise:               # optional: added noise, SNR in dB (NST convention)
//	  baselineWander: 12
//	  muscle: 6
//	  electrodeMotion: 0
//	events:
//	  - at: 6m10s
//	    doubleTap: {}
//	  - at: 7m
//	    freeFall: 400ms
//	  - at: 8m
//	    gear: off
//	loop: false
type scenarioFile struct {
	Name     string         `yaml:"name"`
	Seed     *uint64        `yaml:"seed"`
	Start    *startFile     `yaml:"start"`
	Segments []yaml.Node    `yaml:"segments"`
	Events   []yaml.Node    `yaml:"events"`
	Loop     bool           `yaml:"loop"`
	Heart    yaml.Node      `yaml:"heart"`
	ECGNoise yaml.Node      `yaml:"ecgNoise"`
	Clock    yaml.Node      `yaml:"clockDrift"`
	Faults   yaml.Node      `yaml:"faults"`
	Extra    map[string]any `yaml:",inline"`
}

type startFile struct {
	HeartRate *float64       `yaml:"heartRate"`
	Posture   *string        `yaml:"posture"`
	Gear      *string        `yaml:"gear"`
	Battery   *string        `yaml:"battery"`
	Ambient   *string        `yaml:"ambient"`
	Extra     map[string]any `yaml:",inline"`
}

// LoadScenario reads a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s, err := ParseScenario(data)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return s, nil
}

// MaxScenarioLength bounds a scenario's segments and events.
const MaxScenarioLength = 365 * 24 * time.Hour

// ParseScenario reads a scenario in the documented format.
func ParseScenario(data []byte) (*Scenario, error) {
	var f scenarioFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	} else if err == nil {
		var more yaml.Node
		if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
			return nil, errors.New("more than one YAML document; a scenario is one")
		}
	}
	if len(f.Extra) > 0 {
		return nil, fmt.Errorf("unknown setting %s; allowed: name, seed, start, segments, events, heart, ecgNoise, clockDrift, faults, loop", sortedKeys(f.Extra))
	}
	if f.Start != nil && len(f.Start.Extra) > 0 {
		return nil, fmt.Errorf("unknown setting start.%s; allowed in start: heartRate, posture, gear, battery, ambient", sortedKeys(f.Start.Extra))
	}
	s := DefaultScenario()
	s.Name, s.Seed, s.Loop = f.Name, f.Seed, f.Loop
	if st := f.Start; st != nil {
		if st.HeartRate != nil {
			if err := checkHR(*st.HeartRate); err != nil {
				return nil, fmt.Errorf("start.heartRate: %w", err)
			}
			s.Start.HeartRate = *st.HeartRate
		}
		if st.Posture != nil {
			p, err := ParsePosture(*st.Posture)
			if err != nil {
				return nil, fmt.Errorf("start.posture: %w", err)
			}
			s.Start.Posture = p
		}
		if st.Gear != nil {
			on, err := parseOnOff(*st.Gear)
			if err != nil {
				return nil, fmt.Errorf("start.gear: %w", err)
			}
			s.Start.Gear = on
		}
		if st.Battery != nil {
			v, err := parseLevel(*st.Battery)
			if err != nil {
				return nil, fmt.Errorf("start.battery: %w", err)
			}
			s.Start.Battery = v
		}
		if st.Ambient != nil {
			v, err := parseTemperature(*st.Ambient)
			if err != nil {
				return nil, fmt.Errorf("start.ambient: %w", err)
			}
			s.Start.Ambient = v
		}
	}
	var total time.Duration
	for i, n := range f.Segments {
		seg, err := parseSegment(&n)
		if err != nil {
			return nil, fmt.Errorf("segments[%d] (line %d): %w", i, n.Line, err)
		}
		if seg.Duration > MaxScenarioLength-total {
			return nil, fmt.Errorf("segments[%d] (line %d): the segments last more than %v, the most a scenario may last", i, n.Line, MaxScenarioLength)
		}
		total += seg.Duration
		s.Segments = append(s.Segments, seg)
	}
	for i, n := range f.Events {
		e, err := parseEvent(&n)
		if err != nil {
			return nil, fmt.Errorf("events[%d] (line %d): %w", i, n.Line, err)
		}
		s.Events = append(s.Events, e)
	}
	if f.Heart.Kind != 0 {
		h, err := parseHeart(&f.Heart)
		if err != nil {
			return nil, fmt.Errorf("heart (line %d): %w", f.Heart.Line, err)
		}
		s.Heart = h
	}
	if f.Clock.Kind != 0 {
		v, err := parseDrift(f.Clock.Value)
		if err != nil || f.Clock.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("clockDrift (line %d): %q: off, or the oscillator's error in ppm, -100..100", f.Clock.Line, f.Clock.Value)
		}
		s.ClockDrift = &v
	}
	if f.ECGNoise.Kind != 0 {
		n, err := parseECGNoise(&f.ECGNoise)
		if err != nil {
			return nil, fmt.Errorf("ecgNoise (line %d): %w", f.ECGNoise.Line, err)
		}
		s.ECGNoise = n
	}
	if f.Faults.Kind != 0 {
		p, err := fault.ParsePlanNode(&f.Faults)
		if err != nil {
			return nil, err
		}
		s.Faults = p
	}
	if s.Loop && total == 0 {
		return nil, errors.New("loop needs segments")
	}
	sort.SliceStable(s.Events, func(i, j int) bool { return s.Events[i].At < s.Events[j].At })
	return s, nil
}

// sortedKeys lists a mapping's keys for a message.
func sortedKeys(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func mapping(n *yaml.Node) (map[string]*yaml.Node, []string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, nil, errors.New("want a mapping")
	}
	m := map[string]*yaml.Node{}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if _, dup := m[k]; dup {
			return nil, nil, fmt.Errorf("%s given twice", k)
		}
		m[k] = n.Content[i+1]
		keys = append(keys, k)
	}
	return m, keys, nil
}

func parseSegment(n *yaml.Node) (Segment, error) {
	m, keys, err := mapping(n)
	if err != nil {
		return Segment{}, err
	}
	var seg Segment
	found := false
	for _, k := range keys {
		v := m[k]
		switch k {
		case "rest", "walk", "run":
			if found {
				return seg, errors.New("a segment names one activity")
			}
			found = true
			seg.Activity, _ = ParseActivity(k)
			if seg.Duration, err = parseDuration(v.Value); err != nil {
				return seg, fmt.Errorf("%s: %w", k, err)
			}
			if seg.Duration <= 0 {
				return seg, fmt.Errorf("%s: the duration must be positive", k)
			}
		case "heartRate":
			if seg.HeartRate, err = strconv.ParseFloat(v.Value, 64); err != nil {
				return seg, fmt.Errorf("heartRate %q is not a number", v.Value)
			}
			if err := checkHR(seg.HeartRate); err != nil {
				return seg, fmt.Errorf("heartRate: %w", err)
			}
		case "cadence":
			if seg.Cadence, err = strconv.ParseFloat(v.Value, 64); err != nil || !(seg.Cadence >= 20 && seg.Cadence <= 240) {
				return seg, fmt.Errorf("cadence %q: steps per minute, 20..240", v.Value)
			}
		default:
			return seg, fmt.Errorf("unknown key %s; a segment has rest, walk or run with a duration, and optionally heartRate and cadence", k)
		}
	}
	if !found {
		return seg, errors.New("a segment names an activity: rest, walk or run, with a duration")
	}
	return seg, nil
}

// parseDrift reads off (0) or a rate error in ppm (12 or 12ppm).
func parseDrift(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "false" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "ppm"), 64)
	if err != nil || !(v >= -100 && v <= 100) {
		return 0, errors.New("out of range")
	}
	return v, nil
}

func parseECGNoise(n *yaml.Node) (ECGNoise, error) {
	var out ECGNoise
	m, keys, err := mapping(n)
	if err != nil {
		return out, err
	}
	for _, k := range keys {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(m[k].Value), "dB"), 64)
		if err != nil || v < -12 || v > 60 {
			return out, fmt.Errorf("%s %q: a signal-to-noise ratio in dB, -12..60", k, m[k].Value)
		}
		switch k {
		case "baselineWander":
			out.BaselineWander = &v
		case "muscle":
			out.Muscle = &v
		case "electrodeMotion":
			out.ElectrodeMotion = &v
		default:
			return out, fmt.Errorf("unknown noise %s; allowed: baselineWander, muscle, electrodeMotion", k)
		}
	}
	return out, nil
}

func checkHR(hr float64) error {
	if !(hr >= 30 && hr <= 220) { // NaN too
		return fmt.Errorf("%v bpm: 30..220", hr)
	}
	return nil
}

// eventKinds lists the event keys, for messages.
const eventKinds = "tap, doubleTap, freeFall, shake, contactLoss, gear, posture, battery"

// errUnknownEvent is what eventKind returns for a key that names no event.
var errUnknownEvent = errors.New("unknown event")

func parseEvent(n *yaml.Node) (Event, error) {
	m, keys, err := mapping(n)
	if err != nil {
		return Event{}, err
	}
	var e Event
	at, ok := m["at"]
	if !ok {
		return e, errors.New("an event has at: the time since the scenario started, for example 6m10s")
	}
	if e.At, err = parseDuration(yamlnode.Scalar(at)); err != nil || e.At < 0 {
		return e, fmt.Errorf("at %q: a duration such as 6m10s", at.Value)
	}
	kinds := 0
	for _, k := range keys {
		if k == "at" {
			continue
		}
		kinds++
		if err := eventKind(&e, k, m[k]); errors.Is(err, errUnknownEvent) {
			return e, fmt.Errorf("unknown event %s; allowed: %s", k, eventKinds)
		} else if err != nil {
			return e, err
		}
	}
	if kinds != 1 {
		return e, errors.New("an event has at and exactly one of " + eventKinds)
	}
	return e, nil
}

// eventKind sets e to the event that key k with value v names.
func eventKind(e *Event, k string, v *yaml.Node) error {
	var err error
	switch k {
	case "tap", "doubleTap":
		e.Kind = Tap
		if k == "doubleTap" {
			e.Kind = DoubleTap
		}
		if !isTrue(v) {
			return fmt.Errorf("%s: %s; give %s: true (or {}) for the event, or leave it out", k, yamlnode.Describe(v), k)
		}
	case "freeFall":
		e.Kind = FreeFall
		e.Duration = 400 * time.Millisecond
		if !isTrue(v) {
			if e.Duration, err = parseDuration(yamlnode.Scalar(v)); err != nil || e.Duration < 50*time.Millisecond || e.Duration > 3*time.Second {
				return fmt.Errorf("freeFall %s: a duration from 50ms to 3s, or true (or {}) for 400ms", yamlnode.Describe(v))
			}
		}
	case "shake":
		e.Kind = Shake
		e.Duration = time.Second
		if !isTrue(v) {
			if e.Duration, err = parseDuration(yamlnode.Scalar(v)); err != nil || e.Duration <= 0 || e.Duration > time.Minute {
				return fmt.Errorf("shake %s: a duration up to 1m, or true (or {}) for 1s", yamlnode.Describe(v))
			}
		}
	case "contactLoss":
		e.Kind = ContactLoss
		e.Duration = 2 * time.Second
		if !isTrue(v) {
			if e.Duration, err = parseDuration(yamlnode.Scalar(v)); err != nil || e.Duration <= 0 || e.Duration > time.Hour {
				return fmt.Errorf("contactLoss %s: a duration up to 1h, or true (or {}) for 2s", yamlnode.Describe(v))
			}
		}
	case "gear":
		e.Kind = Gear
		if e.On, err = parseOnOff(yamlnode.Scalar(v)); err != nil {
			return fmt.Errorf("gear: %w", err)
		}
	case "posture":
		e.Kind = SetPosture
		if e.Posture, err = ParsePosture(yamlnode.Scalar(v)); err != nil {
			return err
		}
	case "battery":
		e.Kind = Battery
		if e.Value, err = parseLevel(yamlnode.Scalar(v)); err != nil {
			return fmt.Errorf("battery: %w", err)
		}
	default:
		return errUnknownEvent
	}
	return nil
}

// isTrue reports whether v is true or an empty mapping, the values that
// say "this event" without settings.
func isTrue(v *yaml.Node) bool {
	switch v.Kind {
	case yaml.MappingNode:
		return len(v.Content) == 0
	case yaml.ScalarNode:
		return v.Tag == "!!bool" && v.Value == "true"
	}
	return false
}

// ParseInjection reads an event to inject at run time: a YAML or JSON
// mapping with one event as in a scenario's events, without at (the event
// happens now), such as {"doubleTap": true}, {"gear": "off"} or
// {"freeFall": "400ms"}; or an activity switch, {"activity": "run",
// "heartRate": 70}, where heartRate is optional.
func ParseInjection(data []byte) (Event, error) {
	n, err := yamlnode.One(data, `a mapping`)
	if err != nil {
		return Event{}, fmt.Errorf("event: %w", err)
	}
	m, keys, err := mapping(n)
	if err != nil {
		return Event{}, fmt.Errorf("event: %w", err)
	}
	if _, ok := m["at"]; ok {
		return Event{}, errors.New("event: an injected event happens now; leave out at")
	}
	if a, ok := m["activity"]; ok {
		e := Event{Kind: SetActivity}
		if e.Activity, err = ParseActivity(yamlnode.Scalar(a)); err != nil {
			return e, err
		}
		for _, k := range keys {
			switch k {
			case "activity":
			case "heartRate":
				if e.HeartRate, err = strconv.ParseFloat(yamlnode.Scalar(m[k]), 64); err != nil {
					return e, fmt.Errorf("heartRate %s: a number of beats per minute", yamlnode.Describe(m[k]))
				}
				if err := checkHR(e.HeartRate); err != nil {
					return e, fmt.Errorf("heartRate: %w", err)
				}
			default:
				return e, fmt.Errorf("unknown setting %s of an activity switch; allowed: activity, heartRate", k)
			}
		}
		return e, nil
	}
	if len(keys) != 1 {
		return Event{}, errors.New("event: give exactly one of activity, " + eventKinds)
	}
	var e Event
	if err := eventKind(&e, keys[0], m[keys[0]]); errors.Is(err, errUnknownEvent) {
		return e, fmt.Errorf("event: unknown event %s; allowed: activity, %s", keys[0], eventKinds)
	} else if err != nil {
		return e, fmt.Errorf("event: %w", err)
	}
	return e, nil
}

func parseOnOff(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "on", "true", "connected":
		return true, nil
	case "off", "false", "disconnected":
		return false, nil
	}
	return false, fmt.Errorf("%q: on or off", s)
}

// parseLevel reads 15% or 0.15.
func parseLevel(s string) (float64, error) {
	p, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(p, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: a level such as 15%% or 0.15", s)
	}
	if pct {
		v /= 100
	}
	if !(v >= 0 && v <= 1) {
		return 0, fmt.Errorf("%q: 0%%..100%%", s)
	}
	return v, nil
}

// parseTemperature reads 22C or 295.15K (or a bare number of kelvin).
func parseTemperature(s string) (float64, error) {
	s = strings.TrimSpace(s)
	var v float64
	var err error
	switch {
	case strings.HasSuffix(s, "C"):
		v, err = strconv.ParseFloat(strings.TrimSuffix(s, "C"), 64)
		v += 273.15
	default:
		v, err = strconv.ParseFloat(strings.TrimSuffix(s, "K"), 64)
	}
	if err != nil || !(v >= 233 && v <= 398) {
		return 0, fmt.Errorf("%q: a temperature such as 22C or 295K, within 233..398 K", s)
	}
	return v, nil
}

// parseDuration reads Go durations (6m10s) and mm:ss (6:10).
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if m, sec, ok := strings.Cut(s, ":"); ok {
		mi, err1 := strconv.Atoi(m)
		se, err2 := strconv.ParseFloat(sec, 64)
		if err1 != nil || err2 != nil || mi < 0 || mi > 1e6 || !(se >= 0 && se < 60) {
			return 0, fmt.Errorf("%q is not mm:ss", s)
		}
		return time.Duration(mi)*time.Minute + time.Duration(se*float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 90s, 5m or 1h30m", s)
	}
	return d, nil
}
