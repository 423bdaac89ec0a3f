package api

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Endpoint is one operation of the specification's endpoint table, with
// subscriptions in one spelling: SUBSCRIBE on the resource.
type Endpoint struct {
	Op   string // GET, PUT, POST, DELETE or SUBSCRIBE
	Path string
}

func (e Endpoint) String() string { return e.Op + " " + e.Path }

// Endpoints returns the operations the set defines, in the table's spelling
// (an Unsubscribe is part of its SUBSCRIBE), sorted.
func (s *Set) Endpoints() []Endpoint {
	var out []Endpoint
	for _, r := range s.Resources() {
		for _, o := range r.Operations() {
			if o.Op.String() == "unsubscribe" {
				continue
			}
			out = append(out, Endpoint{strings.ToUpper(o.Op.String()), r.Path})
		}
	}
	sortEndpoints(out)
	return out
}

func sortEndpoints(e []Endpoint) {
	slices.SortFunc(e, func(a, b Endpoint) int { return strings.Compare(a.String(), b.String()) })
}

// ReadEndpointList reads a list of "OP /Path" lines, ignoring blank lines
// and # comments.
func ReadEndpointList(data []byte) ([]Endpoint, error) {
	var out []Endpoint
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, path, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("line %d: want OP /Path, got %q", n, line)
		}
		out = append(out, Endpoint{op, path})
	}
	sortEndpoints(out)
	return out, sc.Err()
}

var (
	noteRE      = regexp.MustCompile(`\s*\([^)]*\)`)
	pathSplitRE = regexp.MustCompile(`,\s*|\s+and\s+`)
)

// ParseEndpointTable extracts the operations of the "| Method | Path | ..."
// table of the specification's Endpoints section. It understands the table's
// shorthand: several methods and paths in one row, "any", notes in
// parentheses such as "(since v2.2)", a method written in
// front of a path, and a row that names X and X/Subscription (SUBSCRIBE goes
// to X, POST and DELETE to X/Subscription). POST and DELETE on X/Subscription
// are reported as SUBSCRIBE X.
func ParseEndpointTable(markdown []byte) ([]Endpoint, error) {
	var out []Endpoint
	seen := map[Endpoint]bool{}
	add := func(op, path string) {
		if base, ok := strings.CutSuffix(path, "/Subscription"); ok {
			if op != "POST" && op != "DELETE" {
				return
			}
			op, path = "SUBSCRIBE", base
		}
		e := Endpoint{op, path}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	inTable := false
	sc := bufio.NewScanner(bytes.NewReader(markdown))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "| Method | Path |") {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(out) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		var methods []string
		for _, m := range strings.Split(cells[0], ",") {
			m = strings.ToUpper(strings.TrimSpace(m))
			if m == "ANY" {
				methods = append(methods, "GET", "PUT", "POST", "DELETE", "SUBSCRIBE")
				continue
			}
			methods = append(methods, m)
		}
		paths := pathSplitRE.Split(noteRE.ReplaceAllString(strings.TrimSpace(cells[1]), ""), -1)
		hasSub := map[string]bool{}
		for _, p := range paths {
			if base, ok := strings.CutSuffix(strings.TrimSpace(p), "/Subscription"); ok {
				hasSub[base] = true
			}
		}
		for _, p := range paths {
			p = strings.TrimSpace(p)
			if op, rest, ok := strings.Cut(p, " "); ok && !strings.HasPrefix(p, "/") {
				add(strings.ToUpper(op), strings.TrimSpace(rest))
				continue
			}
			if !strings.HasPrefix(p, "/") {
				return nil, fmt.Errorf("endpoint table: cannot read path %q", p)
			}
			for _, m := range methods {
				if hasSub[p] && (m == "POST" || m == "DELETE") {
					continue // these belong to the row's X/Subscription
				}
				add(m, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("endpoint table not found")
	}
	sortEndpoints(out)
	return out, sc.Err()
}
