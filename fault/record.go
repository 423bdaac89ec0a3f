package fault

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"senseboard/internal/yamlnode"
)

// Stamp is a moment as the device tells it: its relative time in
// milliseconds (Timestamp of the notifications) and its UTC time (/Time).
type Stamp struct {
	MS  uint32
	UTC time.Time
}

func (s Stamp) appendJSON(b []byte) []byte {
	b = append(b, `{"ms":`...)
	b = strconv.AppendUint(b, uint64(s.MS), 10)
	b = append(b, `,"utc":"`...)
	b = s.UTC.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

// How a fault came about (Record.Origin).
const (
	FromAPI      = "api"      // a client injected it (the bridge, a Go test)
	FromScenario = "scenario" // the scenario's or the fleet's fault plan
	FromDevice   = "device"   // the device brought it on itself (PUT /System/Mode 12, requests that timed out)
)

// How a fault ended (Record.EndedBy).
const (
	EndedFor          = "for"          // its duration passed
	EndedDeleted      = "deleted"      // a client ended it: a power cycle where the fault stands for one
	EndedReset        = "reset"        // the device reset (PUT /System/Mode 5)
	EndedResubscribed = "resubscribed" // every stalled stream was subscribed again, or ended
	EndedTimeSet      = "time set"     // the device's time was set
	EndedPhoneOff     = "phoneoff"     // the central turned its Bluetooth off and on
	EndedAdvertising  = "advertising"  // the dropped device advertises again
	EndedNoEffect     = "no effect"    // nothing it could act on (no connection, no phone)
	EndedClosed       = "closed"       // the device stopped
)

// Record is the ground truth of one fault a device went through: what,
// with which parameters, from when to when, how it came about and how it
// ended.
type Record struct {
	ID     int
	Device string // serial number
	Fault  Fault
	Start  Stamp
	End    *Stamp // nil while the fault lasts
	// Origin says how it came about: FromAPI, FromScenario, FromDevice.
	Origin string
	// EndedBy says how it ended (EndedFor, EndedReset, ...); "" while it
	// lasts.
	EndedBy string
}

// Active reports whether the fault lasts.
func (r *Record) Active() bool { return r.End == nil }

// AppendJSON appends the record as one JSON object: id, device, fault and
// its parameters, start, end (null while it lasts), origin and endedBy.
func (r *Record) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(r.ID), 10)
	b = append(b, `,"device":`...)
	b = strconv.AppendQuote(b, r.Device)
	b = append(b, `,"fault":"`...)
	b = append(b, r.Fault.Kind.String()...)
	b = append(b, '"')
	b = r.Fault.appendParams(b)
	b = append(b, `,"start":`...)
	b = r.Start.appendJSON(b)
	b = append(b, `,"end":`...)
	if r.End == nil {
		b = append(b, "null"...)
	} else {
		b = r.End.appendJSON(b)
	}
	b = append(b, `,"origin":`...)
	b = strconv.AppendQuote(b, r.Origin)
	b = append(b, `,"endedBy":`...)
	b = strconv.AppendQuote(b, r.EndedBy)
	return append(b, '}')
}

// MarshalJSON encodes the record as AppendJSON does.
func (r Record) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// ParseRecord reads a record as AppendJSON writes it.
func ParseRecord(data []byte) (Record, error) {
	var r Record
	n, err := yamlnode.One(data, `an object such as {"fault": "stall"}`)
	if err != nil {
		return r, fmt.Errorf("fault record: %w", err)
	}
	seen := map[string]bool{}
	f, err := parseNode(n, func(key string, v *yaml.Node) (bool, error) {
		seen[key] = true
		switch key {
		case "id":
			id, err := strconv.Atoi(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode || id < 1 {
				return true, fmt.Errorf("id %s: a whole number from 1", yamlnode.Describe(v))
			}
			r.ID = id
		case "device":
			r.Device = yamlnode.Scalar(v)
		case "origin":
			r.Origin = yamlnode.Scalar(v)
		case "endedBy":
			r.EndedBy = yamlnode.Scalar(v)
		case "start", "end":
			if key == "end" && v.Tag == "!!null" {
				return true, nil
			}
			s, err := parseStamp(v)
			if err != nil {
				return true, fmt.Errorf("%s: %w", key, err)
			}
			if key == "start" {
				r.Start = s
			} else {
				r.End = &s
			}
		default:
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return r, fmt.Errorf("fault record: %w", err)
	}
	if !seen["id"] || !seen["start"] {
		return r, fmt.Errorf("fault record: %w: want id and start", ErrInvalid)
	}
	r.Fault = f
	return r, nil
}

func parseStamp(v *yaml.Node) (Stamp, error) {
	var s Stamp
	var raw struct {
		MS  *uint32 `yaml:"ms"`
		UTC string  `yaml:"utc"`
	}
	if v.Kind != yaml.MappingNode || v.Decode(&raw) != nil || raw.MS == nil {
		return s, fmt.Errorf("want {\"ms\": relative time, \"utc\": RFC 3339 time}")
	}
	t, err := time.Parse(time.RFC3339Nano, raw.UTC)
	if err != nil {
		return s, fmt.Errorf("utc %q: a time in RFC 3339", raw.UTC)
	}
	s.MS, s.UTC = *raw.MS, t
	return s, nil
}

// WriteJSONL writes records as JSON Lines, one a line.
func WriteJSONL(w io.Writer, records []Record) error {
	var b []byte
	for i := range records {
		b = records[i].AppendJSON(b[:0])
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// ReadJSONL reads records written by WriteJSONL. Lines of the same id
// (a fault written when it started and again when it ended) give one
// record, the last; the records come in the order of their ids' first
// lines.
func ReadJSONL(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var out []Record
	at := map[int]int{}
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		rec, err := ParseRecord(text)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", line, err)
		}
		if i, ok := at[rec.ID]; ok {
			out[i] = rec
			continue
		}
		at[rec.ID] = len(out)
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Overlaps reports whether the fault lasted at some moment of the span
// from..to of device relative time (ms); an active fault lasts to the end
// of every span.
func (r *Record) Overlaps(from, to uint32) bool {
	if r.Start.MS > to {
		return false
	}
	return r.End == nil || r.End.MS >= from
}
