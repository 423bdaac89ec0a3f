package resource

// The router maps request paths to resources.
//
// Patterns are parsed once, at registration, into segments: a literal such as
// "Meas", or a parameter such as "{SampleRate}" that matches any one segment.
// They are stored in a tree with one node per segment position. A path is
// matched segment by segment from the root, trying the literal children of a
// node before its parameter child and backtracking when the literal branch
// does not lead to a resource, so the most specific pattern wins. Literals
// match without regard to case; the leading slash is optional.
//
// Registration refuses conflicts: the same operation twice on one pattern, two
// patterns of the same shape that are not spelled alike (so every resource
// has one canonical spelling, the one the envelope's uri shows), and two
// patterns that overlap when neither is more specific, as net/http's
// ServeMux does: /{A}/x and /y/{B} both match /y/x, and neither matches only
// paths that the other matches too. A pattern is more specific than another
// when it matches a strict subset of its paths (/Meas/Acc/Config is more
// specific than /Meas/Acc/{SampleRate}, which is more specific than a
// subtree route at /Meas); the matching above always picks the more
// specific one.
//
// Subscriptions are one mechanism with two spellings: registering Subscribe on
// a pattern also registers its child "<pattern>/Subscription", where POST
// subscribes and DELETE unsubscribes. A subtree route (HandleSubtree) also
// answers every path below its pattern that no other route matches.

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// MaxParams is the largest number of path parameters in a pattern.
const MaxParams = 4

// MaxPathLen is the longest request path accepted, in bytes.
const MaxPathLen = 256

// SubscriptionSegment is the last segment of a resource's subscription path.
const SubscriptionSegment = "Subscription"

// A Handler serves the operations registered for it on a route.
type Handler interface {
	Serve(req *Request) Response
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(req *Request) Response

// Serve calls f(req).
func (f HandlerFunc) Serve(req *Request) Response { return f(req) }

// Route is one resource: a pattern and the operations registered on it.
// The routes are a router's table, which the routers that registered the
// same patterns, operations and data in the same order share once
// registration has finished (Share); the handlers are each router's own.
type Route struct {
	pattern        string
	segs           []segment
	params         []string
	subscription   *Route // the pattern's Subscription child, once Subscribe is registered
	subscriptionOf *Route // for a Subscription child: the resource it subscribes to
	subtree        bool
	ops            uint8 // the operations registered: bit 1<<op
	index          int   // in the table's routes
	first          int   // in a router's handlers: the first of the route's, the others following in Op order
	data           any
}

type segment struct {
	lit   string // literal text; empty for a parameter
	param string // parameter name
}

// Pattern returns the route's pattern, for example /Meas/Acc/{SampleRate}.
func (r *Route) Pattern() string { return r.pattern }

// Params returns the names of the route's path parameters in order, in a
// slice of the caller's own: the routers of a process share one parsed
// form of each pattern.
func (r *Route) Params() []string { return slices.Clone(r.params) }

// NumParams returns how many path parameters the route has.
func (r *Route) NumParams() int { return len(r.params) }

// Serves reports whether op is registered on the route.
func (r *Route) Serves(op Op) bool { return op.Valid() && r.ops&(1<<op) != 0 }

// Ops returns the operations the route answers, in Op order.
func (r *Route) Ops() []Op {
	var ops []Op
	for op := Get; op <= Unsubscribe; op++ {
		if r.Serves(op) {
			ops = append(ops, op)
		}
	}
	return ops
}

// Subtree reports whether the route also answers every path below its pattern.
func (r *Route) Subtree() bool { return r.subtree }

// SubscriptionOf returns, for a Subscription child route, the route it
// subscribes to, and nil otherwise.
func (r *Route) SubscriptionOf() *Route { return r.subscriptionOf }

// Data returns the value attached with SetData.
func (r *Route) Data() any { return r.data }

// SetData attaches a value of the router's owner to the route (the device
// keeps the route's interface definition there). It is part of the
// router's table: set it while registering, before Share.
func (r *Route) SetData(v any) { r.data = v }

type node struct {
	lits  []*node // literal children
	lit   string  // this node's literal, for literal children
	param *node   // parameter child
	route *Route
}

// table is a router's tree of routes.
type table struct {
	root   node
	routes []*Route
	shared atomic.Bool // other routers may use it: never changed, copied by a registration
}

// Router matches paths to routes. It is not safe for concurrent registration;
// matching is safe for concurrent use once registration has finished.
type Router struct {
	prefix   string
	t        *table
	handlers []Handler                // of the routes in order, each route's in Op order
	uris     []atomic.Pointer[string] // by route: the canonical URI of a pattern without parameters, made when first asked for
}

// NewRouter returns an empty router whose canonical URIs start with prefix,
// for example "/net/000123".
func NewRouter(prefix string) *Router {
	return &Router{prefix: strings.TrimSuffix(prefix, "/"), t: &table{}}
}

// Routes returns the registered routes in registration order, Subscription
// children included.
func (rt *Router) Routes() []*Route { return rt.t.routes }

// Lookup returns the route registered with exactly this pattern, or nil.
func (rt *Router) Lookup(pattern string) *Route {
	for _, r := range rt.t.routes {
		if r.pattern == pattern {
			return r
		}
	}
	return nil
}

// Handle registers h for op on the resource at pattern. Registering Subscribe
// also makes the pattern's Subscription child route, and h then serves both
// Subscribe and Unsubscribe unless Unsubscribe is registered separately.
func (rt *Router) Handle(pattern string, op Op, h Handler) (*Route, error) {
	return rt.handle(pattern, op, h, false)
}

// HandleSubtree registers h for op on pattern and on every path below it that
// no other route matches.
func (rt *Router) HandleSubtree(pattern string, op Op, h Handler) (*Route, error) {
	return rt.handle(pattern, op, h, true)
}

func (rt *Router) handle(pattern string, op Op, h Handler, subtree bool) (*Route, error) {
	if !op.Valid() {
		return nil, fmt.Errorf("register %s: invalid operation %d", pattern, op)
	}
	if h == nil {
		return nil, fmt.Errorf("register %s %s: nil handler", op, pattern)
	}
	r, err := rt.route(pattern, subtree)
	if err != nil {
		return nil, err
	}
	if r.subscriptionOf != nil {
		return nil, fmt.Errorf("register %s %s: subscription paths are served by Subscribe on %s", op, pattern, r.subscriptionOf.pattern)
	}
	if r.Serves(op) {
		return nil, fmt.Errorf("register %s %s: operation already registered", op, pattern)
	}
	rt.add(r, op, h)
	if op == Subscribe && !subtree {
		if !r.Serves(Unsubscribe) {
			rt.add(r, Unsubscribe, h)
		}
		if r.subscription == nil {
			child, err := rt.route(pattern+"/"+SubscriptionSegment, false)
			if err != nil {
				return nil, err
			}
			if child.ops != 0 {
				return nil, fmt.Errorf("register %s %s: %s already has its own operations", op, pattern, child.pattern)
			}
			child.subscriptionOf = r
			r.subscription = child
		}
	}
	return r, nil
}

// add registers h for op on r, which has none.
func (rt *Router) add(r *Route, op Op, h Handler) {
	i := r.first + bits.OnesCount8(r.ops&(1<<op-1))
	rt.handlers = slices.Insert(rt.handlers, i, h)
	r.ops |= 1 << op
	for _, o := range rt.t.routes[r.index+1:] {
		o.first++
	}
}

// handler returns the handler of op on r, or nil.
func (rt *Router) handler(r *Route, op Op) Handler {
	if !r.Serves(op) {
		return nil
	}
	return rt.handlers[r.first+bits.OnesCount8(r.ops&(1<<op-1))]
}

// route finds or makes the route of pattern.
func (rt *Router) route(pattern string, subtree bool) (*Route, error) {
	segs, params, err := parseShared(pattern)
	if err != nil {
		return nil, err
	}
	if rt.t.shared.Load() {
		rt.t = rt.t.clone()
	}
	n := &rt.t.root
	for _, s := range segs {
		if s.lit == "" {
			if n.param == nil {
				n.param = &node{}
			}
			n = n.param
			continue
		}
		var next *node
		for _, c := range n.lits {
			if strings.EqualFold(c.lit, s.lit) {
				next = c
				break
			}
		}
		if next == nil {
			next = &node{lit: s.lit}
			n.lits = append(n.lits, next)
		}
		n = next
	}
	if r := n.route; r != nil {
		if r.pattern != pattern {
			return nil, fmt.Errorf("register %s: conflicts with %s (same shape, different spelling)", pattern, r.pattern)
		}
		if r.subtree != subtree {
			return nil, fmt.Errorf("register %s: already registered with a different subtree setting", pattern)
		}
		return r, nil
	}
	r := &Route{pattern: pattern, segs: segs, params: params, subtree: subtree, index: len(rt.t.routes), first: len(rt.handlers)}
	for _, o := range rt.t.routes {
		if path, ok := ambiguous(r, o); ok {
			return nil, fmt.Errorf("register %s: conflicts with %s: both match %s, and neither is more specific", pattern, o.pattern, path)
		}
	}
	n.route = r
	rt.t.routes = append(rt.t.routes, r)
	rt.uris = slices.Grow(rt.uris, 1)[:len(rt.uris)+1]
	return r, nil
}

// clone returns a copy of t that is not shared, for a registration.
func (t *table) clone() *table {
	c := &table{routes: make([]*Route, len(t.routes))}
	for i, r := range t.routes {
		cr := *r
		c.routes[i] = &cr
	}
	of := func(r *Route) *Route {
		if r == nil {
			return nil
		}
		return c.routes[r.index]
	}
	for _, r := range c.routes {
		r.subscription, r.subscriptionOf = of(r.subscription), of(r.subscriptionOf)
	}
	var copyNode func(dst, src *node)
	copyNode = func(dst, src *node) {
		dst.lit, dst.route = src.lit, of(src.route)
		for _, l := range src.lits {
			n := &node{}
			copyNode(n, l)
			dst.lits = append(dst.lits, n)
		}
		if src.param != nil {
			dst.param = &node{}
			copyNode(dst.param, src.param)
		}
	}
	copyNode(&c.root, &t.root)
	return c
}

// Clone returns a router of the same prefix, routes and handlers, to
// which more can be registered without changing rt.
func (rt *Router) Clone() *Router {
	rt.t.shared.Store(true) // from now on a registration on either copies it
	return &Router{prefix: rt.prefix, t: rt.t, handlers: slices.Clone(rt.handlers),
		uris: make([]atomic.Pointer[string], len(rt.t.routes))}
}

// tables holds the tables that routers share, by the patterns of their
// routes: a process that runs many devices of one kind holds one.
// It keeps at most maxTables.
var tables struct {
	sync.Mutex
	m map[string][]*table
	n int
}

const maxTables = 64

// Share ends the router's registration: it takes, instead of its own
// table of routes, the one of a router that registered the same patterns
// and operations with the same data in the same order, if one did, so
// that the routers of many devices of one kind hold one table. A later
// registration copies the table first.
func (rt *Router) Share() {
	if len(rt.handlers) != cap(rt.handlers) {
		rt.handlers = slices.Clone(rt.handlers) // without the room it grew
	}
	if len(rt.uris) != cap(rt.uris) {
		rt.uris = make([]atomic.Pointer[string], len(rt.t.routes)) // the same, without the room it grew
	}
	if rt.t.shared.Load() {
		return
	}
	var key strings.Builder
	for _, r := range rt.t.routes {
		fmt.Fprintf(&key, "%s %t %d\n", r.pattern, r.subtree, r.ops)
	}
	ts := &tables
	ts.Lock()
	defer ts.Unlock()
	for _, t := range ts.m[key.String()] {
		if t.sameData(rt.t) {
			rt.t = t
			return
		}
	}
	if ts.n < maxTables {
		if ts.m == nil {
			ts.m = make(map[string][]*table)
		}
		ts.m[key.String()] = append(ts.m[key.String()], rt.t)
		ts.n++
		rt.t.shared.Store(true)
	}
}

// sameData reports whether the routes of t and u, which have the same
// patterns and operations, have the same data.
func (t *table) sameData(u *table) bool {
	for i, r := range t.routes {
		if !sameData(r.data, u.routes[i].data) {
			return false
		}
	}
	return true
}

// sameData reports whether a and b are the same value; values that cannot
// be compared are not.
func sameData(a, b any) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// ambiguous reports whether some path matches both a and b while neither
// is more specific, and returns such a path.
func ambiguous(a, b *Route) (string, bool) {
	path, rel := compare(a, b)
	return path, rel == overlap
}

// How two patterns' sets of paths relate.
const (
	disjoint      = iota // no path matches both
	aMoreSpecific        // a matches a strict subset of b's paths
	bMoreSpecific
	equivalent // they match the same paths
	overlap    // some paths match both, and each matches some the other does not
)

// compare tells how the paths of a and b relate and, unless they are
// disjoint, returns a path that matches both. A subtree route matches its
// pattern followed by any number of segments.
func compare(a, b *Route) (string, int) {
	var aMore, bMore bool // a (b) is more specific at some position
	var path strings.Builder
	for i := 0; i < max(len(a.segs), len(b.segs)); i++ {
		var sa, sb *segment
		if i < len(a.segs) {
			sa = &a.segs[i]
		}
		if i < len(b.segs) {
			sb = &b.segs[i]
		}
		var seg string
		switch {
		case sa == nil && !a.subtree || sb == nil && !b.subtree:
			return "", disjoint // one has ended, the other goes on
		case sa == nil: // a's subtree takes b's segment
			bMore, seg = true, sb.text()
		case sb == nil:
			aMore, seg = true, sa.text()
		case sa.lit != "" && sb.lit != "":
			if !strings.EqualFold(sa.lit, sb.lit) {
				return "", disjoint
			}
			seg = sa.lit
		case sa.lit != "":
			aMore, seg = true, sa.lit
		case sb.lit != "":
			bMore, seg = true, sb.lit
		default:
			seg = "x"
		}
		path.WriteString("/" + seg)
	}
	switch {
	case a.subtree && !b.subtree && len(a.segs) == len(b.segs):
		bMore = true
	case b.subtree && !a.subtree && len(a.segs) == len(b.segs):
		aMore = true
	}
	switch {
	case aMore && bMore:
		return path.String(), overlap
	case aMore:
		return path.String(), aMoreSpecific
	case bMore:
		return path.String(), bMoreSpecific
	}
	return path.String(), equivalent
}

// text is a segment of a path that the segment matches.
func (s *segment) text() string {
	if s.lit != "" {
		return s.lit
	}
	return "x"
}

// parsedPatterns holds the parsed form of the patterns registered so far,
// which never changes: every device of a process registers the same
// patterns, and shares their parsed segments instead of holding a copy each.
// It keeps at most maxShared patterns; others are parsed for each router.
var parsedPatterns struct {
	sync.Mutex
	m map[string]parsedPattern
}

type parsedPattern struct {
	segs   []segment
	params []string
}

const maxShared = 4096

// parseShared parses a pattern, sharing the result with the routers that
// registered the same pattern before.
func parseShared(pattern string) ([]segment, []string, error) {
	pp := &parsedPatterns
	pp.Lock()
	defer pp.Unlock()
	if p, ok := pp.m[pattern]; ok {
		return p.segs, p.params, nil
	}
	segs, params, err := parsePattern(pattern)
	if err != nil {
		return nil, nil, err
	}
	segs, params = slices.Clip(segs), slices.Clip(params) // an append by a caller copies
	if pp.m == nil {
		pp.m = make(map[string]parsedPattern)
	}
	if len(pp.m) < maxShared {
		pp.m[pattern] = parsedPattern{segs, params}
	}
	return segs, params, nil
}

func parsePattern(pattern string) ([]segment, []string, error) {
	if !strings.HasPrefix(pattern, "/") || len(pattern) < 2 {
		return nil, nil, fmt.Errorf("register %q: a pattern starts with / and names a resource", pattern)
	}
	if !utf8.ValidString(pattern) || len(pattern) > MaxPathLen {
		return nil, nil, fmt.Errorf("register %q: not UTF-8 or longer than %d bytes; no request path can name it", pattern, MaxPathLen)
	}
	var segs []segment
	var params []string
	for _, s := range strings.Split(pattern[1:], "/") {
		switch {
		case s == "":
			return nil, nil, fmt.Errorf("register %q: empty segment", pattern)
		case s == "." || s == "..":
			return nil, nil, fmt.Errorf("register %q: a %q segment; no request path can name it", pattern, s)
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
			name := s[1 : len(s)-1]
			if !isIdentifier(name) {
				return nil, nil, fmt.Errorf("register %q: bad parameter name %q", pattern, name)
			}
			if slices.Contains(params, name) {
				return nil, nil, fmt.Errorf("register %q: parameter %s appears twice", pattern, name)
			}
			params = append(params, name)
			segs = append(segs, segment{param: name})
		case strings.ContainsAny(s, "{}"):
			return nil, nil, fmt.Errorf("register %q: braces only enclose a whole parameter segment", pattern)
		case !validSegment(s):
			return nil, nil, fmt.Errorf("register %q: bad segment %q", pattern, s)
		default:
			segs = append(segs, segment{lit: s})
		}
	}
	if len(params) > MaxParams {
		return nil, nil, fmt.Errorf("register %q: more than %d parameters", pattern, MaxParams)
	}
	return segs, params, nil
}

// Match is the result of resolving a request path.
type Match struct {
	// Route is the resource the request is for. For POST and DELETE on a
	// Subscription path it is the subscribed resource, not the child.
	Route *Route
	// Op is the operation on Route: POST and DELETE on a Subscription path
	// become Subscribe and Unsubscribe.
	Op Op
	// Handler serves Op on Route.
	Handler Handler

	rt    *Router           // that resolved the path
	raw   [MaxParams]string // path parameter text as the request gave it
	rest  string            // the part of the path below a subtree route's pattern
	child bool              // the request named the Subscription child
}

// Raw returns the text the request gave for path parameter i. A segment of the
// form {Name} is a placeholder that the request's Params fill.
func (m *Match) Raw(i int) string { return m.raw[i] }

// Placeholder reports whether path parameter i was given as a {Name}
// placeholder, to be filled from the request's parameters.
func (m *Match) Placeholder(i int) bool {
	s := m.raw[i]
	return len(s) > 1 && s[0] == '{'
}

// Rest returns the part of the path below a subtree route's pattern.
func (m *Match) Rest() string { return m.rest }

// Child reports whether the request named the resource's Subscription child
// (POST or DELETE on <path>/Subscription).
func (m *Match) Child() bool { return m.child }

// URI returns the canonical URI of the resource: prefix, the pattern's
// spelling, the path parameters formatted from args (one per parameter, raw
// text where args is short), and the rest of the path below a subtree route.
// It does not allocate for a pattern without parameters whose route was
// registered with the same prefix.
func (m *Match) URI(prefix string, args []Value) string {
	r := m.Route
	cache := len(r.params) == 0 && m.rest == "" && m.rt != nil && prefix == m.rt.prefix
	if cache {
		if uri := m.rt.uris[r.index].Load(); uri != nil {
			return *uri
		}
	}
	uri := m.uri(prefix, args)
	if cache {
		m.rt.uris[r.index].Store(&uri)
	}
	return uri
}

// uri formats the canonical URI of URI.
func (m *Match) uri(prefix string, args []Value) string {
	r := m.Route
	var b strings.Builder
	b.Grow(len(prefix) + len(r.pattern) + len(m.rest) + 24)
	b.WriteString(prefix)
	p := 0
	for _, s := range r.segs {
		b.WriteByte('/')
		if s.lit != "" {
			b.WriteString(s.lit)
			continue
		}
		if p < len(args) {
			b.WriteString(args[p].String())
		} else {
			b.WriteString(m.raw[p])
		}
		p++
	}
	if m.rest != "" {
		b.WriteByte('/')
		b.WriteString(m.rest)
	}
	return b.String()
}

// Prefix returns the router's URI prefix.
func (rt *Router) Prefix() string { return rt.prefix }

// Resolve matches op on path. It fails with a *Error: 400 for a malformed path,
// 404 when no resource matches and 405 when the resource lacks the operation;
// with 405 the Match still names the route, for the canonical URI.
func (rt *Router) Resolve(op Op, path string) (Match, error) {
	var m Match
	if !op.Valid() {
		return m, &Error{StatusBadRequest, fmt.Sprintf("invalid operation %d", op)}
	}
	p, err := cleanPath(path)
	if err != nil {
		return m, err
	}
	m.rt = rt
	r := rt.match(&rt.t.root, p, 0, &m)
	if r == nil {
		return m, &Error{StatusNotFound, "no resource at /" + clip(p, 80)}
	}
	m.Route = r
	switch {
	case r.subscriptionOf != nil:
		if op != Post && op != Delete {
			return m, &Error{StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; allowed: POST (subscribe), DELETE (unsubscribe)", strings.ToUpper(op.String()), r.pattern)}
		}
		m.child = true
		r = r.subscriptionOf
		m.Route = r
		if op == Post {
			op = Subscribe
		} else {
			op = Unsubscribe
		}
	case op == Unsubscribe && !r.Serves(Subscribe) && !r.Serves(Unsubscribe):
		return m, &Error{StatusMethodNotAllowed, fmt.Sprintf("%s cannot be subscribed to", r.pattern)}
	}
	m.Route, m.Op = r, op
	m.Handler = rt.handler(r, op)
	if m.Handler == nil {
		return m, &Error{StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; allowed: %s", strings.ToUpper(op.String()), r.pattern, allowed(r))}
	}
	return m, nil
}

func allowed(r *Route) string {
	var names []string
	for _, op := range r.Ops() {
		if op != Unsubscribe {
			names = append(names, strings.ToUpper(op.String()))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// match walks the tree from n for path p (no leading slash), parameters
// counted from np. Literal children are tried before the parameter child.
func (rt *Router) match(n *node, p string, np int, m *Match) *Route {
	if p == "" {
		if n.route != nil && (n.route.ops != 0 || n.route.subscriptionOf != nil) {
			return n.route
		}
		return nil
	}
	seg, rest := p, ""
	if i := strings.IndexByte(p, '/'); i >= 0 {
		seg, rest = p[:i], p[i+1:]
	}
	placeholder := seg[0] == '{'
	if !placeholder {
		for _, c := range n.lits {
			if strings.EqualFold(c.lit, seg) {
				if r := rt.match(c, rest, np, m); r != nil {
					return r
				}
				break
			}
		}
	}
	if n.param != nil && np < MaxParams {
		if r := rt.match(n.param, rest, np+1, m); r != nil {
			m.raw[np] = seg
			return r
		}
	}
	if n.route != nil && n.route.subtree {
		m.rest = p
		return n.route
	}
	return nil
}

// cleanPath checks a request path and returns it without its leading slash.
func cleanPath(path string) (string, error) {
	if path == "" || path == "/" {
		return "", &Error{StatusBadRequest, "empty path; a path names a resource, for example /Info"}
	}
	if len(path) > MaxPathLen {
		return "", &Error{StatusBadRequest, fmt.Sprintf("path is %d bytes long; at most %d are allowed", len(path), MaxPathLen)}
	}
	if !utf8.ValidString(path) {
		return "", &Error{StatusBadRequest, "path is not valid UTF-8"}
	}
	p := path
	if p[0] == '/' {
		p = p[1:]
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		s := p[start:i]
		switch {
		case s == "":
			return "", &Error{StatusBadRequest, fmt.Sprintf("path %q has an empty segment", clip(path, 80))}
		case s == "." || s == "..":
			return "", &Error{StatusBadRequest, fmt.Sprintf("path %q has a %q segment; paths are absolute resource names", clip(path, 80), s)}
		case s[0] == '{':
			if len(s) < 3 || s[len(s)-1] != '}' || !isIdentifier(s[1:len(s)-1]) {
				return "", &Error{StatusBadRequest, fmt.Sprintf("path segment %q is neither a name nor a {Parameter} placeholder", clip(s, 40))}
			}
		case !validSegment(s):
			return "", &Error{StatusBadRequest, fmt.Sprintf("path segment %q has a character that is not allowed (control, space or brace)", clip(s, 40))}
		}
		start = i + 1
	}
	return p, nil
}

func validSegment(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '{' || r == '}' || r == '\\' {
			return false
		}
	}
	return true
}
