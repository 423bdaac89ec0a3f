package nvm

import (
	"testing"

	"senseboard/profile"
)

// BenchmarkChipWrite is one durable EEPROM write: the whole chip file
// replaced and fsynced, then its directory.
func BenchmarkChipWrite(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e, err := OpenEEPROM(s)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 64)
	for i := 0; b.Loop(); i++ {
		data[0] = byte(i)
		if err := e.Write(i%profile.Chips, 0, data); err != nil {
			b.Fatal(err)
		}
	}
}
