package api_test

import (
	"testing"

	"senseboard/api"
)

// The set hash does not depend on the order of the files, and changes
// with a name or a text.
func TestSetHash(t *testing.T) {
	a := api.SetHash(map[string][]byte{"a.yaml": []byte("x"), "b.yaml": []byte("y")})
	for _, other := range []map[string][]byte{
		{"a.yaml": []byte("x"), "b.yaml": []byte("z")},
		{"a.yaml": []byte("x"), "c.yaml": []byte("y")},
		{"a.yaml": []byte("x")},
	} {
		if api.SetHash(other) == a {
			t.Errorf("%q has the hash of another set", other)
		}
	}
	if b := api.SetHash(map[string][]byte{"b.yaml": []byte("y"), "a.yaml": []byte("x")}); b != a {
		t.Errorf("the same set hashes to %s and %s", a, b)
	}
}
