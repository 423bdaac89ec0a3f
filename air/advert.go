package air

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Advert is what a device publishes on its advert subject: that it is on
// the air, which program serves it, how often it says so, and what a scan
// of it sees now, as its radio broadcasts it. A device that leaves the air
// says goodbye with Gone set to why.
type Advert struct {
	Serial  string `json:"serial"`
	Program string `json:"program"` // the program's id on the air
	Every   int64  `json:"every"`   // ms between adverts
	// Scan is what a scan of the device sees, a JSON object of the radio
	// link (package link's Advert frame), when its program says.
	Scan json.RawMessage `json:"scan,omitempty"`
	Gone string          `json:"gone,omitempty"`
}

// ErrAdvert is an advert that does not parse.
var ErrAdvert = errors.New("malformed advert")

// maxEvery bounds the advert interval an advert may claim.
const maxEvery = time.Hour

// ParseAdvert parses an advert received on subject; the serial number
// must be the subject's. An error wraps ErrAdvert and says what is wrong.
func ParseAdvert(subject string, data []byte) (Advert, error) {
	s, err := ParseSubject(subject)
	if err != nil {
		return Advert{}, fmt.Errorf("%w: %w", ErrAdvert, err)
	}
	if s.Kind != KindAdvert {
		return Advert{}, fmt.Errorf("%w: subject %q is not an advert's", ErrAdvert, subject)
	}
	var a Advert
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Advert{}, fmt.Errorf("%w of %s: %v", ErrAdvert, s.Serial, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Advert{}, fmt.Errorf("%w of %s: more than one JSON object", ErrAdvert, s.Serial)
	}
	switch {
	case a.Serial != s.Serial:
		return Advert{}, fmt.Errorf("%w of %s: it names serial %q", ErrAdvert, s.Serial, a.Serial)
	case a.Program == "":
		return Advert{}, fmt.Errorf("%w of %s: no program", ErrAdvert, s.Serial)
	case a.Every < 1 || a.Every > maxEvery.Milliseconds():
		return Advert{}, fmt.Errorf("%w of %s: every %d ms; 1 ms to 1 h", ErrAdvert, s.Serial, a.Every)
	case a.Scan != nil && (len(a.Scan) == 0 || a.Scan[0] != '{'):
		return Advert{}, fmt.Errorf("%w of %s: its scan is not a JSON object", ErrAdvert, s.Serial)
	}
	return a, nil
}

// interval is how often the advert says the device advertises.
func (a Advert) interval() time.Duration { return time.Duration(a.Every) * time.Millisecond }
