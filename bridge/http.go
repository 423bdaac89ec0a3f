// Package bridge is the phone bridge's web face, the device's third
// calling path: it serves a phone (package phone), which reaches the
// devices over the radio link, to clients over HTTP (Server): messages
// with type, path and value over a WebSocket, where subscriptions run in
// parallel, or as one-shot POSTs; a plain-text stream of OUTPUT lines;
// recordings; a device's logs; each device's GATT SensorData Protocol as a
// WebSocket; and a dashboard, under the security rules of docs/security.md.
// docs/bridge.md describes them.
//
// Clients that subscribe to the same resource of a device share the
// phone's one subscription, each with its own id.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"senseboard/client"
	"senseboard/phone"
	"senseboard/record"
)

// DefaultHTTP is the bridge's address on embedded defaults.
const DefaultHTTP = "127.0.0.1:8080"

// Server serves a phone over HTTP: the API under /api/ and the dashboard
// at /. With an access token (required outside loopback) every request to
// the API must carry it, as "Authorization: Bearer <token>" or, where a
// browser cannot set the header (/api/ws and /api/output), as
// ?token=<token>. The API refuses pages of other origins than its own and
// AllowOrigins, requests that change things unless their body is declared
// JSON, and, on loopback, Host names that are not loopback names nor in
// AllowHosts (docs/security.md). /webbluetooth.js is served to any page.
type Server struct {
	// Phone reaches the devices.
	Phone *phone.Phone
	// Recordings keeps the recordings clients start; nil keeps them in
	// the temporary directory.
	Recordings *record.Library
	// Log receives what happens; nil discards it.
	Log *slog.Logger
	// Token is the access token; "" serves without one, which Serve allows
	// on loopback only.
	Token string
	// AllowHosts are Host names, with or without port, that the bridge
	// answers on loopback besides localhost, 127.0.0.0/8 and [::1].
	AllowHosts []string
	// AllowOrigins are the origins of web pages, as CheckOrigin gives
	// them, that the API answers besides the bridge's own: their calls
	// and WebSockets are admitted, and they may read the answers (CORS).
	AllowOrigins []string
	// Limits bound connections, timeouts and header sizes of Serve.
	Limits Limits

	once sync.Once // sets the defaults of Recordings and Log
}

// init sets the defaults of Recordings and Log.
func (s *Server) init() {
	s.once.Do(func() {
		if s.Recordings == nil {
			s.Recordings = record.NewLibrary(filepath.Join(os.TempDir(), "senseboard-recordings"))
		}
		if s.Log == nil {
			s.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
	})
}

// ErrNeedToken is a non-loopback address without an access token.
var ErrNeedToken = errors.New("an access token is needed to listen beyond loopback")

// CheckAddr refuses to serve on an address beyond loopback without a token.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bridge address %q: %w; give host:port, such as %s", addr, err, DefaultHTTP)
	}
	if token != "" || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("bridge address %s: %w (give --token or set SENSEBOARD_TOKEN)", addr, ErrNeedToken)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := CheckAddr(ln.Addr().String(), s.Token); err != nil {
		return err
	}
	if s.Token != "" {
		if err := CheckToken(s.Token); err != nil {
			return err
		}
	}
	s.init()
	lim := s.Limits.withDefaults()
	// WriteTimeout bounds the answers of plain requests; the streams
	// (GET /api/output) lift it and bound each write themselves, and a
	// WebSocket's connection loses it when the handshake takes it over.
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.Log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	ln = &countingListener{Listener: ln, max: lim.MaxConns}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		hs.Close()
	})
	defer stop()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("bridge: %w", err)
	}
	return nil
}

// Handler returns the bridge's HTTP handler.
func (s *Server) Handler() http.Handler {
	s.init()
	mux := http.NewServeMux()
	api := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.guard(h)) }
	api("GET /api/bridge", s.info)
	api("GET /api/devices", s.devices)
	api("GET /api/devices/{serial}", s.device)
	api("POST /api/devices/{serial}/connect", s.connect)
	api("POST /api/devices/{serial}/pair", s.pair)
	api("POST /api/devices/{serial}/disconnect", s.disconnect)
	api("POST /api/devices/{serial}/events", s.inject)
	api("GET /api/faults", s.describeFaults)
	api("POST /api/devices/{serial}/faults", s.injectFault)
	api("GET /api/devices/{serial}/faults", s.listFaults)
	api("DELETE /api/devices/{serial}/faults/{id}", s.endFault)
	api("POST /api/devices/{serial}/hrs", s.hrs)
	api("POST /api/devices/{serial}/nus", s.nus)
	api("GET /api/devices/{serial}/gsp", s.gspSocket)
	api("POST /api/message", s.message)
	api("GET /api/ws", s.websocket)
	api("GET /api/output", s.output)
	api("GET /api/definitions", s.definitions)
	api("GET /api/devices/{serial}/definitions", s.deviceDefinitions)
	s.logRoutes(api)
	api("GET /api/recordings", s.recordings)
	api("POST /api/recordings", s.startRecordingCall)
	api("POST /api/recordings/{name}/stop", s.stopRecording)
	api("GET /api/recordings/{name}/files/{file}", perWrite(s.recordingFile))
	mux.HandleFunc("OPTIONS /api/", s.preflight)
	api("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no API at %s %s; see docs/bridge.md", r.Method, r.URL.Path))
	})
	mux.HandleFunc("GET /webbluetooth.js", serveWebBluetooth)
	static, _ := fs.Sub(webFiles, "web")
	files := http.FileServerFS(static)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s %s: the dashboard's files are read with GET", r.Method, r.URL.Path))
			return
		}
		files.ServeHTTP(w, r)
	})
	return s.checkHost(mux)
}

// statusOf maps an error to an HTTP status.
func statusOf(err error) int {
	var re *client.RemoteError
	switch {
	case errors.Is(err, ErrBadMessage):
		return http.StatusBadRequest
	case errors.Is(err, phone.ErrUnknownDevice), errors.Is(err, record.ErrUnknown):
		return http.StatusNotFound
	case errors.Is(err, phone.ErrNotConnected), errors.As(err, &re):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, client.ErrNoAnswer):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte{'\n'})
}

func writeValue(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, errorJSON("", err))
}

// readBody reads a request's JSON body of at most MaxMessage bytes; an
// empty body reads as {}.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMessage))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("%w: the body exceeds %d bytes", ErrBadMessage, MaxMessage))
		return nil, false
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: reading the body: %v", ErrBadMessage, err))
		return nil, false
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		b = []byte("{}")
	}
	return b, true
}

// decodeBody reads a JSON body into v, refusing unknown fields.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	b, ok := readBody(w, r)
	if !ok {
		return false
	}
	if err := checkText(b); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w; the body is %s", err, shape))
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: %v; the body is %s", ErrBadMessage, strings.TrimPrefix(err.Error(), "json: "), shape))
		return false
	}
	return true
}

// noBody refuses a body other than nothing or {} for a call that takes none.
func noBody(w http.ResponseWriter, r *http.Request) bool {
	var none struct{}
	return decodeBody(w, r, &none, "empty or {}")
}

// Info is what GET /api/bridge says of the bridge.
type Info struct {
	Address string `json:"address"` // as a BLE central
	Name    string `json:"name"`
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	writeValue(w, Info{Address: s.Phone.Address(), Name: s.Phone.Name()})
}

func (s *Server) devices(w http.ResponseWriter, r *http.Request) {
	writeValue(w, s.Phone.Devices())
}

func (s *Server) device(w http.ResponseWriter, r *http.Request) {
	st, err := s.Phone.Device(r.PathValue("serial"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeValue(w, st)
}

func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	serial := r.PathValue("serial")
	s.answer(w, serial, s.Phone.Connect(r.Context(), serial))
}

func (s *Server) disconnect(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	serial := r.PathValue("serial")
	s.answer(w, serial, s.Phone.Disconnect(r.Context(), serial))
}

func (s *Server) pair(w http.ResponseWriter, r *http.Request) {
	var in struct {
		PassKey string `json:"passKey"`
		Bond    *bool  `json:"bond"`
	}
	if !decodeBody(w, r, &in, `{"passKey": "123456", "bond": true}`) {
		return
	}
	bond := in.Bond == nil || *in.Bond
	serial := r.PathValue("serial")
	s.answer(w, serial, s.Phone.Pair(r.Context(), serial, in.PassKey, bond))
}

// answer answers with the device's state, or the error.
func (s *Server) answer(w http.ResponseWriter, serial string, err error) {
	if err == nil {
		var st phone.DeviceState
		if st, err = s.Phone.Device(serial); err == nil {
			writeValue(w, st)
			return
		}
	}
	writeError(w, statusOf(err), err)
}

func (s *Server) hrs(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Notifications *bool `json:"notifications"`
	}
	if !decodeBody(w, r, &in, `{"notifications": true}`) {
		return
	}
	if in.Notifications == nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: the body is {\"notifications\": true} or false", ErrBadMessage))
		return
	}
	serial := r.PathValue("serial")
	s.answer(w, serial, s.Phone.SetHRSNotifications(r.Context(), serial, *in.Notifications))
}

func (s *Server) nus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Data []int  `json:"data"`
		Text string `json:"text"`
	}
	if !decodeBody(w, r, &in, `{"data": [1, 2, 3]} or {"text": "hello"}`) {
		return
	}
	data := []byte(in.Text)
	for _, v := range in.Data {
		if v < 0 || v > 255 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%w: data %d is not a byte, 0..255", ErrBadMessage, v))
			return
		}
		data = append(data, byte(v))
	}
	serial := r.PathValue("serial")
	s.answer(w, serial, s.Phone.WriteNUS(r.Context(), serial, data))
}

func (s *Server) inject(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	kind, err := s.Phone.Inject(r.PathValue("serial"), b)
	if err != nil {
		var ee *phone.EventError
		status := statusOf(err)
		switch {
		case errors.As(err, &ee):
			status = http.StatusBadRequest
		case !errors.Is(err, phone.ErrUnknownDevice):
			status = http.StatusConflict
		}
		writeError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, []byte(`{"injected":`+quote(kind)+`}`))
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// message carries out a one-shot message and answers with the envelope.
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	m, err := ParseMessage(b)
	if err != nil {
		writeJSON(w, statusOf(err), errorJSON(lenientID(b), err))
		return
	}
	a, err := s.do(r.Context(), m)
	if err != nil {
		writeJSON(w, statusOf(err), errorJSON(m.ID, err))
		return
	}
	writeJSON(w, http.StatusOK, answerJSON(m.ID, a))
}

// lenientID finds the id of a message that does not parse.
func lenientID(b []byte) ID {
	var m struct {
		ID ID `json:"id"`
	}
	json.Unmarshal(b, &m)
	return m.ID
}
