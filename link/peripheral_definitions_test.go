package link_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"senseboard/api"
	"senseboard/app"
	"senseboard/client"
	"senseboard/examples/stepcounter"
	"senseboard/link"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/wire"
)

// A central learns the device's own definitions over the radio link: the
// built-in files by name (with the hash of the whole built-in set), and
// the file an app added, with its text.
func TestRadioDefinitions(t *testing.T) {
	t.Parallel()
	p := profile.Default()
	p.Modules.HRS = false // a disabled module's file is not among the device's
	d, dev := onAir(t, p)
	rt, err := app.Run(d.Core, stepcounter.New())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	ctx := context.Background()
	phone := openRadio(t, dev)

	if _, err := phone.Definitions(ctx); err == nil || !strings.Contains(err.Error(), "not connected; scan and connect first") {
		t.Errorf("definitions before connecting: %v", err)
	}
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	idx, err := phone.Definitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if idx.Builtin.Set != api.EmbeddedHash() {
		t.Errorf("built-in set %s, want the embedded set's %s", idx.Builtin.Set, api.EmbeddedHash())
	}
	for _, name := range []string{"info.yaml", "meas_acc.yaml", "comm_ble.yaml"} {
		if !slices.Contains(idx.Builtin.Files, name) {
			t.Errorf("built-in files %v lack %s", idx.Builtin.Files, name)
		}
	}
	if slices.Contains(idx.Builtin.Files, "comm_ble_hrs.yaml") {
		t.Errorf("built-in files %v list the disabled HRS module's file", idx.Builtin.Files)
	}
	want := link.DefinitionRef{Name: "app-stepcounter.yaml", SHA256: api.FileHash(stepcounter.Definition())}
	if len(idx.Apps) != 1 || idx.Apps[0] != want {
		t.Fatalf("app files %+v, want %+v", idx.Apps, want)
	}

	f, err := phone.DefinitionFile(ctx, "app-stepcounter.yaml")
	if err != nil || f.YAML != string(stepcounter.Definition()) || f.SHA256 != want.SHA256 {
		t.Fatalf("app file: %+v, %v", f, err)
	}
	parsed, err := api.Parse(f.Name, []byte(f.YAML))
	if err != nil || !slices.ContainsFunc(parsed.Resources, func(r *api.Resource) bool { return r.Path == "/Sample/StepCounter/Steps" }) {
		t.Fatalf("the app's file does not parse as its definition: %v", err)
	}
	if f, err := phone.DefinitionFile(ctx, "meas_acc.yaml"); err != nil || !strings.Contains(f.YAML, "/Meas/Acc/{SampleRate}") {
		t.Errorf("a built-in file: %.80q, %v", f.YAML, err)
	}

	var re *client.RemoteError
	for _, tt := range []struct {
		file, want string
	}{
		{"nothing.yaml", "definitions: the device has no file nothing.yaml; it has comm_ble.yaml, component_eeprom.yaml"},
		{"../info.yaml", `definitions message: file "../info.yaml" is not a definition file's name`},
	} {
		_, err := phone.DefinitionFile(ctx, tt.file)
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("file %q: %v, want a device error containing %q", tt.file, err, tt.want)
		}
	}
	// the stream keeps serving
	if env, err := phone.Do(ctx, resource.Get, "/Sample/StepCounter/Steps"); err != nil || !env.OK() {
		t.Errorf("GET the app's resource after the definitions: %+v, %v", env, err)
	}
}

// With a pass key, the definitions wait for an encrypted link, as requests do.
func TestRadioDefinitionsNeedPairing(t *testing.T) {
	d, dev := onAir(t, nil)
	if env, err := d.Do(&resource.Request{Op: resource.Put, Path: "/Comm/Ble/Security/Pin", Params: []resource.Value{resource.String("123456")}}); err != nil || !env.Status.OK() {
		t.Fatalf("set pass key: %+v %v", env, err)
	}
	ctx := context.Background()
	phone := openRadio(t, dev)
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := phone.Definitions(ctx); err == nil || !strings.Contains(err.Error(), "pair with its pass key first") {
		t.Errorf("definitions before pairing: %v", err)
	}
	if _, err := phone.Pair(ctx, "123456", false); err != nil {
		t.Fatal(err)
	}
	if idx, err := phone.Definitions(ctx); err != nil || len(idx.Builtin.Files) == 0 || len(idx.Apps) != 0 {
		t.Errorf("definitions after pairing: %+v, %v", idx, err)
	}
}

// TestRadioDefinitionFileAtTheFrameLimit: a definition file is sent in one
// frame, whose payload (the file's JSON message) may be wire.MaxPayload
// bytes long and no longer; a longer one fails with its size.
func TestRadioDefinitionFileAtTheFrameLimit(t *testing.T) {
	t.Parallel()
	d, dev := onAir(t, nil)
	ctx := context.Background()
	phone := openRadio(t, dev)
	if _, err := phone.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	// yaml returns a file's text whose message takes n bytes.
	yaml := func(name string, n int) []byte {
		msg, err := json.Marshal(link.DefinitionsMsg{File: &link.DefinitionFile{Name: name, SHA256: api.FileHash(nil)}})
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte("#"), strings.Repeat("a", n-len(msg)-1)...)
	}
	for _, tt := range []struct {
		name string
		size int // of the file's message
		err  string
	}{
		{"app-limit.yaml", wire.MaxPayload, ""},
		{"app-over.yaml", wire.MaxPayload + 1, fmt.Sprintf("definitions: file app-over.yaml takes %d bytes in a frame; a frame carries at most %d", wire.MaxPayload+1, wire.MaxPayload)},
	} {
		raw := yaml(tt.name, tt.size)
		if err := d.AddDefinitions(&api.File{Name: tt.name, Raw: raw}); err != nil {
			t.Fatal(err)
		}
		f, err := phone.DefinitionFile(ctx, tt.name)
		if tt.err == "" {
			if err != nil || f.YAML != string(raw) {
				t.Errorf("%s: %d bytes of YAML, %v; want the %d bytes", tt.name, len(f.YAML), err, len(raw))
			}
			continue
		}
		var re *client.RemoteError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want a device error containing %q", tt.name, err, tt.err)
		}
	}
	// the stream keeps serving
	if env, err := phone.Do(ctx, resource.Get, "/Info"); err != nil || !env.OK() {
		t.Errorf("GET /Info after the files: %+v, %v", env, err)
	}
}
