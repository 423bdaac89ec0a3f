package bridge

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/coder/websocket"
)

// Pages of other origins. The API answers its own pages (the dashboard)
// and programs that are not browsers; a web app served from elsewhere (a
// dev server on localhost:5173, an app on the web using webbluetooth.js)
// reaches it only when its origin is one of Server.AllowOrigins. Three
// layers then agree on the same list: the guard (checkOrigin), the
// WebSocket library's own check (acceptOptions), and CORS (the headers of
// the API's answers, and the answers to preflights). Host names are
// checked before any of them, so DNS rebinding stays refused whatever
// origins are allowed.

// ErrBadOrigin is an origin to allow that is not one.
var ErrBadOrigin = errors.New("not an origin")

// CheckOrigin reads an origin to allow, scheme://host[:port] with the
// scheme http or https and nothing after the port, and returns it as
// browsers send it: in lower case, without the scheme's default port.
func CheckOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %q: %v; give scheme://host:port, such as http://localhost:5173", ErrBadOrigin, origin, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%w: %q: the scheme is http or https; give scheme://host:port, such as http://localhost:5173", ErrBadOrigin, origin)
	case u.Host == "" || u.Hostname() == "" || u.User != nil || u.Opaque != "":
		return "", fmt.Errorf("%w: %q has no host; give scheme://host:port, such as http://localhost:5173", ErrBadOrigin, origin)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(origin, "?") || strings.HasSuffix(origin, "#"):
		return "", fmt.Errorf("%w: %q has more than scheme, host and port; an origin is scheme://host:port, such as %s://%s", ErrBadOrigin, origin, u.Scheme, u.Host)
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return u.Scheme + "://" + host, nil
}

// allowedOrigin reports whether a page's Origin is one of AllowOrigins.
func (s *Server) allowedOrigin(origin string) bool {
	if origin == "" || len(s.AllowOrigins) == 0 {
		return false
	}
	o, err := CheckOrigin(origin)
	return err == nil && o == origin && slices.Contains(s.AllowOrigins, o)
}

// checkOrigin refuses requests from pages of other origins than the
// bridge's own and those allowed: those whose Origin is another, and
// those a browser marks as coming from another origin (Sec-Fetch-Site),
// such as an <img> or a form of a foreign page, which carry no Origin.
// Another port of the same host is another origin (same-site, which
// browsers do not protect).
func (s *Server) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if s.allowedOrigin(origin) {
		return nil
	}
	if origin != "" && !sameOrigin(origin, r.Host) {
		return fmt.Errorf("request from a page of %s refused: the bridge answers pages of its own origin and those it allows only (give --allow-origin %s to allow it)", origin, origin)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("request from a page of another origin refused (Sec-Fetch-Site: %s): the bridge's API answers its own dashboard's pages, the origins it allows (--allow-origin) and programs that are not browsers", site)
	}
	return nil
}

// acceptOptions are the WebSocket library's options: its own origin check
// takes the same origins as the guard.
func (s *Server) acceptOptions() *websocket.AcceptOptions {
	patterns := make([]string, len(s.AllowOrigins))
	for i, o := range s.AllowOrigins {
		patterns[i] = escapePattern(o)
	}
	return &websocket.AcceptOptions{OriginPatterns: patterns}
}

// escapePattern makes an origin a pattern (path.Match) that matches it
// alone, brackets of IPv6 addresses included.
func escapePattern(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// cors lets the pages of an allowed origin read the API's answers, refusals
// included, so that they can show why.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	if origin := r.Header.Get("Origin"); s.allowedOrigin(origin) {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Expose-Headers", "Content-Disposition, WWW-Authenticate")
	}
}

// preflight answers a browser's CORS preflight (OPTIONS) of a call to the
// API: 204 with what the call may use when its page's origin is allowed,
// 403 otherwise. Programs that are not browsers get 204 with Allow.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers, Access-Control-Request-Private-Network")
	origin := r.Header.Get("Origin")
	switch {
	case origin == "" && r.Header.Get("Access-Control-Request-Method") == "":
		h.Set("Allow", "GET, HEAD, POST, DELETE, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	case !s.allowedOrigin(origin):
		if origin == "" {
			origin = "the page's origin"
		}
		writeError(w, http.StatusForbidden, fmt.Errorf("preflight of %s %s from a page of %s refused: the bridge answers pages of its own origin and those it allows only (give --allow-origin %s to allow it)",
			r.Header.Get("Access-Control-Request-Method"), r.URL.Path, origin, origin))
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		// a page on a public address asks for one on loopback
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	w.WriteHeader(http.StatusNoContent)
}
