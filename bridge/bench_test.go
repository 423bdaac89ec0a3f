package bridge_test

import (
	"testing"
)

// BenchmarkGetOverWebSocket measures a GET /Info round trip through the
// bridge: WebSocket, bridge, radio link, device and back.
func BenchmarkGetOverWebSocket(b *testing.B) {
	r := newRig(b, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	c := r.dial(nil)
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Get(r.ctx, "/Info")
		if err != nil || resp.Response != 200 {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkGetOverHTTP measures a one-shot POST /api/message GET /Info.
func BenchmarkGetOverHTTP(b *testing.B) {
	r := newRig(b, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	b.ResetTimer()
	for b.Loop() {
		if status, body := r.post("/api/message", `{"type":"get","path":"/Info"}`); status != 200 {
			b.Fatal(status, body)
		}
	}
}
