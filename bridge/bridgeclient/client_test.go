package bridgeclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"senseboard/bridge/bridgeclient"
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
