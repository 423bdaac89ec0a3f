package bridge_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"senseboard/bridge"
	"senseboard/phone"
)

// fuzzServer is a bridge without devices, served by its handler alone.
func fuzzServer(f *testing.F) http.Handler {
	b, err := phone.New(phone.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	return (&bridge.Server{Phone: b}).Handler()
}

// checkAnswer fails unless an answer is a refusal of the client's input
// (4xx) with a JSON error that says why, or a success with a JSON body.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code >= 500 {
		t.Fatalf("%s: %d %s", what, rec.Code, body)
	}
	if !json.Valid(body) {
		t.Fatalf("%s: %d, not JSON: %q", what, rec.Code, body)
	}
	if rec.Code >= 400 {
		var e struct{ Error string }
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			t.Fatalf("%s: %d without an error message: %s", what, rec.Code, body)
		}
	}
}

// bodyEndpoints are the calls that take a JSON body.
var bodyEndpoints = []string{"/api/message", "/api/devices/000123/pair", "/api/devices/000123/events",
	"/api/devices/000123/hrs", "/api/devices/000123/nus", "/api/recordings", "/api/devices/000123/connect",
	"/api/recordings/x/stop", "/api/devices/000123/logging", "/api/devices/000123/logging/stop"}

// FuzzHTTPBody sends any body to every call that takes one: each answers
// with a JSON refusal that names what is wrong, never a crash or a 5xx.
func FuzzHTTPBody(f *testing.F) {
	h := fuzzServer(f)
	for i, s := range []string{`{"type":"get","path":"/Info"}`, `{"passKey":"123456","bond":true}`, `{"doubleTap":true}`,
		`{"notifications":true}`, `{"data":[1,2,3]}`, `{"paths":["/Meas/Acc/104"],"format":"csv"}`, `{}`, ``, `[`, `{"x":1e999}`} {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		path := bodyEndpoints[int(which)%len(bodyEndpoints)]
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, "POST "+path, rec)
	})
}

// FuzzHTTPQuery sends any query and Host to the OUTPUT stream and the
// device calls, the GSP WebSocket's, the log calls and downloads included.
func FuzzHTTPQuery(f *testing.F) {
	h := fuzzServer(f)
	for _, s := range []string{"path=/Meas/HR", "path=/Meas/HR&id=hr&device=000123", "path=%ZZ", "id=a&id=b&path=x",
		"token=x", "path=/Meas/HR&paht=1", ";;&&==", "mtu=23", "mtu=518&mtu=1", "format=edf", "format=XML&format=csv"} {
		f.Add(s, "localhost:8080")
	}
	f.Add("path=/Meas/HR", "[::1")
	f.Fuzz(func(t *testing.T, query, host string) {
		for _, path := range []string{"/api/output", "/api/devices", "/api/devices/000123", "/api/devices/000123/definitions", "/api/devices/000123/gsp",
			"/api/devices/000123/logs", "/api/devices/000123/logs/1", "/api/devices/000123/logs/x/preview", "/api/recordings/x/files/x.edf"} {
			req := httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil)
			req.URL.RawQuery = query
			req.Host = host
			// as on a loopback listener, where the Host is checked
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			checkAnswer(t, "GET "+path+"?"+query, rec)
		}
	})
}
