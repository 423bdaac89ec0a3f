package nvm

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"senseboard/profile"
)

// EEPROM is the device's two EEPROM chips, each kept in its own state file
// (eeprom0.bin, eeprom1.bin). A chip that was never written reads 0xFF, as
// erased EEPROM does.
type EEPROM struct {
	store *Store
	mu    sync.RWMutex
	chips [profile.Chips]chip

	watchMu  sync.Mutex
	watchers []func(Change)
}

// ChipFile returns the state file name of a chip.
func ChipFile(chip int) string { return fmt.Sprintf("eeprom%d.bin", chip) }

// OpenEEPROM loads both chips from the store. A corrupt chip file is an error.
func OpenEEPROM(s *Store) (*EEPROM, error) {
	e := &EEPROM{store: s}
	for i := range e.chips {
		data, err := s.Read(ChipFile(i))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // erased
		case err != nil:
			return nil, err
		case len(data) != profile.ChipSize:
			return nil, &CorruptError{s.Path(ChipFile(i)), fmt.Sprintf("holds %d bytes, a chip has %d", len(data), profile.ChipSize)}
		}
		e.chips[i].set(0, data)
	}
	return e, nil
}

// pageSize is the unit in which a chip's bytes are held in memory.
const pageSize = 1024

// chip holds a chip's bytes sparsely: a page that is erased (all 0xFF) has
// no memory, and a chip that is all erased has no page table, so that an
// idle device with erased chips costs a few bytes instead of the chips' size.
type chip struct {
	pages *[profile.ChipSize / pageSize]*[pageSize]byte // nil while erased
}

// read copies the bytes from addr into b.
func (c *chip) read(addr int, b []byte) {
	for len(b) > 0 {
		p, off := addr/pageSize, addr%pageSize
		n := min(len(b), pageSize-off)
		if c.pages != nil && c.pages[p] != nil {
			pg := c.pages[p]
			copy(b[:n], pg[off:])
		} else {
			for i := range b[:n] {
				b[i] = 0xFF
			}
		}
		b, addr = b[n:], addr+n
	}
}

// set stores b at addr, holding a page only while it has a byte that is
// not erased.
func (c *chip) set(addr int, b []byte) {
	for len(b) > 0 {
		p, off := addr/pageSize, addr%pageSize
		n := min(len(b), pageSize-off)
		if c.pages == nil {
			if erased(b[:n]) {
				b, addr = b[n:], addr+n
				continue
			}
			c.pages = new([profile.ChipSize / pageSize]*[pageSize]byte)
		}
		pg := c.pages[p]
		if pg == nil && !erased(b[:n]) {
			pg = new([pageSize]byte)
			for i := range pg {
				pg[i] = 0xFF
			}
			c.pages[p] = pg
		}
		if pg != nil {
			copy(pg[off:], b[:n])
			if erased(pg[:]) {
				c.pages[p] = nil
			}
		}
		b, addr = b[n:], addr+n
	}
}

// erased reports whether every byte of b is 0xFF.
func erased(b []byte) bool {
	for _, v := range b {
		if v != 0xFF {
			return false
		}
	}
	return true
}

// images lends chip-sized buffers for writing a chip's file.
var images = sync.Pool{New: func() any { return new([profile.ChipSize]byte) }}

// check validates a chip index and span.
func check(chip, addr, n int) error {
	if chip < 0 || chip >= profile.Chips {
		return fmt.Errorf("no EEPROM chip %d; chips are 0 and 1", chip)
	}
	if addr < 0 || n < 0 || addr+n > profile.ChipSize {
		return fmt.Errorf("address %d with %d bytes is past the chip's end (%d bytes)", addr, n, profile.ChipSize)
	}
	return nil
}

// Read copies n bytes from addr of chip.
func (e *EEPROM) Read(chip, addr, n int) ([]byte, error) {
	if err := check(chip, addr, n); err != nil {
		return nil, err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	b := make([]byte, n)
	e.chips[chip].read(addr, b)
	return b, nil
}

// Write stores data at addr of chip and returns once it is durable. On
// failure the chip is unchanged.
func (e *EEPROM) Write(chip, addr int, data []byte) error {
	return e.WriteFunc(nil, chip, addr, len(data), func(b []byte) { copy(b, data) })
}

// WriteFunc stores n bytes at addr of chip for the writer by and returns
// once they are durable. fill gives the bytes: it is called with the chip's
// current bytes under the write lock, so that no other write comes between
// what fill saw and what it stores. On failure the chip is unchanged.
func (e *EEPROM) WriteFunc(by any, chip, addr, n int, fill func(b []byte)) error {
	if err := check(chip, addr, n); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &e.chips[chip]
	img := images.Get().(*[profile.ChipSize]byte)
	defer images.Put(img)
	c.read(0, img[:])
	span := img[addr : addr+n]
	fill(span)
	if err := e.store.Write(ChipFile(chip), img[:]); err != nil {
		return err // the chip is unchanged: only the image took the bytes
	}
	c.set(addr, span)
	e.watchMu.Lock()
	ws := e.watchers
	e.watchMu.Unlock()
	for _, w := range ws {
		w(Change{Chip: chip, Addr: addr, Data: span, By: by})
	}
	return nil
}

// A Change is one write, as watchers are told of it.
type Change struct {
	Chip, Addr int
	Data       []byte // the bytes written; valid only during the call
	By         any    // the writer given to WriteFunc; nil for Write
}

// Watch calls f after every write. f runs under the write lock, so watchers
// see the writes in the order the chips took them; f must not call the
// EEPROM.
func (e *EEPROM) Watch(f func(Change)) {
	e.watchMu.Lock()
	defer e.watchMu.Unlock()
	e.watchers = append(e.watchers, f)
}
