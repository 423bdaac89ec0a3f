package bridgeclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"

	"senseboard/bridge/bridgeclient"
	"senseboard/internal/await"
)

func TestResponseOK(t *testing.T) {
	for _, tt := range []struct {
		status int
		ok     bool
	}{
		{199, false},
		{200, true},
		{299, true},
		{300, false},
	} {
		r := bridgeclient.Response{Response: tt.status}
		if r.OK() != tt.ok {
			t.Errorf("a response of status %d: OK() = %v, want %v", tt.status, r.OK(), tt.ok)
		}
	}
}

// A client with a token shows it to the bridge when it opens the
// WebSocket, as a bearer token; one without shows none. A bridge that
// refuses the WebSocket gives an Error with its status.
func TestDialShowsTheToken(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		token, want string
	}{
		{"secret", "Bearer secret"},
		{"", ""},
	} {
		_, err := bridgeclient.Dial(context.Background(), srv.URL, &bridgeclient.Options{Token: tt.token})
		var e *bridgeclient.Error
		if !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
			t.Errorf("token %q: %v, want an Error of status 401", tt.token, err)
		}
		if h := <-got; h != tt.want {
			t.Errorf("token %q: Authorization %q, want %q", tt.token, h, tt.want)
		}
	}
}

// fakeBridge answers each message on its WebSocket with the answers
// answer gives, and reports the messages it got.
func fakeBridge(t *testing.T, answer func(m bridgeclient.Message) []string) (string, <-chan bridgeclient.Message) {
	t.Helper()
	got := make(chan bridgeclient.Message, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		for {
			_, data, err := conn.Read(r.Context())
			if err != nil {
				return
			}
			var m bridgeclient.Message
			json.Unmarshal(data, &m)
			got <- m
			for _, a := range answer(m) {
				conn.Write(r.Context(), websocket.MessageText, []byte(a))
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// A client takes the answer to its message past what it cannot use:
// text that is no JSON, answers and notifications for ids it does not
// know. A message that names no device goes to the client's. A client
// closed sends nothing more.
func TestSendSkipsStrayMessages(t *testing.T) {
	url, got := fakeBridge(t, func(m bridgeclient.Message) []string {
		return []string{
			"not JSON",
			`{"type": "response", "id": "nobody", "response": 500}`,
			`{"type": "notification", "id": "nobody", "uri": "/Meas/Temp"}`,
			`{"type": "ended", "id": "nobody", "reason": "reset"}`,
			fmt.Sprintf(`{"type": "response", "id": %q, "device": %q, "response": 200}`, m.ID, m.Device),
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
	defer cancel()
	c, err := bridgeclient.Dial(ctx, url, &bridgeclient.Options{Device: "000123"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		device, want string
	}{
		{"", "000123"},
		{"000124", "000124"},
	} {
		r, err := c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/Info", Device: tt.device})
		if err != nil || r.Response != 200 || r.Device != tt.want {
			t.Fatalf("Send to device %q: %+v, %v; want a 200 of %s", tt.device, r, err, tt.want)
		}
		if m := <-got; m.Device != tt.want {
			t.Errorf("a message to device %q went to %q", tt.device, m.Device)
		}
	}
	c.Close()
	if _, err := c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/Info"}); !errors.Is(err, bridgeclient.ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
}

// A client with a token shows it on its HTTP calls too; one without shows
// none. A refused call gives an Error with the bridge's status and words.
func TestCallsShowTheToken(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/ws" {
			conn, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer conn.CloseNow()
			conn.Read(r.Context()) // until the client closes
			return
		}
		got <- r.Header.Get("Authorization")
		if r.URL.Path == "/api/devices/000999" {
			http.Error(w, `{"error": "no device 000999"}`, http.StatusNotFound)
			return
		}
		w.Write([]byte(`[{"serial": "000123"}]`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
	defer cancel()
	for _, tt := range []struct {
		token, want string
	}{
		{"secret", "Bearer secret"},
		{"", ""},
	} {
		c, err := bridgeclient.Dial(ctx, srv.URL, &bridgeclient.Options{Token: tt.token})
		if err != nil {
			t.Fatal(err)
		}
		ds, err := c.Devices(ctx)
		if err != nil || len(ds) != 1 || ds[0].Serial != "000123" {
			t.Errorf("Devices: %+v, %v", ds, err)
		}
		if h := <-got; h != tt.want {
			t.Errorf("token %q: Authorization %q, want %q", tt.token, h, tt.want)
		}
		_, err = c.Device(ctx, "000999")
		<-got
		var e *bridgeclient.Error
		if !errors.As(err, &e) || e.Status != http.StatusNotFound || e.Msg != "no device 000999" {
			t.Errorf("Device(000999): %v, want an Error of status 404 saying no device 000999", err)
		}
		c.Close()
	}
}

// A refused subscription leaves its id free for another; a subscription
// that lasts keeps its id from other subscriptions, though messages of
// other kinds may name it.
func TestSubscriptionIDs(t *testing.T) {
	url, _ := fakeBridge(t, func(m bridgeclient.Message) []string {
		status := 200
		if m.Path == "/Refused" {
			status = 404
		}
		return []string{fmt.Sprintf(`{"type": "response", "id": %q, "response": %d}`, m.ID, status)}
	})
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
	defer cancel()
	c, err := bridgeclient.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		s, r, err := c.SubscribeMessage(ctx, bridgeclient.Message{ID: "s1", Path: "/Refused"})
		if s != nil || err != nil || r.Response != 404 {
			t.Fatalf("a refused subscription: %v, %+v, %v; want none, a 404", s, r, err)
		}
	}
	if s, _, err := c.SubscribeMessage(ctx, bridgeclient.Message{ID: "s2", Path: "/Meas/Temp"}); s == nil || err != nil {
		t.Fatalf("a subscription: %v, %v", s, err)
	}
	if s, _, err := c.SubscribeMessage(ctx, bridgeclient.Message{ID: "s2", Path: "/Meas/Temp"}); s != nil || err == nil {
		t.Errorf("a second subscription of id s2: %v, %v; want an error", s, err)
	}
	if r, err := c.Send(ctx, bridgeclient.Message{Type: "get", ID: "s2", Path: "/Info"}); err != nil || !r.OK() {
		t.Errorf("a get of the subscription's id: %+v, %v", r, err)
	}
}
