package resource

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Pair is the read form of an enumerated value, [value, name], as the
// specification shows bonding policies, debug levels, LED colours and
// state ids.
type Pair struct {
	Value int
	Name  string
}

// AppendJSON appends the pair as a two-element JSON array.
func (p Pair) AppendJSON(b []byte) []byte {
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(p.Value), 10)
	b = append(b, ',')
	b = AppendString(b, p.Name)
	return append(b, ']')
}

// MarshalJSON encodes the pair as AppendJSON does.
func (p Pair) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil), nil }

// UnmarshalJSON decodes [value, name].
func (p *Pair) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || len(raw) != 2 {
		return fmt.Errorf("a pair is [value, name]: %s", clip(string(data), 40))
	}
	if err := json.Unmarshal(raw[0], &p.Value); err != nil {
		return fmt.Errorf("pair value: %w", err)
	}
	return json.Unmarshal(raw[1], &p.Name)
}
