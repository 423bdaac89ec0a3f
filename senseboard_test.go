package senseboard_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/api"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/replay"
	"senseboard/resource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// allModules is a profile with every optional module on.
func allModules(t testing.TB) *profile.Profile {
	p := profile.Default()
	p.Modules = profile.Modules{HRS: true, NUS: true, Heap: true, GSP: true, Logbook: true}
	p.Debug.Log.Enabled = true
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func newDevice(t testing.TB, p *profile.Profile) (*senseboard.Device, *clock.Virtual) {
	t.Helper()
	c := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Profile: p, Clock: c, Seed: 1, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, c
}

// specEndpoints reads the specification's endpoint table: the transcription
// in api/testdata, checked against ../shared/spec when it is there (the api
// package's tests do that check).
func specEndpoints(t *testing.T) []api.Endpoint {
	data, err := os.ReadFile("api/testdata/endpoints.txt")
	if err != nil {
		t.Fatal(err)
	}
	list, err := api.ReadEndpointList(data)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join("..", "shared", "spec", "device-interface.md"))
	if errors.Is(err, fs.ErrNotExist) {
		return list
	}
	if err != nil {
		t.Fatal(err)
	}
	if list, err = api.ParseEndpointTable(md); err != nil {
		t.Fatal(err)
	}
	return list
}

// TestEveryEndpointHasAHandler checks that every operation of the
// specification's endpoint table reaches a registered handler on a device
// with every module, and that the device answers nothing else.
func TestEveryEndpointHasAHandler(t *testing.T) {
	d, _ := newDevice(t, allModules(t))
	handled := map[string]bool{}
	for _, r := range d.Routes() {
		if r.SubscriptionOf() != nil {
			continue
		}
		for _, op := range r.Ops() {
			if op != resource.Unsubscribe {
				handled[strings.ToUpper(op.String())+" "+r.Pattern()] = true
			}
		}
	}
	want := map[string]bool{}
	// The family's resources beyond the specification's table.
	data, err := os.ReadFile("api/testdata/family.txt")
	if err != nil {
		t.Fatal(err)
	}
	family, err := api.ReadEndpointList(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range append(specEndpoints(t), family...) {
		want[e.String()] = true
		if !handled[e.String()] {
			t.Errorf("%s is in the specification but has no handler", e)
		}
	}
	var extra []string
	for k := range handled {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		t.Errorf("%s has a handler but is not in the specification", k)
	}
	if len(handled) < 80 {
		t.Errorf("only %d operations handled", len(handled))
	}
}

// Every GET answer of a fresh device matches its definition's schema.
func TestGetResponsesMatchDefinitions(t *testing.T) {
	d, _ := newDevice(t, allModules(t))
	for _, r := range d.Routes() {
		res := deviceResource(r)
		if res == nil || !r.Serves(resource.Get) || len(r.Params()) > 0 || r.Subtree() {
			continue
		}
		op := res.Ops[resource.Get]
		if len(op.Params) > 0 && op.Params[0].Required {
			continue
		}
		env, err := d.Call(resource.Get, r.Pattern())
		if err != nil {
			t.Fatal(err)
		}
		if env.Status == resource.StatusNoContent {
			continue
		}
		if !env.Status.OK() {
			t.Errorf("GET %s: %d %s", r.Pattern(), env.Status, env.Error)
			continue
		}
		if op.Response == nil {
			t.Errorf("GET %s has no response schema", r.Pattern())
			continue
		}
		if err := api.CheckContent(op.Response, env.Content); err != nil {
			t.Errorf("GET %s: content does not match its definition: %v", r.Pattern(), err)
		}
	}
}

func deviceResource(r *resource.Route) *api.Resource { return device.Resource(r) }

func BenchmarkGetInfo(b *testing.B) {
	d, _ := newDevice(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		req := resource.Request{Op: resource.Get, Path: "/Info"}
		env, err := d.Do(&req)
		if err != nil || env.Status != resource.StatusOK {
			b.Fatal(err)
		}
	}
}

// New refuses a number of leads for a replay's heart rate other than 0, 1
// or 2, and two for a recording of one lead or one whose second lead was
// let go, and leaves its state directory free.
func TestNewRefusesReplayHRLeads(t *testing.T) {
	r, err := replay.WFDB("r", []byte("r 2 360\nr.dat 16 100\nr.dat 16 100\n"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, leads := range []int{-1, 3} {
		_, err := senseboard.New(senseboard.Config{StateDir: dir, Clock: clock.NewVirtual(), Replay: []*replay.Recording{r}, ReplayHRLeads: leads})
		if !errors.Is(err, replay.ErrHRLeads) {
			t.Errorf("ReplayHRLeads %d: %v; want ErrHRLeads", leads, err)
		}
	}
	// two leads of a recording of one: nothing to detect on
	one, err := replay.WFDB("one", []byte("one 1 360\none.dat 16 100\n"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := senseboard.New(senseboard.Config{StateDir: dir, Clock: clock.NewVirtual(), Replay: []*replay.Recording{one}, ReplayHRLeads: 2}); !errors.Is(err, replay.ErrHRLeads) || !errors.Is(err, replay.ErrNoSecondLead) {
		t.Errorf("ReplayHRLeads 2 on a recording of one lead: %v; want ErrHRLeads and ErrNoSecondLead", err)
	}
	dropped, err := replay.WFDB("r", []byte("r 2 360\nr.dat 16 100\nr.dat 16 100\n"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dropped.DropSecondLead()
	if _, err := senseboard.New(senseboard.Config{StateDir: dir, Clock: clock.NewVirtual(), Replay: []*replay.Recording{dropped}, ReplayHRLeads: 2}); !errors.Is(err, replay.ErrSecondLeadDropped) || !errors.Is(err, replay.ErrHRLeads) {
		t.Errorf("ReplayHRLeads 2 on a recording whose second lead was let go: %v; want ErrHRLeads and ErrSecondLeadDropped", err)
	}
	for _, leads := range []int{0, 1, 2} {
		d, err := senseboard.New(senseboard.Config{StateDir: dir, Clock: clock.NewVirtual(), Replay: []*replay.Recording{r}, ReplayHRLeads: leads})
		if err != nil {
			t.Fatalf("ReplayHRLeads %d: %v", leads, err)
		}
		d.Close()
	}
}
