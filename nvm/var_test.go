package nvm

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

type settings struct {
	Level int               `json:"Level"`
	Names map[string]string `json:"Names"`
}

func (s *settings) check() error {
	if s.Level < 0 || s.Level > 4 {
		return errors.New("Level is 0 to 4")
	}
	return nil
}

func TestVarUpdate(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	def := settings{Level: 2, Names: map[string]string{}}
	v, err := OpenVar(s, "settings.json", def, (*settings).check)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Get(); !reflect.DeepEqual(got, def) {
		t.Fatalf("missing file: Get = %+v, want the default %+v", got, def)
	}
	if err := v.Update(func(s *settings) error { s.Level = 3; s.Names["a"] = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(def.Names) != 0 {
		t.Error("Update changed the default's map")
	}
	want := settings{Level: 3, Names: map[string]string{"a": "x"}}
	before, _ := os.ReadFile(v.Path())
	refuse := errors.New("refused")
	for name, change := range map[string]func(*settings) error{
		"change refuses": func(s *settings) error { s.Names["b"] = "y"; return refuse },
		"check refuses":  func(s *settings) error { s.Names["b"] = "y"; s.Level = 9; return nil },
	} {
		err := v.Update(change)
		if err == nil || errors.Is(err, ErrNotStored) {
			t.Errorf("%s: Update returned %v, want the value refused", name, err)
		}
		if got := v.Get(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: value became %+v, want %+v", name, got, want)
		}
		if after, _ := os.ReadFile(v.Path()); string(after) != string(before) {
			t.Errorf("%s: the file changed", name)
		}
	}
	if err := v.Update(func(*settings) error { return refuse }); !errors.Is(err, refuse) {
		t.Errorf("change's error came back as %v", err)
	}

	// A write that fails (a directory stands where the temporary file
	// is renamed to) changes nothing either.
	s.Close()
	os.Remove(v.Path())
	s, _ = Open(dir)
	defer s.Close()
	v, err = OpenVar(s, "settings.json", def, (*settings).check)
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(v.Path(), 0o700)
	if err := v.Update(func(s *settings) error { s.Level = 1; return nil }); !errors.Is(err, ErrNotStored) {
		t.Errorf("Update over a directory returned %v, want %v", err, ErrNotStored)
	}
	if got := v.Get(); got.Level != 2 {
		t.Errorf("after a failed write the value is %+v", got)
	}
	os.Remove(v.Path())

	if err := v.Update(func(s *settings) error { s.Level = 4; return nil }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, _ = Open(dir)
	defer s.Close()
	v, err = OpenVar(s, "settings.json", def, (*settings).check)
	if err != nil || v.Get().Level != 4 {
		t.Fatalf("reopened: %+v, %v", v.Get(), err)
	}
}

func TestVarRefusesWhatClientsCannotWrite(t *testing.T) {
	for _, tt := range []struct{ name, json, reason string }{
		{"out of range", `{"Level": 7, "Names": {}}`, "Level is 0 to 4"},
		{"malformed", `{"Level": 1,`, "do not decode"},
		{"wrong type", `{"Level": "1"}`, "do not decode"},
		{"unknown field", `{"Level": 1, "Extra": true}`, "unknown field"},
		{"two values", `{"Level": 1} {}`, "more after"},
		{"null", ` null `, "null"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := Open(t.TempDir())
			defer s.Close()
			s.Write("settings.json", []byte(tt.json))
			_, err := OpenVar(s, "settings.json", settings{}, (*settings).check)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != s.Path("settings.json") || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("OpenVar = %v, want a CorruptError naming the file and %q", err, tt.reason)
			}
		})
	}
}

func TestVarInMemory(t *testing.T) {
	v, err := OpenVar(nil, "x.json", settings{Level: 1}, (*settings).check)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Update(func(s *settings) error { s.Level = 9; return nil }); err == nil || v.Get().Level != 1 {
		t.Errorf("check ignored in memory: %v %+v", err, v.Get())
	}
	if err := v.Update(func(s *settings) error { s.Level = 3; return nil }); err != nil || v.Get().Level != 3 || v.Path() != "" {
		t.Errorf("in memory: %v %+v %q", err, v.Get(), v.Path())
	}
}
