package nvm

import (
	"bytes"
	"testing"
)

// pagesHeld counts the pages a chip holds in memory.
func pagesHeld(e *EEPROM, chip int) int {
	n := 0
	if e.chips[chip].pages == nil {
		return 0
	}
	for _, p := range e.chips[chip].pages {
		if p != nil {
			n++
		}
	}
	return n
}

func TestEEPROMHoldsOnlyWrittenPages(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := OpenEEPROM(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := pagesHeld(e, 0) + pagesHeld(e, 1); n != 0 {
		t.Fatalf("erased chips hold %d pages", n)
	}
	data := bytes.Repeat([]byte{0x5A}, 100)
	addr := pageSize - 50 // across a page boundary
	if err := e.Write(1, addr, data); err != nil {
		t.Fatal(err)
	}
	if got := pagesHeld(e, 1); got != 2 {
		t.Errorf("a write across a boundary holds %d pages, want 2", got)
	}
	if got, _ := e.Read(1, addr-1, 102); got[0] != 0xFF || !bytes.Equal(got[1:101], data) || got[101] != 0xFF {
		t.Errorf("read back % x", got)
	}
	// reopened from its file, the chip holds the same pages
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err = OpenEEPROM(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Read(1, addr, 100); !bytes.Equal(got, data) || pagesHeld(e, 1) != 2 || pagesHeld(e, 0) != 0 {
		t.Errorf("reopened: % x, pages %d and %d", got, pagesHeld(e, 0), pagesHeld(e, 1))
	}
	// erasing the bytes again lets the pages go
	if err := e.Write(1, addr, bytes.Repeat([]byte{0xFF}, 100)); err != nil {
		t.Fatal(err)
	}
	if got := pagesHeld(e, 1); got != 0 {
		t.Errorf("erased again, the chip holds %d pages", got)
	}
}
