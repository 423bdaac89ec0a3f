package nvm

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ErrNotStored marks an error of Var.Update whose new value was allowed
// but did not reach the state file (the write failed): a failure of the
// device, where the other errors of Update are a value refused.
var ErrNotStored = errors.New("the value did not reach non-volatile memory")

// A Var is a value kept in a JSON state file, in the manner of bbolt's
// Update: it is read once, when opened, and changes only through Update,
// which writes the new value durably or changes nothing. The same check
// applies to the value loaded and to every value written, so a state file
// holds nothing a client could not have set. T must survive a JSON round
// trip: what its JSON holds is all of its state. A Var is safe for
// concurrent use.
type Var[T any] struct {
	store *Store
	name  string
	check func(*T) error

	mu  sync.Mutex
	val T
}

// OpenVar loads the named JSON state file of s: its value when it exists,
// def when it does not. check, which may be nil, says whether a value is
// allowed. A file that does not decode strictly (see DecodeJSON) or whose
// value check refuses is a *CorruptError that names the file. With a nil
// store the Var keeps its value in memory only.
func OpenVar[T any](s *Store, name string, def T, check func(*T) error) (*Var[T], error) {
	v := &Var[T]{store: s, name: name, check: check}
	data, err := json.Marshal(def)
	if err != nil {
		return nil, fmt.Errorf("nvm: %s: encode the default: %w", name, err)
	}
	if err := json.Unmarshal(data, &v.val); err != nil { // a copy that shares nothing with def
		return nil, fmt.Errorf("nvm: %s: copy the default: %w", name, err)
	}
	if s == nil {
		return v, nil
	}
	if _, err := s.ReadJSON(name, &v.val); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(&v.val); err != nil {
			return nil, &CorruptError{s.Path(name), err.Error()}
		}
	}
	return v, nil
}

// Get returns the value. Maps, slices and pointers in it are shared with
// the Var: read them, and change them only through Update.
func (v *Var[T]) Get() T {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.val
}

// Path returns the path of the state file; "" for a Var in memory only.
func (v *Var[T]) Path() string {
	if v.store == nil {
		return ""
	}
	return v.store.Path(v.name)
}

// Update calls change with a deep copy of the value, checks what change
// made of it, and writes it to the state file durably; only then does the
// Var take it. If change or the check returns an error, or the write
// fails, neither the file nor the value changes and Update returns that
// error: change's and the check's as they are (a value refused), the
// others wrapping ErrNotStored (errors.Is tells them apart). Updates are
// serialised; change must not call the Var.
func (v *Var[T]) Update(change func(*T) error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	data, err := json.Marshal(v.val)
	if err != nil {
		return fmt.Errorf("nvm: %s: %w: encode: %w", v.name, ErrNotStored, err)
	}
	var next T
	if err := json.Unmarshal(data, &next); err != nil {
		return fmt.Errorf("nvm: %s: %w: copy: %w", v.name, ErrNotStored, err)
	}
	if err := change(&next); err != nil {
		return err
	}
	if v.check != nil {
		if err := v.check(&next); err != nil {
			return err
		}
	}
	if v.store != nil {
		if err := v.store.WriteJSON(v.name, next); err != nil {
			return fmt.Errorf("nvm: %s: %w: %w", v.name, ErrNotStored, err)
		}
	}
	v.val = next
	return nil
}
