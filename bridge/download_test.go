package bridge_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"senseboard/bridge/bridgeclient"
)

// Behind a token, a recording's files download over real HTTP with the
// token in the query (as a browser's link carries it) or in the
// Authorization header, during the recording and after it; without the
// token, or with a wrong one, they do not.
func TestRecordingDownloadWithToken(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}, token: testToken})
	r.connected("000123")
	c := r.dial(&bridgeclient.Options{Token: testToken})
	rec, err := c.StartRecording(r.ctx, "", "csv", "/Meas/Acc/104")
	if err != nil {
		t.Fatal(err)
	}
	for got := r.recordings(); got[len(got)-1].Notifications < 10; got = r.recordings() {
		time.Sleep(20 * time.Millisecond) // the file comes with the first notification
	}
	get := func(path string, hdr ...string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, r.srv.URL+"/"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, b
	}
	rec, err = c.StopRecording(r.ctx, rec.Name) // a list with the downloads, and the files complete
	if err != nil || len(rec.Downloads) != 1 || len(rec.Files) != 1 {
		t.Fatalf("recording: %+v, %v", rec, err)
	}
	link, file := rec.Downloads[0], rec.Files[0]
	want, err := os.ReadFile(file)
	if err != nil || bytes.Count(want, []byte("\n")) < 10 {
		t.Fatalf("the recording's file: %d bytes, %v", len(want), err)
	}
	for _, tt := range []struct {
		name   string
		query  string
		hdr    []string
		status int
		want   string // in the body of a refusal
	}{
		{"token in the query", "token=" + url.QueryEscape(testToken), nil, 200, ""},
		{"token in the header", "", []string{"Authorization", "Bearer " + testToken}, 200, ""},
		{"no token", "", nil, 401, "missing access token"},
		{"wrong token in the query", "token=" + url.QueryEscape(testToken+"x"), nil, 401, "wrong access token"},
		{"empty token in the query", "token=", nil, 401, "access token"},
		{"wrong token in the header", "", []string{"Authorization", "Bearer guess-guess-guess"}, 401, "wrong access token"},
	} {
		path := link
		if tt.query != "" {
			path += "?" + tt.query
		}
		status, hdr, body := get(path, tt.hdr...)
		switch {
		case status != tt.status:
			t.Errorf("%s: %d %s", tt.name, status, body)
		case status == 200 && (!bytes.Equal(body, want) || hdr.Get("Content-Disposition") != "attachment; filename="+filepath.Base(file) ||
			!strings.HasPrefix(hdr.Get("Content-Type"), "text/csv")):
			t.Errorf("%s: %v and %d bytes; want the %d bytes of %s as an attachment", tt.name, hdr, len(body), len(want), file)
		case status != 200 && (!strings.Contains(string(body), tt.want) || bytes.Contains(body, want[:min(len(want), 40)])):
			t.Errorf("%s: %d %s; want a refusal saying %q", tt.name, status, body, tt.want)
		}
	}
	// the query token opens only the recording's own files
	status, _, body := get("api/recordings/" + rec.Name + "/files/keys.json?token=" + url.QueryEscape(testToken))
	if status != 404 || !strings.Contains(string(body), "no such recording file; its files: "+filepath.Base(file)) {
		t.Errorf("another file with the query token: %d %s", status, body)
	}
	// and not the other calls about recordings
	if status, _, body := get("api/recordings?token=" + url.QueryEscape(testToken)); status != 401 || !strings.Contains(string(body), "?token= is accepted only") {
		t.Errorf("the list of recordings with the query token: %d %s", status, body)
	}
}

// A recording under way downloads with every notification written so far:
// the bridge flushes its buffers first.
func TestRecordingDownloadWhileRunning(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	c := r.dial(nil)
	rec, err := c.StartRecording(r.ctx, "", "csv", "/Meas/Acc/13")
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopRecording(r.ctx, rec.Name)
	got := r.recordings()
	for ; got[len(got)-1].Notifications < 3; got = r.recordings() {
		time.Sleep(20 * time.Millisecond)
	}
	st := got[len(got)-1]
	resp, err := http.Get(r.srv.URL + "/" + st.Downloads[0])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("download: %d %s %v", resp.StatusCode, body, err)
	}
	// a header line, then a row per sample: at least one per notification
	if rows := bytes.Count(body, []byte("\n")) - 1; rows < int(st.Notifications) {
		t.Errorf("%d rows downloaded after %d notifications:\n%s", rows, st.Notifications, body)
	}
}
