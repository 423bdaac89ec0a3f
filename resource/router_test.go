package resource

import (
	"fmt"
	"strings"
	"testing"
)

func newTestRouter(t testing.TB) *Router {
	t.Helper()
	rt := NewRouter("/net/000123")
	h := HandlerFunc(func(*Request) Response { return OK(nil) })
	for _, r := range []struct {
		pattern string
		op      Op
	}{
		{"/Info", Get},
		{"/Info/App", Get},
		{"/Time", Get},
		{"/Time", Put},
		{"/Time", Subscribe},
		{"/Meas/Acc/Info", Get},
		{"/Meas/Acc/{SampleRate}", Subscribe},
		{"/Meas/ECG/{RequiredSampleRate}", Subscribe},
		{"/Meas/ECG/{RequiredSampleRate}/mV", Subscribe},
		{"/Meas/ECG/Info", Get},
		{"/Comm/Ble/Peers", Get},
		{"/Comm/Ble/Peers", Subscribe},
		{"/Comm/Ble/Peers/{ConnHandle}", Delete},
		{"/Comm/Ble/Peers/{ConnHandle}/Params", Get},
		{"/System/Debug/{Level}", Subscribe},
		{"/System/Debug/Config", Get},
	} {
		if _, err := rt.Handle(r.pattern, r.op, h); err != nil {
			t.Fatalf("Handle(%s, %s): %v", r.pattern, r.op, err)
		}
	}
	if _, err := rt.HandleSubtree("/Misc/Manufacturing", Get, h); err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestResolve(t *testing.T) {
	rt := newTestRouter(t)
	tests := []struct {
		op      Op
		path    string
		pattern string
		wantOp  Op
		raw     []string
		uri     string
		child   bool
	}{
		{Get, "/Info", "/Info", Get, nil, "/net/000123/Info", false},
		{Get, "info", "/Info", Get, nil, "/net/000123/Info", false},
		{Get, "/INFO/app", "/Info/App", Get, nil, "/net/000123/Info/App", false},
		{Subscribe, "/time", "/Time", Subscribe, nil, "/net/000123/Time", false},
		{Post, "/Time/Subscription", "/Time", Subscribe, nil, "/net/000123/Time", true},
		{Delete, "time/subscription", "/Time", Unsubscribe, nil, "/net/000123/Time", true},
		{Subscribe, "/meas/acc/104", "/Meas/Acc/{SampleRate}", Subscribe, []string{"104"}, "/net/000123/Meas/Acc/104", false},
		{Get, "/Meas/Acc/Info", "/Meas/Acc/Info", Get, nil, "/net/000123/Meas/Acc/Info", false},
		{Post, "/Meas/Acc/52/Subscription", "/Meas/Acc/{SampleRate}", Subscribe, []string{"52"}, "/net/000123/Meas/Acc/52", true},
		{Subscribe, "/Meas/ECG/256/MV", "/Meas/ECG/{RequiredSampleRate}/mV", Subscribe, []string{"256"}, "/net/000123/Meas/ECG/256/mV", false},
		{Get, "/Meas/ECG/info", "/Meas/ECG/Info", Get, nil, "/net/000123/Meas/ECG/Info", false},
		// backtracking: the literal Info does not lead to /mV, the parameter does
		{Subscribe, "/Meas/ECG/Info/mV", "/Meas/ECG/{RequiredSampleRate}/mV", Subscribe, []string{"Info"}, "/net/000123/Meas/ECG/Info/mV", false},
		// literal Subscription wins over the {ConnHandle} parameter
		{Post, "/Comm/Ble/Peers/Subscription", "/Comm/Ble/Peers", Subscribe, nil, "/net/000123/Comm/Ble/Peers", true},
		{Delete, "/Comm/Ble/Peers/7", "/Comm/Ble/Peers/{ConnHandle}", Delete, []string{"7"}, "/net/000123/Comm/Ble/Peers/7", false},
		{Get, "/Comm/Ble/Peers/7/params", "/Comm/Ble/Peers/{ConnHandle}/Params", Get, []string{"7"}, "/net/000123/Comm/Ble/Peers/7/Params", false},
		{Subscribe, "/System/Debug/WARNING", "/System/Debug/{Level}", Subscribe, []string{"WARNING"}, "/net/000123/System/Debug/WARNING", false},
		{Get, "/Misc/Manufacturing", "/Misc/Manufacturing", Get, nil, "/net/000123/Misc/Manufacturing", false},
		{Get, "/misc/manufacturing/a/b", "/Misc/Manufacturing", Get, nil, "/net/000123/Misc/Manufacturing/a/b", false},
		{Subscribe, "/Meas/Acc/{SampleRate}", "/Meas/Acc/{SampleRate}", Subscribe, []string{"{SampleRate}"}, "", false},
	}
	for _, tt := range tests {
		m, err := rt.Resolve(tt.op, tt.path)
		if err != nil {
			t.Errorf("Resolve(%s, %q): %v", tt.op, tt.path, err)
			continue
		}
		if got := m.Route.Pattern(); got != tt.pattern {
			t.Errorf("Resolve(%s, %q) pattern = %s, want %s", tt.op, tt.path, got, tt.pattern)
		}
		if m.Op != tt.wantOp {
			t.Errorf("Resolve(%s, %q) op = %s, want %s", tt.op, tt.path, m.Op, tt.wantOp)
		}
		if m.Child() != tt.child {
			t.Errorf("Resolve(%s, %q) child = %v, want %v", tt.op, tt.path, m.Child(), tt.child)
		}
		for i, want := range tt.raw {
			if got := m.Raw(i); got != want {
				t.Errorf("Resolve(%s, %q) raw[%d] = %q, want %q", tt.op, tt.path, i, got, want)
			}
		}
		if tt.uri != "" {
			if got := m.URI("/net/000123", nil); got != tt.uri {
				t.Errorf("Resolve(%s, %q) URI = %s, want %s", tt.op, tt.path, got, tt.uri)
			}
		}
	}
}

func TestResolveErrors(t *testing.T) {
	rt := newTestRouter(t)
	tests := []struct {
		op     Op
		path   string
		status Status
		msg    string
	}{
		{Get, "", StatusBadRequest, "empty path"},
		{Get, "/", StatusBadRequest, "empty path"},
		{Get, "/Nope", StatusNotFound, "no resource at /Nope"},
		{Get, "/Info/Nope", StatusNotFound, "no resource"},
		{Get, "/Meas", StatusNotFound, "no resource"},
		{Get, "/Info//App", StatusBadRequest, "empty segment"},
		{Get, "/Info/", StatusBadRequest, "empty segment"},
		{Get, "/Info/../Time", StatusBadRequest, `".." segment`},
		{Get, "/./Info", StatusBadRequest, `"." segment`},
		{Get, "/In fo", StatusBadRequest, "not allowed"},
		{Get, "/Info\x00", StatusBadRequest, "not allowed"},
		{Get, "/Info\xff", StatusBadRequest, "UTF-8"},
		{Get, "/{bad-name}", StatusBadRequest, "placeholder"},
		{Get, "/" + strings.Repeat("a", MaxPathLen), StatusBadRequest, "at most"},
		{Put, "/Info", StatusMethodNotAllowed, "allowed: GET"},
		{Delete, "/Time", StatusMethodNotAllowed, "allowed: GET, PUT, SUBSCRIBE"},
		{Subscribe, "/Info", StatusMethodNotAllowed, "allowed: GET"},
		{Get, "/Time/Subscription", StatusMethodNotAllowed, "POST (subscribe), DELETE (unsubscribe)"},
		{Unsubscribe, "/Info", StatusMethodNotAllowed, "cannot be subscribed"},
		{Post, "/Info/Subscription", StatusNotFound, "no resource"},
	}
	for _, tt := range tests {
		_, err := rt.Resolve(tt.op, tt.path)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("Resolve(%s, %q) = %v, want *Error", tt.op, tt.path, err)
			continue
		}
		if e.Status != tt.status || !strings.Contains(e.Msg, tt.msg) {
			t.Errorf("Resolve(%s, %q) = %d %q, want %d containing %q", tt.op, tt.path, e.Status, e.Msg, tt.status, tt.msg)
		}
	}
}

func TestHandleConflicts(t *testing.T) {
	h := HandlerFunc(func(*Request) Response { return OK(nil) })
	tests := []struct {
		name     string
		first    string
		firstOp  Op
		second   string
		secondOp Op
		msg      string
	}{
		{"same op twice", "/Info", Get, "/Info", Get, "already registered"},
		{"other casing", "/Info", Get, "/info", Put, "different spelling"},
		{"other parameter name", "/A/{X}", Get, "/A/{Y}", Put, "different spelling"},
		{"subscription child with own ops", "/A/Subscription", Get, "/A", Subscribe, "own operations"},
		{"register on a subscription child", "/A", Subscribe, "/A/Subscription", Post, "served by Subscribe"},
		{"bad pattern", "/A", Get, "A", Get, "starts with /"},
		{"empty segment", "/A", Get, "/A//B", Get, "empty segment"},
		{"duplicate parameter", "/A", Get, "/A/{X}/{X}", Get, "appears twice"},
		{"brace inside literal", "/A", Get, "/A/b{X}", Get, "whole parameter"},
	}
	for _, tt := range tests {
		rt := NewRouter("")
		if _, err := rt.Handle(tt.first, tt.firstOp, h); err != nil {
			t.Fatalf("%s: first registration: %v", tt.name, err)
		}
		_, err := rt.Handle(tt.second, tt.secondOp, h)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: second registration error = %v, want containing %q", tt.name, err, tt.msg)
		}
	}
}

// TestAmbiguousPatterns: two patterns that some path matches while neither
// is more specific are refused, in either order, with both names and such a
// path; a more specific pattern and a less specific one coexist, and the
// more specific one serves the paths both match.
func TestAmbiguousPatterns(t *testing.T) {
	h := HandlerFunc(func(*Request) Response { return OK(nil) })
	tests := []struct {
		a, b       string
		aSub, bSub bool   // registered as subtree routes
		both       string // a path both match when they conflict
		path, want string // otherwise: a path and the pattern that serves it
	}{
		{a: "/{A}/x", b: "/y/{B}", both: "/y/x"},
		{a: "/{A}/x/{C}", b: "/y/{B}/z", both: "/y/x/z"},
		{a: "/Meas/{A}/Config", b: "/Meas/Acc/{B}", both: "/Meas/Acc/Config"},
		{a: "/a", aSub: true, b: "/{X}/b", both: "/a/b"},
		{a: "/a/b", aSub: true, b: "/{X}/b", both: "/a/b"},
		{a: "/{X}", aSub: true, b: "/a", bSub: true, path: "/a/c", want: "/a"},
		{a: "/a/{X}", b: "/a/b", path: "/a/b", want: "/a/b"},
		{a: "/a/{X}/{Y}", b: "/a/b/{Y}", path: "/a/b/c", want: "/a/b/{Y}"},
		{a: "/a", aSub: true, b: "/a/{X}", path: "/a/b", want: "/a/{X}"},
		{a: "/a", aSub: true, b: "/a/b/c", path: "/a/b/c", want: "/a/b/c"},
		{a: "/a", aSub: true, b: "/{X}", both: "/a"},
		{a: "/{A}/x", b: "/y/z", path: "/y/x", want: "/{A}/x"},
		{a: "/{A}/x", b: "/y/{B}/z", path: "/y/x", want: "/{A}/x"},
		{a: "/a/{X}", b: "/a", path: "/a", want: "/a"},
	}
	register := func(rt *Router, p string, sub bool) error {
		if sub {
			_, err := rt.HandleSubtree(p, Get, h)
			return err
		}
		_, err := rt.Handle(p, Get, h)
		return err
	}
	for _, tt := range tests {
		for _, swap := range []bool{false, true} {
			first, second, fSub, sSub := tt.a, tt.b, tt.aSub, tt.bSub
			if swap {
				first, second, fSub, sSub = second, first, sSub, fSub
			}
			rt := NewRouter("")
			if err := register(rt, first, fSub); err != nil {
				t.Fatalf("%s: %v", first, err)
			}
			err := register(rt, second, sSub)
			if tt.both != "" {
				want := fmt.Sprintf("register %s: conflicts with %s: both match %s", second, first, tt.both)
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("%s after %s: %v, want %q", second, first, err, want)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s after %s: %v", second, first, err)
				continue
			}
			if m, err := rt.Resolve(Get, tt.path); err != nil || m.Route.Pattern() != tt.want {
				t.Errorf("%s and %s: %s went to %v (%v), want %s", first, second, tt.path, m.Route, err, tt.want)
			}
		}
	}
}

func TestDifferentShapesCoexist(t *testing.T) {
	rt := NewRouter("")
	h := HandlerFunc(func(*Request) Response { return OK(nil) })
	for _, p := range []string{"/A/{X}", "/A/{Y}/B", "/A/C"} {
		if _, err := rt.Handle(p, Get, h); err != nil {
			t.Fatalf("Handle(%s): %v", p, err)
		}
	}
	m, err := rt.Resolve(Get, "/A/1/B")
	if err != nil || m.Route.Pattern() != "/A/{Y}/B" {
		t.Fatalf("Resolve(/A/1/B) = %v, %v", m.Route, err)
	}
}

// Routers share the parsed form of a pattern; what a caller does with a
// route's parameter names reaches no other router, nor the route itself.
func TestParamsAreTheCallers(t *testing.T) {
	a, b := newTestRouter(t), newTestRouter(t)
	const pattern = "/Comm/Ble/Peers/{ConnHandle}/Params"
	pa := a.Lookup(pattern).Params()
	pa[0] = "Changed"
	_ = append(pa[:0], "Appended")
	for name, rt := range map[string]*Router{"the other router": b, "the same router": a} {
		r := rt.Lookup(pattern)
		if got := r.Params(); len(got) != 1 || got[0] != "ConnHandle" || r.NumParams() != 1 {
			t.Errorf("%s: Params() = %q, NumParams() = %d, want [ConnHandle], 1", name, got, r.NumParams())
		}
	}
}

func TestURIFormatsArgs(t *testing.T) {
	rt := newTestRouter(t)
	m, err := rt.Resolve(Subscribe, "/meas/acc/0104")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.URI("/net/9", []Value{Uint16(104)}); got != "/net/9/Meas/Acc/104" {
		t.Errorf("URI = %s", got)
	}
}

func TestResolveAllocs(t *testing.T) {
	rt := newTestRouter(t)
	allocs := testing.AllocsPerRun(100, func() {
		m, err := rt.Resolve(Get, "/info")
		if err != nil || m.URI("/net/000123", nil) != "/net/000123/Info" {
			t.Fatal("resolve failed")
		}
	})
	if allocs != 0 {
		t.Errorf("Resolve of /info allocates %v times, want 0", allocs)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"/Info", "info/app", "/Meas/Acc/104", "/Meas/ECG/Info/mV", "/Comm/Ble/Peers/Subscription",
		"/Misc/Manufacturing/x/y", "//", "/..", "/{X}", "/Meas/Acc/{SampleRate}/Subscription", "\xff", "/a b"} {
		f.Add(uint8(Get), s)
	}
	rt := newTestRouter(f)
	f.Fuzz(func(t *testing.T, op uint8, path string) {
		m, err := rt.Resolve(Op(op), path)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Status < 400 || e.Msg == "" {
				t.Fatalf("Resolve(%d, %q) error %v is not a described *Error", op, path, err)
			}
			return
		}
		if m.Route == nil || m.Handler == nil {
			t.Fatalf("Resolve(%d, %q) matched without route or handler", op, path)
		}
		// The canonical URI resolves to the same route.
		uri := m.URI("", nil)
		m2, err := rt.Resolve(m.Op, uri)
		if err != nil || m2.Route != m.Route {
			t.Fatalf("canonical %q of %q does not resolve back: %v", uri, path, err)
		}
	})
}

// FuzzRegister: two patterns that both register are either disjoint or one
// is more specific, and then a path that both match goes to the more
// specific one.
func FuzzRegister(f *testing.F) {
	f.Add("/{A}/x", "/y/{B}", false, false)
	f.Add("/a", "/a/{X}", true, false)
	f.Add("/Meas/Acc/{SampleRate}", "/Meas/Acc/Config", false, false)
	f.Add("/{X}", "/a", true, true)
	h := HandlerFunc(func(*Request) Response { return OK(nil) })
	f.Fuzz(func(t *testing.T, a, b string, aSub, bSub bool) {
		rt := NewRouter("")
		register := func(p string, sub bool) (*Route, error) {
			if sub {
				return rt.HandleSubtree(p, Get, h)
			}
			return rt.Handle(p, Get, h)
		}
		ra, err := register(a, aSub)
		if err != nil {
			return
		}
		rb, err := register(b, bSub)
		if err != nil || ra == rb {
			return
		}
		path, rel := compare(ra, rb)
		want := ra
		switch rel {
		case disjoint:
			return
		case overlap, equivalent:
			t.Fatalf("%s and %s both registered; they relate as %d", a, b, rel)
		case bMoreSpecific:
			want = rb
		}
		if len(path) > MaxPathLen {
			return
		}
		m, err := rt.Resolve(Get, path)
		if err != nil || m.Route != want {
			t.Fatalf("%s and %s: %s went to %v (%v), want %s", a, b, path, m.Route, err, want.Pattern())
		}
	})
}

// TestRouterLimits registers and resolves at the limits: the longest path,
// the most parameters, the longest parameter name, a placeholder of one
// letter, and the operations of a route to its last one.
func TestRouterLimits(t *testing.T) {
	h := HandlerFunc(func(*Request) Response { return OK(nil) })
	longest := "/" + strings.Repeat("a", MaxPathLen-1)
	name64 := strings.Repeat("N", 64)
	for _, tt := range []struct {
		pattern string
		ok      bool
	}{
		{longest, true},
		{longest + "a", false},
		{"/P/{A}/{B}/{C}/{D}", true},
		{"/Q/{A}/{B}/{C}/{D}/{E}", false},
		{"/R/{" + name64 + "}", true},
		{"/S/{" + name64 + "N}", false},
	} {
		rt := NewRouter("/net/1")
		if _, err := rt.Handle(tt.pattern, Get, h); (err == nil) != tt.ok {
			t.Errorf("Handle(%.20s... (%d bytes)): %v, want ok %v", tt.pattern, len(tt.pattern), err, tt.ok)
		}
	}

	rt := NewRouter("/net/1")
	for _, p := range []string{longest, "/P/{A}/{B}/{C}/{D}", "/R/{" + name64 + "}"} {
		if _, err := rt.Handle(p, Get, h); err != nil {
			t.Fatal(err)
		}
	}
	r, err := rt.Handle("/U", Subscribe, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, uri string
		args      []Value
	}{
		{longest, "/net/1" + longest, nil},
		{"/P/1/2/3/4", "/net/1/P/1/2/3/4", nil},
		{"/P/1/2/3/4", "/net/1/P/5/6/7/8", []Value{Int32(5), Int32(6), Int32(7), Int32(8)}},
		{"/P/{A}/2/{C}/4", "/net/1/P/{A}/2/{C}/4", nil},
		{"/R/{x}", "/net/1/R/{x}", nil},
	} {
		m, err := rt.Resolve(Get, tt.path)
		if err != nil {
			t.Errorf("Resolve(%.20s... (%d bytes)): %v", tt.path, len(tt.path), err)
			continue
		}
		if uri := m.URI("/net/1", tt.args); uri != tt.uri {
			t.Errorf("Resolve(%s): URI %s, want %s", tt.path, uri, tt.uri)
		}
	}
	if fmt.Sprint(r.Ops()) != "[subscribe unsubscribe]" { // a subscribable route answers unsubscribe too
		t.Errorf("ops of /U: %v", r.Ops())
	}
}

// TestShare: routers that registered the same patterns, operations and
// data share one table and keep their own handlers and URIs; a
// registration after Share leaves the other router's table as it was, and
// routers of other data keep their own.
func TestShare(t *testing.T) {
	build := func(prefix string, data any) (*Router, *[]string) {
		var served []string
		rt := NewRouter(prefix)
		for _, p := range []string{"/Info", "/Time", "/Meas/Acc/{SampleRate}"} {
			r, err := rt.Handle(p, Get, HandlerFunc(func(req *Request) Response {
				served = append(served, prefix+" "+p)
				return OK(nil)
			}))
			if err != nil {
				t.Fatal(err)
			}
			r.SetData(data)
		}
		if _, err := rt.Handle("/Time", Subscribe, HandlerFunc(func(*Request) Response { return OK(nil) })); err != nil {
			t.Fatal(err)
		}
		rt.Share()
		return rt, &served
	}
	data := new(int)
	a, servedA := build("/net/1", data)
	b, servedB := build("/net/2", data)
	if a.Routes()[0] != b.Routes()[0] {
		t.Fatal("routers of the same patterns and data hold tables of their own")
	}
	for _, tt := range []struct {
		rt     *Router
		served *[]string
		want   string
	}{{a, servedA, "/net/1"}, {b, servedB, "/net/2"}} {
		m, err := tt.rt.Resolve(Get, "/time")
		if err != nil {
			t.Fatal(err)
		}
		m.Handler.Serve(&Request{})
		if got := strings.Join(*tt.served, ","); got != tt.want+" /Time" {
			t.Errorf("router %s served %s", tt.want, got)
		}
		for range 2 { // made, then kept
			if uri := m.URI(tt.want, nil); uri != tt.want+"/Time" {
				t.Errorf("URI %s, want %s/Time", uri, tt.want)
			}
		}
		if m, err := tt.rt.Resolve(Unsubscribe, "/Time"); err != nil || m.Handler == nil {
			t.Errorf("unsubscribe of /Time: %v", err)
		}
	}
	if _, err := b.Handle("/Info", Put, HandlerFunc(func(*Request) Response { return OK(nil) })); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Resolve(Put, "/Info"); err == nil {
		t.Error("a registration on one router reached the table of another")
	}
	for _, op := range []Op{Put, Get} {
		if m, err := b.Resolve(op, "/Info"); err != nil || m.Handler == nil {
			t.Errorf("%s /Info after a registration on a shared table: %v", op, err)
		}
	}
	if m, _ := b.Resolve(Get, "/Time"); m.Handler == nil {
		t.Error("GET /Time lost its handler")
	} else if m.Handler.Serve(&Request{}); !strings.HasSuffix(strings.Join(*servedB, ","), "/net/2 /Time") {
		t.Errorf("GET /Time of router b went elsewhere: %v", *servedB)
	}
	if c, _ := build("/net/3", new(int)); c.Routes()[0] == a.Routes()[0] {
		t.Error("routers of other data share a table")
	}
}

// TestCloneKeepsTheOriginal: a registration on a clone of a router whose
// table is its own (not shared yet), or on the router after it was
// cloned, changes neither the other's routes nor its handlers.
func TestCloneKeepsTheOriginal(t *testing.T) {
	ok := HandlerFunc(func(*Request) Response { return OK(nil) })
	for _, tt := range []struct {
		name       string
		registerOn func(orig, clone *Router) *Router
	}{
		{"on the clone", func(orig, clone *Router) *Router { return clone }},
		{"on the original", func(orig, clone *Router) *Router { return orig }},
	} {
		orig := NewRouter("")
		if _, err := orig.Handle("/Info", Get, ok); err != nil {
			t.Fatal(err)
		}
		clone := orig.Clone()
		changed := tt.registerOn(orig, clone)
		other := orig
		if changed == orig {
			other = clone
		}
		if _, err := changed.Handle("/Time", Get, ok); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if _, err := changed.Handle("/Info", Put, ok); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if other.Lookup("/Time") != nil || len(other.Routes()) != 1 || other.Routes()[0].Serves(Put) {
			t.Errorf("%s: the other router changed: %d routes, /Info serves PUT %t", tt.name, len(other.Routes()), other.Routes()[0].Serves(Put))
		}
		if _, err := other.Resolve(Get, "/Info"); err != nil {
			t.Errorf("%s: the other router lost /Info: %v", tt.name, err)
		}
		if changed.Lookup("/Time") == nil || !changed.Lookup("/Info").Serves(Put) {
			t.Errorf("%s: the registrations are missing", tt.name)
		}
	}
}
