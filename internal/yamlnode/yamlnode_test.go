package yamlnode

import (
	"errors"
	"strings"
	"testing"
)

func TestOne(t *testing.T) {
	for _, c := range []struct {
		in       string
		err      error
		describe string
	}{
		{in: `{"fault": "stall"}`, describe: "a mapping"},
		{in: "- 1\n- 2\n", describe: "a list"},
		{in: "word", describe: `"word"`},
		{in: "~", describe: "no value"},
		{in: "", err: ErrEmpty},
		{in: "a: 1\n---\nb: 2\n", err: ErrMoreThanOne},
	} {
		n, err := One([]byte(c.in), "a mapping such as {a: 1}")
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("One(%q): %v, want %v", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("One(%q): %v", c.in, err)
			continue
		}
		if got := Describe(n); got != c.describe {
			t.Errorf("Describe(%q) = %s, want %s", c.in, got, c.describe)
		}
	}
	if _, err := One(nil, "a mapping such as {a: 1}"); err == nil || !strings.Contains(err.Error(), "want a mapping such as {a: 1}") {
		t.Errorf("an empty document's error does not say what is wanted: %v", err)
	}
}

func TestScalar(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"5s", "5s"},
		{`"quoted"`, "quoted"},
		{"~", "(no value)"},
		{"[1]", "(a list)"},
		{"{a: 1}", "(a mapping)"},
	} {
		n, err := One([]byte(c.in), "a value")
		if err != nil {
			t.Fatalf("One(%q): %v", c.in, err)
		}
		if got := Scalar(n); got != c.want {
			t.Errorf("Scalar(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzOne feeds any bytes: One returns a node or an error, never panics,
// and a node always has a description.
func FuzzOne(f *testing.F) {
	for _, s := range []string{`{"fault": "stall"}`, "- at: 1s\n  fault: drop\n", "", "a: 1\n---\nb: 2", "&a [*a]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := One(data, "anything")
		if err != nil {
			return
		}
		if Describe(n) == "" || Scalar(n) == "" && n.Value != "" {
			t.Errorf("%q: no description", data)
		}
	})
}
