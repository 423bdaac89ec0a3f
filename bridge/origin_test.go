package bridge_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"senseboard/bridge"
)

func TestCheckOrigin(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://localhost:5173", "http://localhost:5173"},
		{"HTTP://LocalHost:5173/", "http://localhost:5173"},
		{"http://127.0.0.1:80", "http://127.0.0.1"},
		{"https://app.example:443", "https://app.example"},
		{"https://app.example:8443", "https://app.example:8443"},
		{"http://[::1]:5173", "http://[::1]:5173"},
	} {
		if got, err := bridge.CheckOrigin(tt.in); err != nil || got != tt.want {
			t.Errorf("CheckOrigin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "*", "null", "localhost:5173", "file:///app", "ws://localhost:5173", "http://", "http://localhost:5173/app",
		"http://localhost:5173?x=1", "http://localhost:5173#top", "http://user@localhost:5173", "http://localhost:5173?"} {
		if got, err := bridge.CheckOrigin(in); !errors.Is(err, bridge.ErrBadOrigin) {
			t.Errorf("CheckOrigin(%q) = %q, %v; want ErrBadOrigin", in, got, err)
		}
	}
}

// TestAllowOrigin: the pages of allowed origins reach the API, calls and
// WebSockets alike, and read its answers; the guard, the WebSocket
// library's check, CORS and preflights agree; others stay refused, and so
// do rebound Host names; the script is for every page.
func TestAllowOrigin(t *testing.T) {
	const dev, app, v6 = "http://localhost:5173", "https://app.example", "http://[::1]:5173"
	r := newRig(t, rigConfig{local: []string{"000123"}, token: testToken, allowOrigins: []string{dev, app, v6}})
	r.connected("000123")
	auth := []string{"Authorization", "Bearer " + testToken}
	json := []string{"Content-Type", "application/json"}
	with := func(hdr ...[]string) []string {
		var out []string
		for _, h := range hdr {
			out = append(out, h...)
		}
		return out
	}
	for _, tt := range []struct {
		name, method, path, host string
		hdr                      []string
		status                   int
		acao, want               string
	}{
		{"a dev server on another port", "GET", "/api/devices", "", with(auth, []string{"Origin", dev, "Sec-Fetch-Site", "same-site"}), 200, dev, `"serial":"000123"`},
		{"an app of another site", "POST", "/api/devices/000123/connect", "", with(auth, json, []string{"Origin", app, "Sec-Fetch-Site", "cross-site"}), 200, app, `"connected":true`},
		{"an IPv6 origin", "GET", "/api/devices", "", with(auth, []string{"Origin", v6}), 200, v6, `"serial"`},
		{"the token still", "GET", "/api/devices", "", []string{"Origin", dev}, 401, dev, "missing access token"},
		{"JSON still", "POST", "/api/message", "", with(auth, []string{"Origin", dev, "Content-Type", "text/plain"}), 415, dev, "Content-Type"},
		{"another port", "GET", "/api/devices", "", with(auth, []string{"Origin", "http://localhost:5174", "Sec-Fetch-Site", "same-site"}), 403, "", "give --allow-origin http://localhost:5174"},
		{"an allowed host with another scheme", "GET", "/api/devices", "", with(auth, []string{"Origin", "https://localhost:5173"}), 403, "", "refused"},
		{"no Origin from another site", "GET", "/api/devices", "", with(auth, []string{"Sec-Fetch-Site", "cross-site"}), 403, "", "Sec-Fetch-Site: cross-site"},
		{"a rebound name", "GET", "/api/devices", "evil.example", with(auth, []string{"Origin", dev}), 421, "", "--allow-host"},
		{"a preflight", "OPTIONS", "/api/message", "", []string{"Origin", dev, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type"}, 204, dev, ""},
		{"a refused preflight", "OPTIONS", "/api/message", "", []string{"Origin", "http://evil.example", "Access-Control-Request-Method", "POST"}, 403, "", "preflight of POST /api/message from a page of http://evil.example refused"},
		{"OPTIONS of a program", "OPTIONS", "/api/devices", "", nil, 204, "", ""},
		{"the script, for any page", "GET", "/webbluetooth.js", "", []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, 200, "*", "navigator.bluetooth"},
	} {
		resp, body := r.rawCall(tt.method, r.srv.URL+tt.path, tt.host, tt.hdr...)
		if resp.StatusCode != tt.status || resp.Header.Get("Access-Control-Allow-Origin") != tt.acao || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d, Access-Control-Allow-Origin %q, %.200s; want %d, %q and %q", tt.name, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body, tt.status, tt.acao, tt.want)
		}
	}

	resp, _ := r.rawCall("OPTIONS", r.srv.URL+"/api/devices/000123", "", "Origin", app, "Access-Control-Request-Method", "GET",
		"Access-Control-Request-Headers", "authorization", "Access-Control-Request-Private-Network", "true")
	for k, want := range map[string]string{"Access-Control-Allow-Methods": "GET, HEAD, POST, DELETE", "Access-Control-Allow-Headers": "Authorization, Content-Type",
		"Access-Control-Allow-Private-Network": "true", "Access-Control-Max-Age": "600"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("preflight: %s %q; want %q", k, got, want)
		}
	}
	if resp, _ := r.rawCall("OPTIONS", r.srv.URL+"/api/devices", ""); resp.Header.Get("Allow") != "GET, HEAD, POST, DELETE, OPTIONS" {
		t.Errorf("OPTIONS of a program: Allow %q", resp.Header.Get("Allow"))
	}
	resp, _ = r.rawCall("GET", r.srv.URL+"/webbluetooth.js", "")
	if ct, nosniff := resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"); ct != "text/javascript; charset=utf-8" || nosniff != "nosniff" {
		t.Errorf("the script: Content-Type %q, X-Content-Type-Options %q", ct, nosniff)
	}

	// WebSockets: the guard and the library agree
	ws := "ws" + strings.TrimPrefix(r.srv.URL, "http")
	for _, tt := range []struct {
		path, origin string
		status       int
	}{
		{"/api/ws", dev, 101},
		{"/api/ws", app, 101},
		{"/api/ws", v6, 101},
		{"/api/ws", "http://localhost:5174", 403},
		{"/api/devices/000123/gsp", dev, 101},
		{"/api/devices/000123/gsp", "http://evil.example", 403},
	} {
		conn, resp, err := websocket.Dial(r.ctx, ws+tt.path+"?token="+testToken, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {tt.origin}}})
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		if status != tt.status {
			t.Errorf("WebSocket %s from %s: %d, %v; want %d", tt.path, tt.origin, status, err, tt.status)
		}
		if conn != nil {
			conn.Close(websocket.StatusNormalClosure, "")
		}
	}
}

// TestAllowOriginLocalhostSameSite: without the origin allowed, a dev
// server on another port of localhost is refused, though browsers count it
// the same site.
func TestAllowOriginLocalhostSameSite(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(r.srv.URL, "http://"))
	other := "http://127.0.0.1:1" + port
	resp, body := r.rawCall("GET", r.srv.URL+"/api/devices", "", "Origin", other, "Sec-Fetch-Site", "same-site")
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(body, "give --allow-origin "+other) {
		t.Errorf("a page on another port: %d %q %s", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body)
	}
}
