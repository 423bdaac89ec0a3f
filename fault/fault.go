// Package fault is the vocabulary of the device's field faults: their
// names, their parameters with defaults and limits, the checking of a
// fault as a client, a scenario or a plan gives it (with messages that say
// what is allowed), seeded plans of faults over time, and the ground-truth
// record of each fault a device went through.
//
// It knows no device. Each layer carries out the faults that happen there
// (the streams, the radio link, the request pool, the clock, the battery,
// the phone's Bluetooth); package senseboard wires them to a device, and
// docs/faults.md describes what each one does and how it ends.
package fault

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"senseboard/internal/yamlnode"
)

// Kind names a fault.
type Kind uint8

// The faults.
const (
	Stall        Kind = iota + 1 // a stream stops notifying; the link stays up
	Drop                         // the link is lost as at a supervision timeout
	Stuck                        // the link drops and the device stays unreachable
	Busy                         // the request pool is exhausted: 429 to everything
	DFU                          // the device resets into firmware update mode
	ClockReset                   // relative time restarts; UTC is lost or jumps
	FirstHR                      // the first heart rate of each subscription is implausible
	Interference                 // a share of the connection events carry nothing
	Battery                      // the battery drains, then the device turns off
	PhoneOff                     // the phone turns Bluetooth off, then on
)

var kindNames = [...]string{"", "stall", "drop", "stuck", "busy", "dfu", "clockreset", "firsthr", "interference", "battery", "phoneoff"}

// Kinds lists the faults in the order of their documentation.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindNames)-1)
	for k := Stall; int(k) < len(kindNames); k++ {
		out = append(out, k)
	}
	return out
}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Names lists the faults' names, for messages.
func Names() string { return strings.Join(kindNames[1:], ", ") }

// ParseKind reads a fault's name, in any case.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames[1:] {
		if strings.EqualFold(s, n) {
			return Kind(i + 1), nil
		}
	}
	return 0, fmt.Errorf("%w %q; allowed: %s", ErrUnknown, s, Names())
}

// Errors of parsing.
var (
	// ErrUnknown is a name that is no fault.
	ErrUnknown = errors.New("unknown fault")
	// ErrInvalid is a fault whose parameters break their rules.
	ErrInvalid = errors.New("invalid fault")
	// ErrNoFault is an id that names no fault of a device.
	ErrNoFault = errors.New("no such fault")
	// ErrEnded is a fault that ended already.
	ErrEnded = errors.New("the fault ended already")
)

// StuckMode says how a stuck device is unreachable.
type StuckMode uint8

// The stuck modes.
const (
	Silent StuckMode = iota // it does not advertise
	Refuse                  // it advertises but refuses connections
)

func (m StuckMode) String() string {
	if m == Refuse {
		return "refuse"
	}
	return "silent"
}

// Fault is one fault with its parameters. The zero value of a parameter
// that a fault does not take is what Parse gives; Check fills in the
// defaults of those it takes.
type Fault struct {
	Kind Kind
	// For is how long the fault lasts; 0 until it ends otherwise (see
	// docs/faults.md: a new subscription, a reset, setting the time, its
	// deletion).
	For time.Duration
	// Path is the stream a stall stops ("" for every stream): a
	// subscription stops when Path names its resource or one above it.
	Path string
	// Delay is how long after a drop the device advertises again (Parse
	// gives DefaultDelay when none is given).
	Delay time.Duration
	// Mode is how a stuck device is unreachable.
	Mode StuckMode
	// Offset, for clockreset, is how far UTC jumps; nil loses UTC (it
	// falls back to its never-set value).
	Offset *time.Duration
	// Share is the share of connection events interference empties, 0..1.
	Share float64
	// HideGap makes interference's losses invisible in the timestamps.
	HideGap bool
	// Rate is how fast the battery drains, percent per minute.
	Rate float64
	// Value is firsthr's implausible heart rate, bpm.
	Value float64
	// Stay keeps a dfu device in update mode (a failed update) until the
	// fault is ended.
	Stay bool
}

// param is one parameter's rules.
type param struct {
	name string
	// takes lists the faults that take it.
	takes []Kind
	// help says what values it takes, for messages.
	help string
}

var params = []param{
	{"for", []Kind{Stall, Stuck, Busy, DFU, ClockReset, FirstHR, Interference, Battery, PhoneOff}, "a duration as Go writes them (5s, 2m, 1h30m)"},
	{"path", []Kind{Stall}, "a stream's path, such as /Meas/ECG or /Meas/Acc/52"},
	{"delay", []Kind{Drop}, "a duration, 0 to 1m"},
	{"mode", []Kind{Stuck}, "silent (it does not advertise) or refuse (it advertises but refuses connections)"},
	{"offset", []Kind{ClockReset}, "a duration, -24h to 24h"},
	{"share", []Kind{Interference}, "a number above 0 and at most 1"},
	{"hideGap", []Kind{Interference}, "true or false"},
	{"rate", []Kind{Battery}, "percent per minute, 0.01 to 1000"},
	{"value", []Kind{FirstHR}, "beats per minute, 1 to 300"},
	{"stay", []Kind{DFU}, "true or false"},
}

// limits are a fault's rules for For: its default and range.
type limits struct{ def, min, max time.Duration }

var forLimits = map[Kind]limits{
	Stall:        {0, 0, 24 * time.Hour},
	Stuck:        {30 * time.Second, 100 * time.Millisecond, 24 * time.Hour},
	Busy:         {0, 0, 24 * time.Hour},
	DFU:          {UpdateTimeout, time.Second, 24 * time.Hour},
	ClockReset:   {0, 0, 24 * time.Hour},
	FirstHR:      {0, 0, 24 * time.Hour},
	Interference: {10 * time.Second, 100 * time.Millisecond, 24 * time.Hour},
	Battery:      {0, 0, 24 * time.Hour},
	PhoneOff:     {5 * time.Second, 100 * time.Millisecond, time.Hour},
}

// Defaults of the parameters.
const (
	// UpdateTimeout is how long the family's bootloader waits for an
	// update before it resets into the application: 120 s.
	UpdateTimeout = 2 * time.Minute
	// DefaultDelay is how long after a drop the device advertises again.
	DefaultDelay = time.Second
	// DefaultShare is interference's share of empty connection events.
	DefaultShare = 0.5
	// DefaultRate is the battery's drain, percent per minute.
	DefaultRate = 1.0
	// DefaultFirstHR is the implausible first heart rate, bpm.
	DefaultFirstHR = 160.0
	// MaxPath is the longest path a stall takes.
	MaxPath = 128
)

// takes reports whether kind k takes parameter name.
func takes(k Kind, name string) bool {
	for _, p := range params {
		if p.name == name {
			return slices.Contains(p.takes, k)
		}
	}
	return false
}

// paramsOf lists the parameters kind k takes, for messages.
func paramsOf(k Kind) string {
	var names []string
	for _, p := range params {
		if slices.Contains(p.takes, k) {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 {
		return "no parameters"
	}
	return strings.Join(names, ", ")
}

// Check fills in the defaults of the parameters f takes and checks every
// parameter against its limits. The error wraps ErrInvalid and says what
// is allowed.
func (f *Fault) Check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, f.Kind, fmt.Sprintf(format, a...))
	}
	if f.Kind == 0 || int(f.Kind) >= len(kindNames) {
		return fmt.Errorf("%w: no fault named; allowed: %s", ErrInvalid, Names())
	}
	if f.Kind == DFU && f.Stay {
		if f.For != 0 {
			return bad("for %v with stay: a failed update stays in update mode until the fault is ended (a power cycle); leave out for", f.For)
		}
		return nil
	}
	if lim, ok := forLimits[f.Kind]; ok {
		if f.For == 0 {
			f.For = lim.def
		}
		if f.For != 0 && (f.For < lim.min || f.For > lim.max) {
			return bad("for %v is outside %v..%v%s", f.For, lim.min, lim.max, zeroNote(lim))
		}
	} else if f.For != 0 {
		return bad("for is not one of its parameters: a drop is momentary (delay says when the device advertises again); it takes %s", paramsOf(f.Kind))
	}
	switch f.Kind {
	case Stall:
		if f.Path != "" && (!strings.HasPrefix(f.Path, "/") || len(f.Path) > MaxPath || strings.ContainsAny(f.Path, " \t\n\x00")) {
			return bad("path %q: %s of at most %d characters, or none for every stream", f.Path, params[1].help, MaxPath)
		}
	case Drop:
		if f.Delay < 0 || f.Delay > time.Minute {
			return bad("delay %v is outside 0..1m", f.Delay)
		}
	case ClockReset:
		if o := f.Offset; o != nil && (*o < -24*time.Hour || *o > 24*time.Hour) {
			return bad("offset %v is outside -24h..24h", *o)
		}
	case Interference:
		if f.Share == 0 {
			f.Share = DefaultShare
		}
		if !(f.Share > 0 && f.Share <= 1) {
			return bad("share %v: %s", f.Share, params[5].help)
		}
	case Battery:
		if f.Rate == 0 {
			f.Rate = DefaultRate
		}
		if !(f.Rate >= 0.01 && f.Rate <= 1000) {
			return bad("rate %v: %s", f.Rate, params[7].help)
		}
	case FirstHR:
		if f.Value == 0 {
			f.Value = DefaultFirstHR
		}
		if !(f.Value >= 1 && f.Value <= 300) {
			return bad("value %v: %s", f.Value, params[8].help)
		}
	}
	return nil
}

func zeroNote(l limits) string {
	if l.def == 0 {
		return ", or 0 until it ends otherwise"
	}
	return ""
}

// Parse reads a fault as the API and injections give it: one JSON (or
// YAML) object with the fault's name and its parameters, such as
// {"fault": "stall", "path": "/Meas/ECG", "for": "30s"}. The fault is
// checked (Check). The error names what is wrong and what is allowed.
func Parse(data []byte) (Fault, error) {
	n, err := yamlnode.One(data, `an object such as {"fault": "stall"}`)
	if err != nil {
		return Fault{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	f, err := parseNode(n, nil)
	if err != nil {
		return Fault{}, err
	}
	return f, f.Check()
}

// parseNode reads a fault's mapping; extra, when not nil, takes the keys
// that are not parameters (a plan's at, spread and perHour) and reports
// whether it knew them.
func parseNode(n *yaml.Node, extra func(key string, v *yaml.Node) (bool, error)) (Fault, error) {
	var f Fault
	if n.Kind != yaml.MappingNode {
		return f, fmt.Errorf("%w: want an object such as {\"fault\": \"stall\", \"for\": \"30s\"}", ErrInvalid)
	}
	seen := map[string]bool{}
	var kindNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if seen[k] {
			return f, fmt.Errorf("%w: %s given twice", ErrInvalid, k)
		}
		seen[k] = true
		if k == "fault" {
			kindNode = n.Content[i+1]
		}
	}
	if kindNode == nil {
		return f, fmt.Errorf("%w: name the fault with \"fault\"; allowed: %s", ErrInvalid, Names())
	}
	k, err := ParseKind(yamlnode.Scalar(kindNode))
	if err != nil {
		return f, err
	}
	f.Kind = k
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := n.Content[i].Value, n.Content[i+1]
		if key == "fault" {
			continue
		}
		if extra != nil {
			if ok, err := extra(key, v); err != nil {
				return f, fmt.Errorf("%w: %s: %v", ErrInvalid, k, err)
			} else if ok {
				continue
			}
		}
		if !takes(k, key) {
			if key == "for" && k == Drop {
				return f, fmt.Errorf("%w: drop does not take for: a drop is momentary (delay says when the device advertises again)", ErrInvalid)
			}
			if isParam(key) {
				return f, fmt.Errorf("%w: %s does not take %s; it takes %s", ErrInvalid, k, key, paramsOf(k))
			}
			return f, fmt.Errorf("%w: %s: unknown parameter %s; it takes %s", ErrInvalid, k, key, paramsOf(k))
		}
		if err := f.set(key, v); err != nil {
			return f, fmt.Errorf("%w: %s: %v", ErrInvalid, k, err)
		}
	}
	if k == Drop && !seen["delay"] {
		f.Delay = DefaultDelay
	}
	return f, nil
}

func isParam(name string) bool {
	for _, p := range params {
		if p.name == name {
			return true
		}
	}
	return false
}

// set reads parameter key's value v into f.
func (f *Fault) set(key string, v *yaml.Node) error {
	var err error
	s := yamlnode.Scalar(v)
	switch key {
	case "for":
		f.For, err = duration(key, s)
	case "path":
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return fmt.Errorf("path %s: %s", yamlnode.Describe(v), params[1].help)
		}
		f.Path = s
	case "delay":
		f.Delay, err = duration(key, s)
	case "offset":
		var d time.Duration
		if d, err = duration(key, s); err == nil {
			f.Offset = &d
		}
	case "mode":
		switch strings.ToLower(s) {
		case "silent":
			f.Mode = Silent
		case "refuse":
			f.Mode = Refuse
		default:
			return fmt.Errorf("mode %s: %s", yamlnode.Describe(v), params[3].help)
		}
	case "share", "rate", "value":
		var x float64
		x, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || v.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s %s: a number", key, yamlnode.Describe(v))
		}
		if x == 0 {
			return fmt.Errorf("%s 0: leave it out for its default, or give a value in range", key)
		}
		switch key {
		case "share":
			f.Share = x
		case "rate":
			f.Rate = x
		default:
			f.Value = x
		}
	case "hideGap", "stay":
		b, ok := boolean(v)
		if !ok {
			return fmt.Errorf("%s %s: true or false", key, yamlnode.Describe(v))
		}
		if key == "stay" {
			f.Stay = b
		} else {
			f.HideGap = b
		}
	}
	return err
}

// duration reads a duration as Go writes them.
func duration(key, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s %q: a duration as Go writes them, such as 5s, 2m or 1h30m", key, s)
	}
	return d, nil
}

func boolean(v *yaml.Node) (bool, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		return false, false
	}
	b, err := strconv.ParseBool(v.Value)
	return b, err == nil
}

// AppendJSON appends the fault as JSON: its name and the parameters it
// takes, as Parse reads them back.
func (f Fault) AppendJSON(b []byte) []byte {
	b = append(b, `{"fault":"`...)
	b = append(b, f.Kind.String()...)
	b = append(b, '"')
	b = f.appendParams(b)
	return append(b, '}')
}

// appendParams appends ,"name":value for each parameter f takes.
func (f Fault) appendParams(b []byte) []byte {
	dur := func(name string, d time.Duration) {
		b = append(b, `,"`+name+`":"`...)
		b = append(b, d.String()...)
		b = append(b, '"')
	}
	num := func(name string, x float64) {
		b = append(b, `,"`+name+`":`...)
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	if _, ok := forLimits[f.Kind]; ok {
		dur("for", f.For)
	}
	switch f.Kind {
	case Stall:
		b = append(b, `,"path":`...)
		b = strconv.AppendQuote(b, f.Path)
	case Drop:
		dur("delay", f.Delay)
	case Stuck:
		b = append(b, `,"mode":"`+f.Mode.String()+`"`...)
	case ClockReset:
		if f.Offset != nil {
			dur("offset", *f.Offset)
		}
	case Interference:
		num("share", f.Share)
		b = append(b, `,"hideGap":`...)
		b = strconv.AppendBool(b, f.HideGap)
	case Battery:
		num("rate", f.Rate)
	case FirstHR:
		num("value", f.Value)
	case DFU:
		b = append(b, `,"stay":`...)
		b = strconv.AppendBool(b, f.Stay)
	}
	return b
}

// MarshalJSON encodes the fault as AppendJSON does.
func (f Fault) MarshalJSON() ([]byte, error) { return f.AppendJSON(nil), nil }

// String describes the fault in one line, as its JSON.
func (f Fault) String() string { return string(f.AppendJSON(nil)) }

// Matches reports whether a stall's path names the resource at path
// (without the /net/<serial> prefix) or one above it, in any case: a stall
// of /Meas/ECG stops /Meas/ECG/125 and /Meas/ECG/125/mV. An empty path
// matches every stream.
func Matches(stallPath, path string) bool {
	s := strings.Trim(stallPath, "/")
	if s == "" {
		return true
	}
	p := strings.Trim(path, "/")
	if len(p) < len(s) || !strings.EqualFold(p[:len(s)], s) {
		return false
	}
	return len(p) == len(s) || p[len(s)] == '/'
}

// Param describes one parameter of a fault, for forms (the dashboard's).
type Param struct {
	Name    string `json:"name"`
	Help    string `json:"help"`
	Default string `json:"default,omitempty"` // as Parse reads it; "" for none
}

// Description describes a fault and its parameters, for forms.
type Description struct {
	Fault  string  `json:"fault"`
	Params []Param `json:"params"`
}

// Describe describes every fault and its parameters, with their defaults
// and what they take.
func Describe() []Description {
	var out []Description
	for _, k := range Kinds() {
		f := Fault{Kind: k}
		if k == Drop {
			f.Delay = DefaultDelay
		}
		f.Check()
		d := Description{Fault: k.String(), Params: []Param{}}
		for _, p := range params {
			if !slices.Contains(p.takes, k) {
				continue
			}
			q := Param{Name: p.name, Help: p.help}
			switch p.name {
			case "for":
				q.Help = fmt.Sprintf("%s, %v..%v", p.help, forLimits[k].min, forLimits[k].max)
				if f.For > 0 {
					q.Default = f.For.String()
				} else {
					q.Help += "; 0 until it ends otherwise"
				}
			case "delay":
				q.Default = f.Delay.String()
			case "mode":
				q.Default = f.Mode.String()
			case "share":
				q.Default = strconv.FormatFloat(f.Share, 'g', -1, 64)
			case "rate":
				q.Default = strconv.FormatFloat(f.Rate, 'g', -1, 64)
			case "value":
				q.Default = strconv.FormatFloat(f.Value, 'g', -1, 64)
			case "hideGap", "stay":
				q.Default = "false"
			}
			d.Params = append(d.Params, q)
		}
		out = append(out, d)
	}
	return out
}
