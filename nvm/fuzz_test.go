package nvm

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"senseboard/profile"
)

// FuzzDecode: any bytes decode to a body or a *CorruptError naming the
// file, and a body re-encodes to the same file.
func FuzzDecode(f *testing.F) {
	f.Add(Encode([]byte("hello")))
	f.Add(Encode(nil))
	f.Add([]byte("SBNV\x01\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00"))
	f.Add(Encode([]byte(`{"a":1}`))[:10])
	f.Fuzz(func(t *testing.T, raw []byte) {
		body, err := Decode("state/x", raw)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != "state/x" {
				t.Fatalf("error %v is not a CorruptError naming the file", err)
			}
			return
		}
		enc := Encode(body)
		if !bytes.Equal(enc[:5], raw[:5]) || !bytes.Equal(enc[8:], raw[8:]) {
			t.Fatalf("%x decodes to %x, which encodes to %x", raw, body, enc)
		}
	})
}

// FuzzOpenEEPROM: a chip file of any bytes opens as a chip of the right
// size that holds the file's body, or fails with a *CorruptError naming
// the file.
func FuzzOpenEEPROM(f *testing.F) {
	chip := bytes.Repeat([]byte{0xFF}, profile.ChipSize)
	f.Add(Encode(chip))
	f.Add(Encode(chip[:100]))
	f.Add(Encode(chip)[:1000])
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		path := s.Path(ChipFile(1))
		if err := os.WriteFile(path, raw, Perm); err != nil {
			t.Fatal(err)
		}
		e, err := OpenEEPROM(s)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("error %v is not a CorruptError naming %s", err, path)
			}
			return
		}
		got, err := e.Read(1, 0, profile.ChipSize)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(Encode(got)[8:], raw[8:]) {
			t.Fatal("the chip does not hold the file's body")
		}
	})
}
