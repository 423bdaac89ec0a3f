package bridge

import "net/http"

// serveWebBluetooth serves webbluetooth.js (web/), the navigator.bluetooth
// that reaches the bridge's devices (docs/webbluetooth.md), to pages of any
// origin: a script tag needs no permission, and the script holds nothing
// that is not public. What it then asks of the API is for the origins the
// bridge allows only.
func serveWebBluetooth(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	h.Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, webFiles, "web/webbluetooth.js")
}
