package api_test

import (
	"encoding/json"
	"testing"

	"senseboard/api"
)

// The outline lists every resource of a set once, with its operations and
// their parameters, path parameters first, and marks the apps' files.
func TestOutline(t *testing.T) {
	set, err := api.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	b, err := set.Outline(map[string]bool{"info.yaml": true})
	if err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Path string `json:"path"`
		File string `json:"file"`
		App  bool   `json:"app"`
		Ops  []struct {
			Op     string `json:"op"`
			Params []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"params"`
		} `json:"ops"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(set.Resources()) {
		t.Fatalf("%d resources outlined, the set has %d", len(out), len(set.Resources()))
	}
	seen := map[string]bool{}
	for _, r := range out {
		if seen[r.Path] {
			t.Errorf("%s outlined twice", r.Path)
		}
		seen[r.Path] = true
		if r.App != (r.File == "info.yaml") {
			t.Errorf("%s of %s: app %v", r.Path, r.File, r.App)
		}
		for _, o := range r.Ops {
			body := false
			for _, p := range o.Params {
				if p.In == "path" && body {
					t.Errorf("%s %s: path parameter %s after the body", o.Op, r.Path, p.Name)
				}
				body = body || p.In != "path"
			}
		}
	}
	if !seen["/Info"] || !seen["/Meas/Acc/{SampleRate}"] {
		t.Error("the outline lacks /Info or /Meas/Acc/{SampleRate}")
	}
	if again, err := api.EmbeddedOutline(); err != nil || string(again) != string(must(set.Outline(nil))) {
		t.Errorf("the embedded outline differs from the embedded set's: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
