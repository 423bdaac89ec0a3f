package bridge_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"senseboard/bridge"
	"senseboard/bridge/bridgeclient"
)

// testToken is an access token long enough to be accepted.
const testToken = "s3cret-s3cret-s3cret"

// wsHeaders are the headers of a WebSocket handshake.
var wsHeaders = []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
	"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}

// rawStatus sends a request with a Host of its own and returns the status
// and body.
func (r *rig) rawStatus(method, url, host string, hdr ...string) (int, string) {
	r.t.Helper()
	resp, body := r.rawCall(method, url, host, hdr...)
	return resp.StatusCode, body
}

// rawCall sends a request with a Host of its own, when not "", and returns
// the answer, its body read.
func (r *rig) rawCall(method, url, host string, hdr ...string) (*http.Response, string) {
	r.t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b)
}

// TestDNSRebinding: on loopback the bridge answers loopback names and the
// names the user allows, whatever the endpoint.
func TestDNSRebinding(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, allowHosts: []string{"bench.lan"}})
	r.connected("000123")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(r.srv.URL, "http://"))
	type call struct {
		method, path string
		hdr          []string
	}
	calls := []call{
		{"GET", "/api/devices", nil},
		{"GET", "/api/output?path=/Meas/HR", nil},
		{"GET", "/api/ws", wsHeaders},
		{"POST", "/api/message", []string{"Content-Type", "application/json"}},
		{"POST", "/api/devices/000123/disconnect", []string{"Content-Type", "application/json"}},
		{"GET", "/", nil},
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example", "0.0.0.0:" + port} {
		for _, c := range calls {
			status, body := r.rawStatus(c.method, r.srv.URL+c.path, host, c.hdr...)
			if status != http.StatusMisdirectedRequest || !strings.Contains(body, "--allow-host") || !strings.Contains(body, "bench.lan") {
				t.Errorf("Host %q, %s %s: %d %s", host, c.method, c.path, status, body)
			}
		}
	}
	if st, _ := r.b.Device("000123"); !st.Connected || len(st.Streams) != 0 {
		t.Errorf("refused requests changed the device: %+v", st)
	}
	for _, host := range []string{"localhost:" + port, "LOCALHOST", "localhost.", "127.0.0.1:" + port, "127.1.2.3", "[::1]:" + port, "[::1]", "bench.lan", "BENCH.lan:" + port} {
		if status, body := r.rawStatus("GET", r.srv.URL+"/api/devices", host); status != 200 {
			t.Errorf("Host %q: %d %s", host, status, body)
		}
	}
}

// TestForeignPagesRefused: a page of another origin can neither read
// device data nor start work, whether its browser sends Origin or only
// Sec-Fetch-Site.
func TestForeignPagesRefused(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	json := []string{"Content-Type", "application/json"}
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/devices"},
		{"GET", "/api/devices/000123"},
		{"GET", "/api/output?path=/Meas/HR"},
		{"GET", "/api/ws"},
		{"GET", "/api/definitions"},
		{"GET", "/api/recordings"},
		{"POST", "/api/message"},
		{"POST", "/api/devices/000123/disconnect"},
		{"POST", "/api/recordings"},
	} {
		for _, foreign := range [][]string{
			{"Origin", "http://evil.example"},
			{"Origin", "null"},
			{"Origin", "http://localhost:1"},
			{"Sec-Fetch-Site", "cross-site"},
			{"Sec-Fetch-Site", "same-site"},
		} {
			hdr := append(append(append([]string{}, json...), wsHeaders...), foreign...)
			status, body := r.rawStatus(c.method, r.srv.URL+c.path, "", hdr...)
			if status != http.StatusForbidden || !strings.Contains(body, "refused") {
				t.Errorf("%s %s with %s: %d %s", c.method, c.path, foreign, status, body)
			}
		}
	}
	if st, _ := r.b.Device("000123"); !st.Connected || len(st.Streams) != 0 {
		t.Errorf("refused requests changed the device: %+v", st)
	}
	// the dashboard's own requests
	origin := r.srv.URL
	for _, hdr := range [][]string{{"Origin", origin}, {"Sec-Fetch-Site", "same-origin"}, {"Sec-Fetch-Site", "none"}} {
		if status, body := r.rawStatus("GET", r.srv.URL+"/api/devices", "", hdr...); status != 200 {
			t.Errorf("GET with %s: %d %s", hdr, status, body)
		}
		if status, body := r.post("/api/message", `{"type":"get","path":"/Info"}`, hdr...); status != 200 {
			t.Errorf("POST with %s: %d %s", hdr, status, body)
		}
	}
}

// TestSimpleCrossSiteWritesRefused: a request that changes things must
// declare a JSON body, which a form or a no-cors fetch cannot.
func TestSimpleCrossSiteWritesRefused(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	for _, path := range []string{"/api/message", "/api/devices/000123/disconnect", "/api/devices/000123/pair",
		"/api/devices/000123/events", "/api/recordings", "/api/recordings/x/stop"} {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonp"} {
			status, body := r.post(path, `{"type":"get","path":"/Info"}`, "Content-Type", ct)
			if status != http.StatusUnsupportedMediaType || !strings.Contains(body, "send Content-Type: application/json") {
				t.Errorf("POST %s as %q: %d %s", path, ct, status, body)
			}
		}
	}
	if st, _ := r.b.Device("000123"); !st.Connected {
		t.Errorf("a refused disconnect disconnected: %+v", st)
	}
	if status, body := r.post("/api/message", `{"type":"get","path":"/Info"}`, "Content-Type", "Application/JSON; charset=utf-8"); status != 200 {
		t.Errorf("JSON with a charset: %d %s", status, body)
	}
}

func TestTokens(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}, token: testToken})
	r.connected("000123")
	for _, tt := range []struct {
		name   string
		path   string
		hdr    []string
		status int
		want   string
	}{
		{"lower-case scheme", "/api/devices", []string{"Authorization", "bearer " + testToken}, 200, ""},
		{"upper-case scheme", "/api/devices", []string{"Authorization", "BEARER  " + testToken}, 200, ""},
		{"other scheme", "/api/devices", []string{"Authorization", "Basic " + testToken}, 401, `Authorization scheme \"Basic\"`},
		{"empty bearer", "/api/devices", []string{"Authorization", "Bearer "}, 401, "missing access token"},
		{"prefix of the token", "/api/devices", []string{"Authorization", "Bearer " + testToken[:8]}, 401, "wrong access token"},
		{"query on a plain call", "/api/devices?token=" + testToken, nil, 401, "?token= is accepted only on the WebSockets (/api/ws, /api/devices/{serial}/gsp), /api/output and recording and log downloads"},
		{"query on the stream", "/api/output?path=/Nope&token=" + testToken, nil, 200, `"response":404`},
		{"query on a download", "/api/recordings/nope/files/a.csv?token=" + testToken, nil, 404, "nope"},
		{"query on the recordings", "/api/recordings?token=" + testToken, nil, 401, "?token= is accepted only"},
		{"wrong query on the stream", "/api/output?path=/Meas/HR&token=guess", nil, 401, "wrong access token"},
		{"query on a log download", "/api/devices/000123/logs/5?format=csv&token=" + testToken, nil, 404, "no log with id 5"},
		{"log download without a token", "/api/devices/000123/logs/5?format=csv", nil, 401, "missing access token"},
		{"query on a log preview", "/api/devices/000123/logs/5/preview?token=" + testToken, nil, 401, "?token= is accepted only"},
		{"query on the log list", "/api/devices/000123/logs?token=" + testToken, nil, 401, "?token= is accepted only"},
		{"log download from another page", "/api/devices/000123/logs/5?token=" + testToken, []string{"Origin", "http://evil.example"}, 403, "evil.example"},
	} {
		status, body := r.get(tt.path, tt.hdr...)
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
	}
	// a WebSocket from a browser carries the token in the query
	conn, _, err := websocket.Dial(r.ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/api/ws?token="+testToken, nil)
	if err != nil {
		t.Fatalf("WebSocket with ?token=: %v", err)
	}
	conn.CloseNow()

	for _, tt := range []struct {
		token string
		want  string
	}{
		{"", "empty"}, {"   \t", "empty"}, {"short", "the minimum is 16"}, {"0123456789abcdef", ""},
		{"0123456789 abcdef", "space or control"}, {"0123456789abcdef\n", "space or control"},
	} {
		err := bridge.CheckToken(tt.token)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckToken(%q) = %v", tt.token, err)
			}
			continue
		}
		if !errors.Is(err, bridge.ErrBadToken) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckToken(%q) = %v, want %q", tt.token, err, tt.want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := (&bridge.Server{Phone: r.b, Token: "short"}).Serve(r.ctx, ln); !errors.Is(err, bridge.ErrBadToken) {
		t.Errorf("Serve with a short token: %v", err)
	}
}

// TestBodyLimits: every endpoint refuses a body over the limit with 413,
// and calls that take no body refuse one.
func TestBodyLimits(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	big := `{"x": "` + strings.Repeat("x", bridge.MaxMessage) + `"}`
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/message"}, {"POST", "/api/devices/000123/connect"}, {"POST", "/api/devices/000123/disconnect"},
		{"POST", "/api/devices/000123/pair"}, {"POST", "/api/devices/000123/events"}, {"POST", "/api/devices/000123/hrs"},
		{"POST", "/api/devices/000123/nus"}, {"POST", "/api/recordings"}, {"POST", "/api/recordings/x/stop"},
		{"GET", "/api/devices"}, {"GET", "/api/output?path=/Meas/HR"},
	} {
		status, body := r.call(c.method, c.path, big)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "exceeds 65536 bytes") {
			t.Errorf("%s %s with %d bytes: %d %.200s", c.method, c.path, len(big), status, body)
		}
	}
	for _, path := range []string{"/api/devices/000123/connect", "/api/devices/000123/disconnect", "/api/recordings/x/stop"} {
		if status, body := r.post(path, `{"now": true}`); status != 400 || !strings.Contains(body, `unknown field \"now\"`) {
			t.Errorf("POST %s with a body: %d %s", path, status, body)
		}
	}
	for _, q := range []string{"path=/Meas/HR&paht=/Meas/Acc/13", "path=/Meas/HR" + strings.Repeat("&path=/Meas/HR", bridge.MaxOutputPaths),
		"path=/Meas/HR&device=000123&device=000124"} {
		if status, body := r.get("/api/output?" + q); status != 400 {
			t.Errorf("output?%.60s: %d %s", q, status, body)
		}
	}
}

// TestWebSocketReadLimit: a WebSocket message over the limit ends the
// connection with 1009.
func TestWebSocketReadLimit(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	conn, _, err := websocket.Dial(r.ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/api/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.Write(r.ctx, websocket.MessageText, []byte(`{"type":"get","path":"/`+strings.Repeat("a", bridge.MaxMessage+1)+`"}`))
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute) // hang protection
	defer cancel()
	for {
		if _, _, err = conn.Read(ctx); err != nil {
			break
		}
	}
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversized message: %v", err)
	}
}

// serve runs srv on a loopback port until the test ends and returns its
// address.
func serve(t *testing.T, r *rig, srv *bridge.Server, ln net.Listener) string {
	t.Helper()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	srv.Phone = r.b
	ctx, cancel := context.WithCancel(r.ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ctx, ln); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ln.Addr().String()
}

// readToEnd reads a connection until the server ends it; it fails the test
// when the hang protection ends it first.
func readToEnd(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // hang protection
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept the connection open: %q", b)
	}
	return string(b)
}

func TestHTTPTimeoutsAndHeaderLimit(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	addr := serve(t, r, &bridge.Server{Limits: bridge.Limits{ReadHeaderTimeout: 20 * time.Millisecond,
		ReadTimeout: 50 * time.Millisecond, IdleTimeout: 20 * time.Millisecond, MaxHeaderBytes: 4096}}, listenSent(t))
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// headers that never end
	c := dial()
	io.WriteString(c, "GET /api/devices HTTP/1.1\r\nHost: localhost\r\n")
	if got := readToEnd(t, c); strings.Contains(got, "200 OK") {
		t.Errorf("unfinished headers answered: %q", got)
	}
	// a body that never ends
	c = dial()
	io.WriteString(c, "POST /api/message HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	if got := readToEnd(t, c); strings.Contains(got, "200 OK") {
		t.Errorf("unfinished body answered: %q", got)
	}
	// an idle kept-alive connection
	c = dial()
	io.WriteString(c, "GET /api/devices HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if got := readToEnd(t, c); !strings.HasPrefix(got, "HTTP/1.1 200 OK") {
		t.Errorf("idle connection: %q", got)
	}
	// headers over the limit
	c = dial()
	io.WriteString(c, "GET /api/devices HTTP/1.1\r\nHost: localhost\r\nX-Big: "+strings.Repeat("x", 8192)+"\r\n\r\n")
	if got := readToEnd(t, c); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("big headers: %q", got)
	}
}

// TestStreamsOutliveTimeouts: the server's read and write timeouts bound
// plain requests, not OUTPUT streams nor WebSockets.
func TestStreamsOutliveTimeouts(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	const timeout = 30 * time.Millisecond
	addr := serve(t, r, &bridge.Server{Limits: bridge.Limits{ReadTimeout: timeout, WriteTimeout: timeout}}, listenSent(t))
	c, err := bridgeclient.Dial(r.ctx, "http://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := http.Get("http://" + addr + "/api/output?path=/Meas/Acc/104")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	sc := bufio.NewScanner(resp.Body)
	lines := 0
	for time.Since(start) < 10*timeout {
		if !sc.Scan() {
			t.Fatalf("the stream ended after %d lines: %v", lines, sc.Err())
		}
		lines++
	}
	if r, err := c.Get(r.ctx, "/Info"); err != nil || r.Response != 200 {
		t.Errorf("WebSocket after %v: %+v %v", 10*timeout, r, err)
	}
}

// TestConnectionLimit: connections over the limit are answered 503 and
// closed; those under it are served.
func TestConnectionLimit(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	addr := serve(t, r, &bridge.Server{Limits: bridge.Limits{MaxConns: 2}}, nil)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get("http://" + addr + "/api/devices")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "serves 2 connections at once") {
		t.Errorf("over the limit: %s %s", resp.Status, b)
	}
	held[0].Close()
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute) // hang protection
	defer cancel()
	for {
		resp, err := hc.Get("http://" + addr + "/api/devices")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no room after a connection closed: %s", resp.Status)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// sentListener hands the server a connection once the client has sent
// something on it (or after a minute, a guard against hanging), so that the
// server's read timeouts start when the request is there: a client that a
// busy machine holds between connecting and writing does not look like one
// that sends too slowly.
type sentListener struct{ net.Listener }

func (l sentListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c, nil
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	var b [1]byte
	rc.Read(func(fd uintptr) bool { // true once a byte or the end is there, without reading it
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		return err != syscall.EAGAIN
	})
	c.SetReadDeadline(time.Time{})
	return c, nil
}

// listenSent returns a sentListener on a loopback port.
func listenSent(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return sentListener{ln}
}

// failingListener fails its first accepts with a temporary error, as a
// process out of file descriptors does.
type failingListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptRetriesTemporaryErrors: running out of file descriptors does
// not stop the bridge.
func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, r, &bridge.Server{}, &failingListener{Listener: ln, fails: 5})
	resp, err := http.Get("http://" + addr + "/api/devices")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after EMFILE: %s", resp.Status)
	}
}
