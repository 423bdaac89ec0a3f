package phone

import (
	"fmt"
	"time"

	"senseboard/fault"
)

// Faults is the field faults of a device of this program (package
// senseboard's Faults): what injects them, ends them and keeps their
// ground truth, and the phone that phoneoff turns off.
type Faults interface {
	InjectJSON(data []byte) (fault.Record, error)
	End(id int) (fault.Record, error)
	List() []fault.Record
	// SetPhone gives the phone whose Bluetooth a phoneoff turns off.
	SetPhone(off func(d time.Duration, on func()) error)
}

// localFaults returns the faults of a device of this program.
func (ph *Phone) localFaults(serial string) (Faults, error) {
	d, err := ph.device(serial)
	if err != nil {
		return nil, err
	}
	if d.p.Faults == nil {
		return nil, fmt.Errorf("device %s %w", serial, ErrNotLocal)
	}
	return d.p.Faults, nil
}

// InjectFault starts a fault on a device of this program: the fault as
// JSON, as docs/faults.md gives it ({"fault": "stall", ...}). A fault the
// device refuses is an *EventError that says what is allowed.
func (ph *Phone) InjectFault(serial string, data []byte) (fault.Record, error) {
	f, err := ph.localFaults(serial)
	if err != nil {
		return fault.Record{}, err
	}
	rec, err := f.InjectJSON(data)
	if err != nil {
		return rec, &EventError{Err: err}
	}
	return rec, nil
}

// EndFault ends an active fault of a device of this program.
func (ph *Phone) EndFault(serial string, id int) (fault.Record, error) {
	f, err := ph.localFaults(serial)
	if err != nil {
		return fault.Record{}, err
	}
	return f.End(id)
}

// Faults returns the ground truth of a device of this program: every
// fault injected into it, active and past.
func (ph *Phone) Faults(serial string) ([]fault.Record, error) {
	f, err := ph.localFaults(serial)
	if err != nil {
		return nil, err
	}
	return f.List(), nil
}
