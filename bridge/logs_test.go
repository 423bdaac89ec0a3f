package bridge_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard/bridge"
	"senseboard/edf"
	"senseboard/logfile"
)

// logs reads GET /api/devices/{serial}/logs.
func (r *rig) logs(serial string) bridge.Logs {
	r.t.Helper()
	status, body := r.get("/api/devices/" + serial + "/logs")
	if status != 200 {
		r.t.Fatalf("GET logs: %d %s", status, body)
	}
	var l bridge.Logs
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		r.t.Fatalf("%v: %s", err, body)
	}
	return l
}

// download reads a log's download with its headers.
func (r *rig) download(path string) (int, http.Header, []byte) {
	r.t.Helper()
	resp, err := http.Get(r.srv.URL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// logFor starts the data logger with paths and stops it once its log holds
// at least size bytes; it returns the listing then.
func (r *rig) logFor(serial string, size uint64, paths ...string) bridge.Logs {
	r.t.Helper()
	b, _ := json.Marshal(map[string][]string{"paths": paths})
	if status, body := r.post("/api/devices/"+serial+"/logging", string(b)); status != 200 || !strings.Contains(body, `"stateName":"LOGGING"`) {
		r.t.Fatalf("start logging: %d %s", status, body)
	}
	for i := 0; ; i++ {
		l := r.logs(serial)
		if n := len(l.Logs); n > 0 && l.Logs[n-1].Size >= size || l.Full {
			break
		}
		if i == 600 {
			r.t.Fatalf("the log did not reach %d bytes: %+v", size, l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	status, body := r.post("/api/devices/"+serial+"/logging/stop", "")
	if status != 200 && !strings.Contains(body, "not logging") { // a full log stopped by itself
		r.t.Fatalf("stop logging: %d %s", status, body)
	}
	return r.logs(serial)
}

// The bridge lists, downloads (as stored, CSV, JSON, EDF+), previews and
// erases a device's logs, and starts and stops its data logger, over the
// phone path; a log larger than one radio-link frame comes whole.
func TestLogsOverHTTP(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	if l := r.logs("000123"); len(l.Logs) != 0 || l.State != 2 || l.StateName != "READY" || l.Open {
		t.Fatalf("before logging: %+v", l)
	}
	// 20 kB of log is 80 kB as a JSON array: more than a frame's 64 KiB
	l := r.logFor("000123", 20000, "/Meas/IMU9/208", "/Meas/ECG/125/mV", "/Meas/HR", "/Time/Detailed")
	if len(l.Logs) != 1 || l.Logs[0].ID != 1 || l.State != 2 || l.Open || !slices.Equal(l.Paths, []string{"/Meas/IMU9/208", "/Meas/ECG/125/mV", "/Meas/HR", "/Time/Detailed"}) {
		t.Fatalf("after logging: %+v", l)
	}
	entry := l.Logs[0]
	if entry.Modified.Unix() != int64(entry.ModificationTimestamp) || entry.Downloads["edf"] != "api/devices/000123/logs/1?format=edf" {
		t.Errorf("entry %+v", entry)
	}
	stored, err := r.local["000123"].Logbook.Storage().Read(1)
	if err != nil {
		t.Fatal(err)
	}

	// a GET of the whole log is one answer, larger than a frame: refused at
	// once with the reason (the bridge itself reads it by subscription)
	if status, body := r.post("/api/message", `{"type": "get", "path": "/Mem/Logbook/byId/1/Data", "device": "000123"}`); status != 409 || !strings.Contains(body, "exceeds the protocol's maximum payload of 65536 bytes") {
		t.Errorf("GET of a large log: %d %s", status, body)
	}

	// as stored
	status, hdr, sbemFile := r.download("/" + entry.Downloads["sbem"])
	if status != 200 || !bytes.Equal(sbemFile, stored) || uint64(len(sbemFile)) != entry.Size {
		t.Fatalf("SBEM download: %d, %d bytes, the device holds %d (listed %d)", status, len(sbemFile), len(stored), entry.Size)
	}
	if cd := hdr.Get("Content-Disposition"); cd != "attachment; filename=000123-log1.sbem" {
		t.Errorf("Content-Disposition %q", cd)
	}
	want, err := logfile.Decode(stored)
	if err != nil {
		t.Fatal(err)
	}
	values := 0
	for _, rec := range want {
		for _, f := range rec.Fields {
			values += len(f.Values)
		}
	}

	// CSV: a row per value
	status, hdr, csvFile := r.download("/" + entry.Downloads["csv"])
	if status != 200 {
		t.Fatalf("CSV download: %d %.300s", status, csvFile)
	}
	rows, err := csv.NewReader(bytes.NewReader(csvFile)).ReadAll()
	if err != nil || len(rows) != values+1 || strings.Join(rows[0], ",") != logfile.CSVHeader || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") {
		t.Errorf("CSV download: %d rows for %d values, %v, first row %q", len(rows), values, err, rows[:min(1, len(rows))])
	}

	// JSON: the records
	status, _, jsonFile := r.download("/" + entry.Downloads["json"])
	var doc struct{ Records []logfile.Record }
	if err := json.Unmarshal(jsonFile, &doc); status != 200 || err != nil || len(doc.Records) != len(want) {
		t.Errorf("JSON download: %d, %d records of %d, %v", status, len(doc.Records), len(want), err)
	}

	// EDF+: the sampled streams, heart rate as annotations
	status, _, edfFile := r.download("/" + entry.Downloads["edf"])
	f, err := edf.Unmarshal(edfFile)
	if status != 200 || err != nil {
		t.Fatalf("EDF+ download: %d, %v", status, err)
	}
	var labels []string
	for _, s := range f.Signals {
		labels = append(labels, s.Label)
	}
	if !slices.Contains(labels, "ECG") || !slices.Contains(labels, "IMU9 Gyro z") || len(labels) != 10 {
		t.Errorf("EDF+ signals %q", labels)
	}

	// the preview sums up every stream
	status, body := r.get("/api/devices/000123/logs/1/preview")
	var p logfile.Preview
	if err := json.Unmarshal([]byte(body), &p); status != 200 || err != nil {
		t.Fatalf("preview: %d %v %s", status, err, body)
	}
	streams := map[string]logfile.StreamSummary{}
	for _, s := range p.Streams {
		streams[s.Stream] = s
	}
	imu := streams["MeasIMU9"]
	if p.Size != len(stored) || p.Records != len(want) || len(p.Head) != logfile.PreviewRecords || imu.Records == 0 || imu.First == nil || *imu.Last <= *imu.First || streams["TimeDetailed"].Records != 1 {
		t.Errorf("preview %+v", p)
	}

	// erased
	status, body = r.call(http.MethodDelete, "/api/devices/000123/logs", "")
	if status != 200 || !strings.Contains(body, `"logs":[]`) {
		t.Errorf("DELETE logs: %d %s", status, body)
	}
	if es := r.local["000123"].Logbook.Storage().Entries(); len(es) != 0 {
		t.Errorf("the device still holds %+v", es)
	}
}

// Wrong calls are refused with what was wrong and what is allowed.
func TestLogErrorsOverHTTP(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	nine := `{"paths": ["/Meas/Acc/13", "/Meas/Acc/26", "/Meas/Acc/52", "/Meas/Acc/104", "/Meas/Gyro/13", "/Meas/Gyro/26", "/Meas/Gyro/52", "/Meas/Gyro/104", "/Meas/HR"]}`
	check := func(name, method, path, body string, status int, want string) {
		t.Helper()
		got, text := r.call(method, path, body)
		if got != status || !strings.Contains(text, want) {
			t.Errorf("%s: %d %s; want %d and %q", name, got, text, status, want)
		}
	}
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"start with nothing to log", "POST", "/api/devices/000123/logging", "", 400, "no paths to log"},
		{"a path that cannot be logged", "POST", "/api/devices/000123/logging", `{"paths": ["/No/Such"]}`, 400, `cannot be logged`},
		{"nine paths", "POST", "/api/devices/000123/logging", nine, 400, "at most 8"},
		{"a body of the wrong shape", "POST", "/api/devices/000123/logging", `{"path": "/Meas/HR"}`, 400, `unknown field \"path\"`},
		{"stop when not logging", "POST", "/api/devices/000123/logging/stop", "", 409, "not logging"},
		{"a log id that is not a number", "GET", "/api/devices/000123/logs/abc", "", 400, "log ids are whole numbers from 1"},
		{"log id 0", "GET", "/api/devices/000123/logs/0/preview", "", 400, "log ids are whole numbers from 1"},
		{"a log that does not exist", "GET", "/api/devices/000123/logs/7?format=csv", "", 404, "no log with id 7"},
		{"a format that does not exist", "GET", "/api/devices/000123/logs/1?format=xml", "", 400, "sbem, csv, json, edf"},
		{"a device that does not exist", "GET", "/api/devices/999999/logs", "", 404, "no such device"},
		{"DELETE with a form", "DELETE", "/api/devices/000123/logs", "", 200, `"logs":[]`},
		{"delete a log that does not exist", "DELETE", "/api/devices/000123/logs/4", "", 404, "no log with id 4"},
		{"delete log abc", "DELETE", "/api/devices/000123/logs/abc", "", 400, "log ids are whole numbers from 1"},
	} {
		check(tt.name, tt.method, tt.path, tt.body, tt.status, tt.want)
	}
	if status, body := r.post("/api/devices/000123/logging", `{"paths": ["/Meas/Acc/52"]}`); status != 200 {
		t.Fatalf("start: %d %s", status, body)
	}
	check("logging while logging", "POST", "/api/devices/000123/logging", "", 409, "already logging")
	check("configure while logging", "POST", "/api/devices/000123/logging", `{"paths": ["/Meas/HR"]}`, 409, "already logging; stop it first")
	check("erase while logging", "DELETE", "/api/devices/000123/logs", "", 409, "is logging")
	check("erase the log being written", "DELETE", "/api/devices/000123/logs/1", "", 409, "log 1 is being written")
	check("stop", "POST", "/api/devices/000123/logging/stop", "", 200, `"stateName":"READY"`)
	check("erase it", "DELETE", "/api/devices/000123/logs/1", "", 200, `"logs":[]`)
}

// A log that fills the storage stops the logger: the listing says the
// storage is full, and the log reads whole.
func TestFullLogStoreOverHTTP(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}, logbook: 6000})
	r.connected("000123")
	l := r.logFor("000123", 1<<30, "/Meas/IMU9/208")
	if !l.Full || l.State != 2 || len(l.Logs) != 1 || l.Logs[0].Size > 6000 {
		t.Fatalf("after filling the storage: %+v", l)
	}
	status, _, b := r.download("/" + l.Logs[0].Downloads["csv"])
	if status != 200 || !bytes.HasPrefix(b, []byte(logfile.CSVHeader+"\n1,MeasIMU9,")) {
		t.Errorf("CSV of the full log: %d %.80s", status, b)
	}
}

// A recording exports to EDF+ from the page's address for it, during the
// recording and after; the signals are its streams at their rates.
func TestRecordingEDFOverHTTP(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}})
	r.connected("000123")
	if status, body := r.post("/api/recordings", `{"paths": ["/Meas/Acc/52", "/Meas/ECG/125"], "name": "walk", "format": "jsonl"}`); status != 200 {
		t.Fatalf("recording: %d %s", status, body)
	}
	var st bridge.RecordingState
	for i := 0; ; i++ {
		recs := r.recordings()
		if st = recs[len(recs)-1]; st.Notifications >= 40 {
			break
		}
		if i == 3000 { // a minute: a guard against a hang
			t.Fatalf("the recording has %d notifications", st.Notifications)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.EDF != "api/recordings/walk/files/walk.edf" {
		t.Fatalf("the recording's EDF+ address %q", st.EDF)
	}
	check := func(when string) *edf.File {
		t.Helper()
		status, hdr, b := r.download("/" + st.EDF)
		f, err := edf.Unmarshal(b)
		if status != 200 || err != nil || hdr.Get("Content-Disposition") != "attachment; filename=walk.edf" {
			t.Fatalf("%s: %d %v %q %.100s", when, status, err, hdr.Get("Content-Disposition"), b)
		}
		var labels []string
		for _, s := range f.Signals {
			labels = append(labels, fmt.Sprintf("%s@%g", s.Label, s.Rate))
		}
		if !slices.Equal(labels, []string{"Acc x@52", "Acc y@52", "Acc z@52", "ECG@125"}) && !slices.Equal(labels, []string{"ECG@125", "Acc x@52", "Acc y@52", "Acc z@52"}) {
			t.Errorf("%s: signals %q", when, labels)
		}
		if d := time.Since(f.Start); d < 0 || d > time.Hour {
			t.Errorf("%s: starts at %v", when, f.Start)
		}
		return f
	}
	during := check("during the recording")
	r.post("/api/recordings/walk/stop", "")
	after := check("after the recording")
	if len(after.Signals[0].Samples) < len(during.Signals[0].Samples) {
		t.Errorf("%d samples after, %d during", len(after.Signals[0].Samples), len(during.Signals[0].Samples))
	}
	if status, body := r.get("/api/recordings/nope/files/nope.edf"); status != 404 || !strings.Contains(body, "no such recording") {
		t.Errorf("EDF+ of a recording that does not exist: %d %s", status, body)
	}
}
