package bridge

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/edf"
	"senseboard/record"
)

// RecordingRequest starts a recording of streams of one device.
type RecordingRequest struct {
	// Name names the recording's files; a time and the serial number when empty.
	Name string `json:"name,omitempty"`
	// Device is the serial number; the connected device when empty (or
	// give paths of the form /net/<serial>/...).
	Device string `json:"device,omitempty"`
	// Paths are the streams, for example /Meas/Acc/104 and /Meas/ECG/250.
	Paths []string `json:"paths"`
	// Format is csv (one file per stream, the default) or jsonl.
	Format string `json:"format,omitempty"`
}

// RecordingState describes a recording.
type RecordingState struct {
	Name    string   `json:"name"`
	Device  string   `json:"device"`
	Format  string   `json:"format"`
	Streams []string `json:"streams"`
	Files   []string `json:"files"`
	// Downloads are the files' addresses on the bridge, relative to its
	// root: api/recordings/<name>/files/<file>.
	Downloads []string `json:"downloads"`
	// EDF is the address of the recording exported to EDF+ (made when
	// asked, from its files), once it has a file: api/recordings/<name>/files/<name>.edf.
	EDF           string     `json:"edf,omitempty"`
	Started       time.Time  `json:"started"`
	Stopped       *time.Time `json:"stopped,omitempty"`
	Notifications int64      `json:"notifications"`
	// Error is the first failure to write, or a stream that ended.
	Error string `json:"error,omitempty"`
}

// Recording is a recording under way or done.
type Recording struct {
	rec   *record.Recorder
	count atomic.Int64

	mu    sync.Mutex
	state RecordingState
	subs  []*Sub
}

var recordingName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// recordDir is where recordings go.
func (b *Bridge) recordDir() string {
	switch {
	case b.cfg.RecordDir != "":
		return b.cfg.RecordDir
	case b.cfg.StateDir != "":
		return filepath.Join(b.cfg.StateDir, "recordings")
	}
	return filepath.Join(os.TempDir(), "senseboard-recordings")
}

// StartRecording subscribes to the streams and records their
// notifications until StopRecording.
func (b *Bridge) StartRecording(ctx context.Context, req RecordingRequest) (RecordingState, error) {
	if len(req.Paths) == 0 {
		return RecordingState{}, fmt.Errorf("%w: a recording needs paths, for example [\"/Meas/Acc/104\", \"/Meas/ECG/250\"]", ErrBadMessage)
	}
	if req.Format == "" {
		req.Format = "csv"
	}
	format, err := record.ParseFormat(req.Format)
	if err != nil {
		return RecordingState{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	// find the device before naming the files
	first := Message{Type: "subscribe", Path: req.Paths[0], Device: req.Device}
	d, _, err := b.route(&first)
	if err != nil {
		return RecordingState{}, err
	}
	if req.Name == "" {
		req.Name = time.Now().Format("20060102-150405") + "-" + d.serial
	}
	if !recordingName.MatchString(req.Name) {
		return RecordingState{}, fmt.Errorf("%w: recording name %q: up to 64 letters, digits, '.', '_' and '-'", ErrBadMessage, req.Name)
	}
	if err := os.MkdirAll(b.recordDir(), 0o755); err != nil {
		return RecordingState{}, fmt.Errorf("recording: %w", err)
	}
	r := &Recording{state: RecordingState{Name: req.Name, Device: d.serial, Format: format.String(), Started: time.Now()}}
	b.mu.Lock()
	_, dup := b.recs[req.Name]
	if !dup {
		b.recs[req.Name] = r
	}
	b.mu.Unlock()
	if dup {
		return RecordingState{}, fmt.Errorf("%w: there is a recording named %s already", ErrBadMessage, req.Name)
	}
	fail := func(err error) (RecordingState, error) {
		r.stop(ctx)
		b.mu.Lock()
		delete(b.recs, req.Name)
		b.mu.Unlock()
		return RecordingState{}, err
	}
	ext := ".csv"
	if format == record.JSONL {
		ext = ".jsonl"
	}
	rec, err := record.New(filepath.Join(b.recordDir(), req.Name+ext), format)
	if err != nil {
		return fail(err)
	}
	r.mu.Lock()
	r.rec = rec
	r.mu.Unlock()
	for _, p := range req.Paths {
		s, a, err := b.Subscribe(ctx, Message{Type: "subscribe", Path: p, Device: d.serial, ID: ID("recording " + req.Name)}, r.sink)
		if err != nil {
			return fail(err)
		}
		if s == nil {
			return fail(fmt.Errorf("subscribe %s: the device answered %d %s %s", p, a.Envelope.Response, a.Envelope.ResponseString, a.Envelope.Error))
		}
		r.mu.Lock()
		r.subs = append(r.subs, s)
		r.state.Streams = append(r.state.Streams, s.URI())
		r.mu.Unlock()
	}
	return r.snapshot(), nil
}

// sink writes a notification; it runs on a stream's goroutine.
func (r *Recording) sink(e Event) {
	if e.Ended {
		r.fail(fmt.Errorf("%s ended: %s", e.URI, e.Reason))
		return
	}
	if err := r.rec.Write(e.URI, e.Content); err != nil {
		r.fail(err)
		return
	}
	r.count.Add(1)
}

func (r *Recording) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Error == "" {
		r.state.Error = err.Error()
	}
}

// stop ends the subscriptions and closes the files.
func (r *Recording) stop(ctx context.Context) error {
	r.mu.Lock()
	subs := r.subs
	r.subs = nil
	stopped := r.state.Stopped != nil
	if !stopped {
		now := time.Now()
		r.state.Stopped = &now
	}
	rec := r.rec
	r.mu.Unlock()
	if stopped {
		return nil
	}
	var errs []error
	for _, s := range subs {
		if _, err := s.Unsubscribe(ctx); err != nil && !errors.Is(err, ErrBadMessage) {
			errs = append(errs, err)
		}
	}
	if rec != nil {
		errs = append(errs, rec.Close())
	}
	return errors.Join(errs...)
}

// flush writes out what a recording under way holds in its buffers.
func (r *Recording) flush() {
	r.mu.Lock()
	rec := r.rec
	r.mu.Unlock()
	if rec != nil {
		rec.Flush()
	}
}

func (r *Recording) snapshot() RecordingState {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state
	s.Streams = append([]string{}, s.Streams...)
	s.Files = []string{}
	if r.rec != nil {
		s.Files = r.rec.Files()
	}
	s.Downloads = make([]string, len(s.Files))
	for i, f := range s.Files {
		s.Downloads[i] = "api/recordings/" + url.PathEscape(s.Name) + "/files/" + url.PathEscape(filepath.Base(f))
	}
	if len(s.Files) > 0 {
		s.EDF = "api/recordings/" + url.PathEscape(s.Name) + "/files/" + url.PathEscape(s.Name+".edf")
	}
	s.Notifications = r.count.Load()
	return s
}

// StopRecording stops a recording and returns what it wrote.
func (b *Bridge) StopRecording(ctx context.Context, name string) (RecordingState, error) {
	b.mu.Lock()
	r := b.recs[name]
	b.mu.Unlock()
	if r == nil {
		return RecordingState{}, fmt.Errorf("recording %s: %w", name, ErrUnknownRecording)
	}
	err := r.stop(ctx)
	return r.snapshot(), err
}

// RecordingFile returns the path of a file of a recording, by its base
// name (ecg-Meas_ECG_250.csv); only the recording's own files are found.
// A recording under way is flushed first, so the file holds every row
// written so far.
func (b *Bridge) RecordingFile(name, file string) (string, error) {
	b.mu.Lock()
	r := b.recs[name]
	b.mu.Unlock()
	if r == nil {
		return "", fmt.Errorf("recording %s: %w", name, ErrUnknownRecording)
	}
	r.flush()
	st := r.snapshot()
	for _, f := range st.Files {
		if filepath.Base(f) == file {
			return f, nil
		}
	}
	names := make([]string, len(st.Files))
	for i, f := range st.Files {
		names[i] = filepath.Base(f)
	}
	return "", fmt.Errorf("recording %s, file %q: %w; its files: %s", name, file, ErrNoRecordingFile, orNone(names))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none yet"
	}
	return strings.Join(s, ", ")
}

// recordingFile serves a file of a recording as a download. A recording
// under way serves what is written so far.
func (s *Server) recordingFile(w http.ResponseWriter, r *http.Request) {
	if name := r.PathValue("name"); r.PathValue("file") == name+".edf" {
		s.recordingEDF(w, name)
		return
	}
	path, err := s.Bridge.RecordingFile(r.PathValue("name"), r.PathValue("file"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("recording: %w", err))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("recording: %w", err))
		return
	}
	ctype := "text/csv; charset=utf-8"
	if strings.HasSuffix(path, ".jsonl") {
		ctype = "application/jsonl; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filepath.Base(path)}))
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// ErrUnknownRecording is a recording name the bridge does not know.
var ErrUnknownRecording = errors.New("no such recording")

// ErrNoRecordingFile is a file name that is not one of a recording's; it
// is an ErrUnknownRecording too.
var ErrNoRecordingFile = fmt.Errorf("%w file", ErrUnknownRecording)

// Recordings lists the recordings of this run of the bridge, oldest first.
func (b *Bridge) Recordings() []RecordingState {
	b.mu.Lock()
	out := make([]RecordingState, 0, len(b.recs))
	recs := make([]*Recording, 0, len(b.recs))
	for _, r := range b.recs {
		recs = append(recs, r)
	}
	b.mu.Unlock()
	for _, r := range recs {
		out = append(out, r.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// RecordingEDF exports a recording to EDF+ from its files (record.EDF):
// its sampled streams as signals, its events as annotations, and, when a
// stream ended or a write failed, that too at the recording's end. A
// recording under way gives what is written so far.
func (b *Bridge) RecordingEDF(name string) (*edf.File, error) {
	b.mu.Lock()
	r := b.recs[name]
	b.mu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("recording %s: %w", name, ErrUnknownRecording)
	}
	r.flush()
	st := r.snapshot()
	if len(st.Files) == 0 {
		return nil, fmt.Errorf("recording %s: %w: nothing recorded yet", name, ErrNoRecordingFile)
	}
	f, err := record.EDF(st.Files)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", name, err)
	}
	f.Start = st.Started.UTC()
	f.Recording = "X X senseboard_" + st.Device + "_" + name
	if st.Error != "" {
		end := time.Since(st.Started)
		if st.Stopped != nil {
			end = st.Stopped.Sub(st.Started)
		}
		f.Annotations = append(f.Annotations, edf.Annotation{Onset: end, Text: "recording: " + st.Error})
	}
	return f, nil
}

func (s *Server) recordingEDF(w http.ResponseWriter, name string) {
	f, err := s.Bridge.RecordingEDF(name)
	var b []byte
	if err == nil {
		b, err = edf.Marshal(f)
	}
	if err != nil {
		status := statusOf(err)
		if errors.Is(err, edf.ErrInvalid) {
			status = http.StatusUnprocessableEntity
		}
		writeError(w, status, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name + ".edf"}))
	w.Write(b)
}
