package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/renameio/v2"

	"senseboard/edf"
	"senseboard/fault"
)

// Library is a program's recordings, such as the phone bridge's: each
// records streams of one device, under a name of its own, in one
// directory. It is safe for concurrent use.
type Library struct {
	dir  string
	mu   sync.Mutex
	recs map[string]*Recording
}

// NewLibrary returns a library of recordings in dir, which is made when
// the first recording starts.
func NewLibrary(dir string) *Library {
	return &Library{dir: dir, recs: map[string]*Recording{}}
}

// Dir returns the library's directory.
func (l *Library) Dir() string { return l.dir }

// State describes a recording.
type State struct {
	Name    string
	Device  string
	Format  Format
	Streams []string
	Files   []string
	Started time.Time
	Stopped *time.Time
	// Notifications counts the notifications written.
	Notifications int64
	// Error is the first failure to write, or a stream that ended.
	Error string
}

// Recording is a recording under way or done.
type Recording struct {
	rec   *Recorder
	count atomic.Int64

	mu    sync.Mutex
	state State
	stops []func(context.Context) error // of the streams it holds

	base string // the path of its files, without their extension

	// the device's faults during the recording (SetFaults)
	faults     func() []fault.Record
	faultsFrom int          // the first id that started during the recording
	faultsOn   map[int]bool // the ids active when it started
	faultsFile string       // written, "" until a fault is
}

// Errors of a Library.
var (
	// ErrExists is a recording's name that the library has already.
	ErrExists = errors.New("there is a recording of that name already")
	// ErrUnknown is a name the library has no recording of.
	ErrUnknown = errors.New("no such recording")
	// ErrNoFile is a file name that is not one of a recording's; it is an
	// ErrUnknown too.
	ErrNoFile = fmt.Errorf("%w file", ErrUnknown)
)

var recordingName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether name may name a recording's files: up to 64
// letters, digits, '.', '_' and '-', the first a letter or a digit.
func ValidName(name string) bool { return recordingName.MatchString(name) }

// DefaultName names a recording of device that starts at t.
func DefaultName(device string, t time.Time) string {
	return t.Format("20060102-150405") + "-" + device
}

// Start starts a recording of streams of device, in format, named name
// (ValidName), which Write then fills.
func (l *Library) Start(name, device string, format Format) (*Recording, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("recording name %q: up to 64 letters, digits, '.', '_' and '-'", name)
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	r := &Recording{state: State{Name: name, Device: device, Format: format, Started: time.Now()}}
	l.mu.Lock()
	_, dup := l.recs[name]
	if !dup {
		l.recs[name] = r
	}
	l.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("recording %s: %w", name, ErrExists)
	}
	ext := ".csv"
	if format == JSONL {
		ext = ".jsonl"
	}
	rec, err := New(filepath.Join(l.dir, name+ext), format)
	if err != nil {
		l.Forget(name)
		return nil, err
	}
	r.mu.Lock()
	r.rec, r.base = rec, filepath.Join(l.dir, name)
	r.mu.Unlock()
	return r, nil
}

// Forget stops a recording and takes it out of the library, as one that
// could not start.
func (l *Library) Forget(name string) {
	l.mu.Lock()
	r := l.recs[name]
	delete(l.recs, name)
	l.mu.Unlock()
	if r != nil {
		r.Stop(context.Background())
	}
}

// Recording returns the recording named name.
func (l *Library) Recording(name string) (*Recording, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.recs[name]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("recording %s: %w", name, ErrUnknown)
}

// States lists the library's recordings, oldest first.
func (l *Library) States() []State {
	l.mu.Lock()
	recs := make([]*Recording, 0, len(l.recs))
	for _, r := range l.recs {
		recs = append(recs, r)
	}
	l.mu.Unlock()
	out := make([]State, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.State())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// Close stops every recording.
func (l *Library) Close() {
	l.mu.Lock()
	recs := make([]*Recording, 0, len(l.recs))
	for _, r := range l.recs {
		recs = append(recs, r)
	}
	l.mu.Unlock()
	for _, r := range recs {
		r.Stop(context.Background())
	}
}

// Hold adds a stream the recording holds: stop ends it when the
// recording stops.
func (r *Recording) Hold(uri string, stop func(context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.Streams = append(r.state.Streams, uri)
	r.stops = append(r.stops, stop)
}

// SetFaults gives the ground truth of the recorded device's field faults
// (package fault): the faults active now and those that start until the
// recording stops are written next to its files as <name>.faults.jsonl
// (fault.WriteJSONL), and its EDF+ export annotates them.
func (r *Recording) SetFaults(list func() []fault.Record) {
	now := list()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults, r.faultsFrom, r.faultsOn = list, len(now)+1, map[int]bool{}
	for _, rec := range now {
		if rec.Active() {
			r.faultsOn[rec.ID] = true
		}
	}
}

// writeFaults writes the faults of the recording's time next to its
// files, when it has any, and returns the path; a failure is kept in the
// recording's state.
func (r *Recording) writeFaults() {
	r.mu.Lock()
	list, from, on, stopped := r.faults, r.faultsFrom, r.faultsOn, r.state.Stopped
	base := r.base
	r.mu.Unlock()
	if list == nil || base == "" {
		return
	}
	var recs []fault.Record
	for _, rec := range list() {
		if rec.ID >= from || on[rec.ID] {
			recs = append(recs, rec)
		}
	}
	if len(recs) == 0 {
		return
	}
	path := base + FaultsExt
	var b bytes.Buffer
	fault.WriteJSONL(&b, recs)
	if err := renameio.WriteFile(path, b.Bytes(), 0o644); err != nil {
		r.Fail(fmt.Errorf("recording: the faults' ground truth: %w", err))
		return
	}
	r.mu.Lock()
	r.faultsFile = path
	if stopped != nil {
		r.faults = nil // written for good
	}
	r.mu.Unlock()
}

// FaultsExt ends the name of a recording's file of the faults' ground
// truth.
const FaultsExt = ".faults.jsonl"

// Write writes a notification of the stream uri; a failure is kept in the
// recording's state.
func (r *Recording) Write(uri string, content []byte) {
	if err := r.rec.Write(uri, content); err != nil {
		r.Fail(err)
		return
	}
	r.count.Add(1)
}

// Fail keeps the first failure of the recording, such as a stream that
// ended.
func (r *Recording) Fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Error == "" {
		r.state.Error = err.Error()
	}
}

// Stop ends the streams it holds and closes the files; a recording that
// stopped already stops again without an error.
func (r *Recording) Stop(ctx context.Context) error {
	r.mu.Lock()
	stops := r.stops
	r.stops = nil
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
	for _, stop := range stops {
		errs = append(errs, stop(ctx))
	}
	if rec != nil {
		errs = append(errs, rec.Close())
	}
	r.writeFaults()
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
	r.writeFaults()
}

// State returns the recording's state.
func (r *Recording) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state
	s.Streams = append([]string{}, s.Streams...)
	s.Files = []string{}
	if r.rec != nil {
		s.Files = r.rec.Files()
	}
	if r.faultsFile != "" {
		s.Files = append(s.Files, r.faultsFile)
	}
	s.Notifications = r.count.Load()
	return s
}

// File returns the path of a file of the recording, by its base name
// (ecg-Meas_ECG_250.csv); only the recording's own files are found. A
// recording under way is flushed first, so the file holds every row
// written so far.
func (r *Recording) File(file string) (string, error) {
	r.flush()
	st := r.State()
	for _, f := range st.Files {
		if filepath.Base(f) == file {
			return f, nil
		}
	}
	names := make([]string, len(st.Files))
	for i, f := range st.Files {
		names[i] = filepath.Base(f)
	}
	return "", fmt.Errorf("recording %s, file %q: %w; its files: %s", st.Name, file, ErrNoFile, orNone(names))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none yet"
	}
	return strings.Join(s, ", ")
}

// EDF exports the recording to EDF+ from its files (EDF): its sampled
// streams as signals, its events as annotations, and, when a stream ended
// or a write failed, that too at the recording's end. A recording under
// way gives what is written so far.
func (r *Recording) EDF() (*edf.File, error) {
	r.flush()
	st := r.State()
	if len(st.Files) == 0 {
		return nil, fmt.Errorf("recording %s: %w: nothing recorded yet", st.Name, ErrNoFile)
	}
	f, err := EDF(st.Files)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", st.Name, err)
	}
	f.Start = st.Started.UTC()
	f.Recording = "X X senseboard_" + st.Device + "_" + st.Name
	if st.Error != "" {
		end := time.Since(st.Started)
		if st.Stopped != nil {
			end = st.Stopped.Sub(st.Started)
		}
		f.Annotations = append(f.Annotations, edf.Annotation{Onset: end, Text: "recording: " + st.Error})
	}
	return f, nil
}
