package link

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"unicode/utf8"

	"senseboard/api"
)

// The definitions frames of the radio link let a central learn a device's
// own interface definitions, those of the resources its apps add included.
// A Definitions request without a file asks for the index: the built-in
// files the device serves, named and identified as a set by the hash of
// every built-in file of its firmware (a central with the same firmware's
// files need not fetch them), and the files its apps added, each with its
// hash. A Definitions request with a file asks for that file's text.
// Each answer fits one frame.

// DefinitionsRequestMsg asks for the index (File empty) or for one file.
type DefinitionsRequestMsg struct {
	File string `json:"file,omitempty"`
}

// DefinitionsMsg answers a Definitions request: the index, or one file.
type DefinitionsMsg struct {
	// Builtin and Apps make the index.
	Builtin *BuiltinDefinitions `json:"builtin,omitempty"`
	Apps    []DefinitionRef     `json:"apps,omitempty"`
	// File is the file asked for.
	File *DefinitionFile `json:"file,omitempty"`
}

// BuiltinDefinitions are the device's built-in definition files: the hash
// of its firmware's whole set (see api.SetHash) and the names of the
// files it serves (those of modules its profile disables are left out).
type BuiltinDefinitions struct {
	Set   string   `json:"set"`
	Files []string `json:"files"`
}

// DefinitionRef names a file an app added and gives its hash.
type DefinitionRef struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// DefinitionFile is one definition file as written: Swagger 2.0 YAML.
type DefinitionFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	YAML   string `json:"yaml"`
}

// MaxDefinitionFiles bounds the files of an index, built-in and app
// files each.
const MaxDefinitionFiles = 128

// ErrDefinitions is wrapped by the errors of ParseDefinitions and
// ParseDefinitionsRequest.
var ErrDefinitions = errors.New("definitions message")

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseDefinitionsRequest reads the payload of a Definitions request; an
// empty payload asks for the index.
func ParseDefinitionsRequest(payload []byte) (DefinitionsRequestMsg, error) {
	var m DefinitionsRequestMsg
	if len(bytes.TrimSpace(payload)) == 0 {
		return m, nil
	}
	if err := strictJSON(payload, &m); err != nil {
		return m, fmt.Errorf("%w: %v; want {} for the index or {\"file\": \"<name>.yaml\"}", ErrDefinitions, err)
	}
	if m.File != "" && !api.ValidFileName(m.File) {
		return m, fmt.Errorf("%w: file %q is not a definition file's name (lower-case letters, digits, _ . -, ending in .yaml, at most %d bytes)",
			ErrDefinitions, clip([]byte(m.File)), api.MaxFileName)
	}
	return m, nil
}

// ParseDefinitions reads and checks the payload of a Definitions answer:
// either an index or a file, with valid names, at most MaxDefinitionFiles
// of each kind, no name twice, well-formed hashes, and a file's text that
// is UTF-8 and matches its hash.
func ParseDefinitions(payload []byte) (DefinitionsMsg, error) {
	var m DefinitionsMsg
	if err := strictJSON(payload, &m); err != nil {
		return DefinitionsMsg{}, fmt.Errorf("%w: %v", ErrDefinitions, err)
	}
	if err := m.check(); err != nil {
		return DefinitionsMsg{}, fmt.Errorf("%w: %v", ErrDefinitions, err)
	}
	if m.Builtin != nil { // an index's lists are never nil
		if m.Builtin.Files == nil {
			m.Builtin.Files = []string{}
		}
		if m.Apps == nil {
			m.Apps = []DefinitionRef{}
		}
	}
	return m, nil
}

func (m *DefinitionsMsg) check() error {
	index := m.Builtin != nil || m.Apps != nil
	switch {
	case index && m.File != nil:
		return errors.New("both an index and a file; an answer is one of them")
	case !index && m.File == nil:
		return errors.New("neither an index (builtin, apps) nor a file")
	case m.File != nil:
		f := m.File
		if !api.ValidFileName(f.Name) {
			return fmt.Errorf("file name %q is not a definition file's name", clip([]byte(f.Name)))
		}
		if !hexHash.MatchString(f.SHA256) {
			return fmt.Errorf("file %s: sha256 %q is not 64 lower-case hex digits", f.Name, clip([]byte(f.SHA256)))
		}
		if !utf8.ValidString(f.YAML) {
			return fmt.Errorf("file %s: the text is not UTF-8", f.Name)
		}
		if api.FileHash([]byte(f.YAML)) != f.SHA256 {
			return fmt.Errorf("file %s: the text does not match its sha256", f.Name)
		}
		return nil
	}
	if m.Builtin == nil {
		return errors.New("an index without builtin")
	}
	if !hexHash.MatchString(m.Builtin.Set) {
		return fmt.Errorf("builtin set %q is not 64 lower-case hex digits", clip([]byte(m.Builtin.Set)))
	}
	if len(m.Builtin.Files) > MaxDefinitionFiles || len(m.Apps) > MaxDefinitionFiles {
		return fmt.Errorf("%d built-in and %d app files; at most %d of each", len(m.Builtin.Files), len(m.Apps), MaxDefinitionFiles)
	}
	seen := map[string]bool{}
	name := func(n string) error {
		if !api.ValidFileName(n) {
			return fmt.Errorf("file name %q is not a definition file's name", clip([]byte(n)))
		}
		if seen[n] {
			return fmt.Errorf("file %s is listed twice", n)
		}
		seen[n] = true
		return nil
	}
	for _, n := range m.Builtin.Files {
		if err := name(n); err != nil {
			return err
		}
	}
	for _, a := range m.Apps {
		if err := name(a.Name); err != nil {
			return err
		}
		if !hexHash.MatchString(a.SHA256) {
			return fmt.Errorf("file %s: sha256 %q is not 64 lower-case hex digits", a.Name, clip([]byte(a.SHA256)))
		}
	}
	return nil
}

// strictJSON decodes one JSON object into v, refusing unknown fields and
// anything after it.
func strictJSON(payload []byte, v any) error {
	if !utf8.Valid(payload) {
		return errors.New("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more after the JSON object")
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
