package fault

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"senseboard/internal/yamlnode"
	"senseboard/noise"
)

// Entry is one line of a plan: a fault at a time of the device's timeline
// (At, with each device's moment drawn within Spread after it), or a fault
// that comes at random, PerHour times an hour on average, each lasting a
// time drawn from For..ForMax.
type Entry struct {
	Fault Fault
	// At is when a timed entry's fault starts, since the device started.
	At time.Duration
	// Spread, for a timed entry, draws each device's moment from
	// At..At+Spread with its seed, so that a fleet's devices do not all
	// fail at once; 0 for exactly At.
	Spread time.Duration
	// PerHour, when positive, makes the entry random: its faults come as
	// a Poisson process of that rate, drawn from the device's seed.
	PerHour float64
	// ForMax, for a random entry, is the longest of its faults: each
	// lasts a time drawn evenly from Fault.For..ForMax.
	ForMax time.Duration
}

// Random reports whether the entry's faults come at random.
func (e *Entry) Random() bool { return e.PerHour > 0 }

// Plan is a device's faults over time, as a scenario's faults section or a
// fleet's --faults file gives them.
type Plan []Entry

// MaxPerHour is the most faults an hour a random entry may ask for.
const MaxPerHour = 3600

// MaxAt is the latest time of a timed entry.
const MaxAt = 365 * 24 * time.Hour

// ParsePlan reads a plan file: a YAML (or JSON) list of entries, or a
// mapping whose faults key holds that list, as a scenario's section:
//
//	faults:
//	  - at: 2m              # timed: since the device started
//	    fault: stall
//	    path: /Meas/ECG
//	    for: 30s
//	  - fault: stall        # random: about twice an hour, 5 to 30 s each
//	    path: /Meas/ECG
//	    perHour: 2
//	    for: 5s..30s
func ParsePlan(data []byte) (Plan, error) {
	n, err := yamlnode.One(data, `an object such as {"fault": "stall"}`)
	if err != nil {
		return nil, fmt.Errorf("fault plan: %w", err)
	}
	if n.Kind == yaml.MappingNode {
		var list *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value != "faults" {
				return nil, fmt.Errorf("fault plan: unknown key %s; a plan is a list of faults, or a mapping with faults: and that list", n.Content[i].Value)
			}
			list = n.Content[i+1]
		}
		if list == nil {
			return nil, errors.New("fault plan: no faults")
		}
		n = list
	}
	return ParsePlanNode(n)
}

// ParsePlanNode reads a plan's list of entries from a YAML node.
func ParsePlanNode(n *yaml.Node) (Plan, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("fault plan (line %d): want a list of faults, each with at (a time) or perHour (a rate)", n.Line)
	}
	var p Plan
	for i, en := range n.Content {
		e, err := parseEntry(en)
		if err != nil {
			return nil, fmt.Errorf("faults[%d] (line %d): %w", i, en.Line, err)
		}
		p = append(p, e)
	}
	return p, nil
}

func parseEntry(n *yaml.Node) (Entry, error) {
	var e Entry
	var at, spread, perHour, forRange *yaml.Node
	f, err := parseNode(n, func(key string, v *yaml.Node) (bool, error) {
		switch key {
		case "at":
			at = v
		case "spread":
			spread = v
		case "perHour":
			perHour = v
		case "for":
			if s := yamlnode.Scalar(v); strings.Contains(s, "..") {
				forRange = v
				return true, nil
			}
			return false, nil
		default:
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return e, err
	}
	switch {
	case at != nil && perHour != nil:
		return e, fmt.Errorf("%w: %s: at and perHour both given; a fault comes at a time (at) or at random (perHour)", ErrInvalid, f.Kind)
	case at == nil && perHour == nil:
		return e, fmt.Errorf("%w: %s: give at (a time since the device started, such as 2m) or perHour (how often it comes at random)", ErrInvalid, f.Kind)
	case at != nil:
		if e.At, err = duration("at", yamlnode.Scalar(at)); err != nil || e.At < 0 || e.At > MaxAt {
			return e, fmt.Errorf("%w: %s: at %s: a duration from 0 to %v since the device started", ErrInvalid, f.Kind, yamlnode.Describe(at), MaxAt)
		}
		if spread != nil {
			if e.Spread, err = duration("spread", yamlnode.Scalar(spread)); err != nil || e.Spread < 0 || e.Spread > MaxAt {
				return e, fmt.Errorf("%w: %s: spread %s: a duration from 0 to %v", ErrInvalid, f.Kind, yamlnode.Describe(spread), MaxAt)
			}
		}
		if forRange != nil {
			return e, fmt.Errorf("%w: %s: for %s: a range is for faults that come at random (perHour); give one duration", ErrInvalid, f.Kind, yamlnode.Describe(forRange))
		}
	default:
		if spread != nil {
			return e, fmt.Errorf("%w: %s: spread is for timed faults (at)", ErrInvalid, f.Kind)
		}
		x, perr := strconv.ParseFloat(yamlnode.Scalar(perHour), 64)
		if perr != nil || !(x > 0 && x <= MaxPerHour) {
			return e, fmt.Errorf("%w: %s: perHour %s: how many times an hour on average, above 0 and at most %d", ErrInvalid, f.Kind, yamlnode.Describe(perHour), MaxPerHour)
		}
		e.PerHour = x
		if forRange != nil {
			lo, hi, _ := strings.Cut(yamlnode.Scalar(forRange), "..")
			a, err1 := duration("for", lo)
			b, err2 := duration("for", hi)
			if err1 != nil || err2 != nil || a <= 0 || b < a {
				return e, fmt.Errorf("%w: %s: for %s: a range such as 5s..30s, the shorter first", ErrInvalid, f.Kind, yamlnode.Describe(forRange))
			}
			f.For, e.ForMax = a, b
		}
	}
	if err := f.Check(); err != nil {
		return e, err
	}
	if e.ForMax != 0 {
		// the longest must obey the fault's limits too
		g := f
		g.For = e.ForMax
		if err := g.Check(); err != nil {
			return e, err
		}
	} else {
		e.ForMax = f.For
	}
	e.Fault = f
	return e, nil
}

// Occurrence is one fault of a plan on a device's timeline.
type Occurrence struct {
	At    time.Duration // since the device started
	Fault Fault
	Entry int // the plan entry it comes of
}

// Schedule is a plan's faults for one device, in time order: the same
// seed gives the same faults at the same times.
type Schedule struct {
	seed uint64
	plan Plan
	next occurrences // the next occurrence of each entry with more to come
	n    []uint64    // occurrences drawn per entry
}

// streamPlan is the noise stream of plans.
const streamPlan = 0xFA17

// Schedule returns the plan's faults for the device of seed.
func (p Plan) Schedule(seed uint64) *Schedule {
	s := &Schedule{seed: seed, plan: p, n: make([]uint64, len(p))}
	for i := range p {
		if o, ok := s.draw(i, 0); ok {
			s.next = append(s.next, o)
		}
	}
	heap.Init(&s.next)
	return s
}

// Next returns the next fault, and false when there are no more.
func (s *Schedule) Next() (Occurrence, bool) {
	if len(s.next) == 0 {
		return Occurrence{}, false
	}
	o := s.next[0]
	if n, ok := s.draw(o.Entry, o.At); ok {
		s.next[0] = n
		heap.Fix(&s.next, 0)
	} else {
		heap.Pop(&s.next)
	}
	return o, true
}

// draw returns the next occurrence of entry i after time after.
func (s *Schedule) draw(i int, after time.Duration) (Occurrence, bool) {
	e := &s.plan[i]
	k := s.n[i]
	s.n[i]++
	key := func(j uint64) float64 { return noise.Uniform(noise.Key(s.seed, streamPlan+uint64(i)<<8, 3*k+j)) }
	f := e.Fault
	if !e.Random() {
		if k > 0 {
			return Occurrence{}, false
		}
		at := e.At
		if e.Spread > 0 {
			at += time.Duration(key(0) * float64(e.Spread))
		}
		return Occurrence{At: at, Fault: f, Entry: i}, true
	}
	// exponential gaps of mean 1/PerHour hours
	gap := -math.Log(1-key(0)) / e.PerHour * float64(time.Hour)
	at := after + time.Duration(gap)
	if at < after || at > MaxAt { // beyond a year: none
		return Occurrence{}, false
	}
	if e.ForMax > f.For {
		f.For += time.Duration(key(1) * float64(e.ForMax-f.For))
		f.For = f.For.Round(time.Millisecond)
	}
	return Occurrence{At: at, Fault: f, Entry: i}, true
}

type occurrences []Occurrence

func (o occurrences) Len() int { return len(o) }
func (o occurrences) Less(i, j int) bool {
	if o[i].At != o[j].At {
		return o[i].At < o[j].At
	}
	return o[i].Entry < o[j].Entry
}
func (o occurrences) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o *occurrences) Push(x any)   { *o = append(*o, x.(Occurrence)) }
func (o *occurrences) Pop() any {
	old := *o
	x := old[len(old)-1]
	*o = old[:len(old)-1]
	return x
}
