package bridge

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// MinTokenLength is the length, in bytes, of the shortest access token the
// bridge accepts.
const MinTokenLength = 16

// ErrBadToken is an access token the bridge refuses to start with.
var ErrBadToken = errors.New("unusable access token")

// CheckToken refuses an access token that is empty, short (under
// MinTokenLength bytes) or holds spaces or control characters, which
// cannot travel in an Authorization header.
func CheckToken(token string) error {
	if strings.TrimSpace(token) == "" {
		return fmt.Errorf("%w: the token is empty; give one of at least %d characters, for example from openssl rand -hex 16", ErrBadToken, MinTokenLength)
	}
	if i := strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("%w: the token holds a space or control character at byte %d; use letters, digits and punctuation", ErrBadToken, i)
	}
	if len(token) < MinTokenLength {
		return fmt.Errorf("%w: the token has %d characters; the minimum is %d", ErrBadToken, len(token), MinTokenLength)
	}
	return nil
}

// Limits bound what clients may take of the bridge. Zero fields take
// their defaults.
type Limits struct {
	// MaxConns bounds the HTTP connections open at once, WebSockets and
	// streams included; DefaultMaxConns when zero. A connection over the
	// limit is answered 503 and closed.
	MaxConns int
	// ReadHeaderTimeout bounds reading a request's headers (10 s).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (30 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds answering a request (30 s). Streams and
	// WebSockets are not bound by it: they bound each write instead.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection without requests (2 min).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (32 KiB); larger ones
	// are answered 431.
	MaxHeaderBytes int
}

// DefaultMaxConns is the bridge's connection limit when Limits.MaxConns is
// zero.
const DefaultMaxConns = 256

// MaxOutputPaths bounds the subscriptions of one OUTPUT stream.
const MaxOutputPaths = 64

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.ReadTimeout, 30*time.Second)
	def(&l.WriteTimeout, 30*time.Second)
	def(&l.IdleTimeout, 2*time.Minute)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 32 << 10
	}
	return l
}

// isLoopbackHost reports whether a Host header's name is a loopback name:
// localhost, an address in 127.0.0.0/8 or ::1, with or without a port.
func isLoopbackHost(host string) bool {
	return isLoopback(hostName(host))
}

// hostName returns the name of a Host header without port or brackets,
// in lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// allowedHost reports whether the bridge answers a request to host on a
// connection that arrived at a loopback address: loopback names and the
// names of AllowHosts only, so that a foreign name that resolves to
// 127.0.0.1 (DNS rebinding) does not reach the API.
func (s *Server) allowedHost(host string) bool {
	if isLoopbackHost(host) {
		return true
	}
	name := hostName(host)
	for _, a := range s.AllowHosts {
		if hostName(a) == name || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// onLoopback reports whether a request came to a loopback address.
func onLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	return isLoopback(host)
}

// checkHost refuses requests on loopback to names that are not loopback
// names nor allowed.
func (s *Server) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*countedConn); ok && c.over {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("the bridge serves %d connections at once and has no room for another; close one or raise --http-max-conns", c.max))
			return
		}
		if onLoopback(r) && !s.allowedHost(r.Host) {
			allowed := "localhost, 127.0.0.1 (any of 127.0.0.0/8) and [::1]"
			if len(s.AllowHosts) > 0 {
				allowed += ", and " + strings.Join(s.AllowHosts, ", ")
			}
			writeError(w, http.StatusMisdirectedRequest, fmt.Errorf("host %q refused: on loopback the bridge answers the names %s only (a web page can make another name point at 127.0.0.1); give --allow-host %s to allow it", r.Host, allowed, hostName(r.Host)))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// queryTokenOK reports whether a path is one a browser opens without being
// able to set headers, a WebSocket (/api/ws, a device's GSP), the OUTPUT
// stream or a recording's download link: the token may come as ?token=
// there, and only there.
func queryTokenOK(path string) bool {
	if path == "/api/ws" || path == "/api/output" {
		return true
	}
	if dev, ok := strings.CutPrefix(path, "/api/devices/"); ok {
		if serial, id, isLog := strings.Cut(dev, "/logs/"); isLog { // a log's download
			return serial != "" && !strings.Contains(serial, "/") && id != "" && !strings.Contains(id, "/")
		}
		serial, gsp := strings.CutSuffix(dev, "/gsp")
		return gsp && serial != "" && !strings.Contains(serial, "/")
	}
	rest, ok := strings.CutPrefix(path, "/api/recordings/")
	_, file, found := strings.Cut(rest, "/files/")
	return ok && found && file != ""
}

// bearer returns the token of an Authorization header, whose scheme must be
// Bearer in any case.
func bearer(header string) (string, error) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(header), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("Authorization scheme %q: send Authorization: Bearer <token>", scheme)
	}
	return strings.TrimSpace(token), nil
}

// checkToken returns the status and error that refuse a request without
// the right token, or 0.
func (s *Server) checkToken(r *http.Request) (int, error) {
	q, hasQuery := r.URL.Query()["token"]
	if hasQuery && !queryTokenOK(r.URL.Path) {
		return http.StatusUnauthorized, fmt.Errorf("?token= is accepted only on the WebSockets (/api/ws, /api/devices/{serial}/gsp), /api/output and recording and log downloads, where a browser cannot set headers; send Authorization: Bearer <token> to %s", r.URL.Path)
	}
	if s.Token == "" {
		return 0, nil
	}
	var got string
	if h := r.Header.Get("Authorization"); h != "" {
		var err error
		if got, err = bearer(h); err != nil {
			return http.StatusUnauthorized, err
		}
	} else if hasQuery {
		got = q[0]
	}
	if got == "" {
		return http.StatusUnauthorized, errors.New("missing access token: send Authorization: Bearer <token>")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) != 1 {
		return http.StatusUnauthorized, errors.New("wrong access token")
	}
	return 0, nil
}

func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

// checkJSON refuses a request that changes things unless its body is
// declared JSON: a web page can send a form (or text/plain) to any site
// without asking, but not application/json.
func checkJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return fmt.Errorf("%s %s with Content-Type %s refused: send Content-Type: application/json (curl --json '{...}'), even with an empty body, so that a web page cannot do this with a form", r.Method, r.URL.Path, ct)
}

// guard admits a request to the API: the access token, the origin, a JSON
// body for requests that change things, and the body's size. The pages of
// allowed origins may read its answers (cors).
func (s *Server) guard(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.cors(w, r)
		if status, err := s.checkToken(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="senseboard bridge"`)
			writeError(w, status, err)
			return
		}
		if err := s.checkOrigin(r); err != nil {
			writeError(w, http.StatusForbidden, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := checkJSON(r); err != nil {
				writeError(w, http.StatusUnsupportedMediaType, err)
				return
			}
		}
		if r.ContentLength > MaxMessage {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("%w: the body of %d bytes exceeds %d bytes", ErrBadMessage, r.ContentLength, MaxMessage))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxMessage)
		h(w, r)
	})
}

// connKey keys a request's connection in its context.
type connKey struct{}

// countedConn is a connection counted against Limits.MaxConns.
type countedConn struct {
	net.Conn
	over bool // accepted over the limit: answered 503
	max  int
	once sync.Once
	n    *atomic.Int64
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.n.Add(-1) })
	return c.Conn.Close()
}

// countingListener counts the open connections it accepted, and marks
// those over the limit.
type countingListener struct {
	net.Listener
	max int
	n   atomic.Int64
}

// Accept returns the listener's errors as they are, so that the HTTP
// server retries temporary ones (EMFILE) with its backoff.
func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.n.Add(1)
	return &countedConn{Conn: c, over: n > int64(l.max), max: l.max, n: &l.n}, nil
}

// perWrite lifts the server's write timeout for an answer that may be long,
// such as a recording's download, and bounds each write by writeTimeout
// instead: a client that reads keeps it going, one that stops is dropped.
func perWrite(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}, r)
	}
}

// deadlineWriter sets a write deadline before each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return d.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
