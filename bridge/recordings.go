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
	"strings"
	"time"

	"senseboard/edf"
	"senseboard/fault"
	"senseboard/phone"
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

// recordingState describes a recording with its addresses on the bridge.
func recordingState(st record.State) RecordingState {
	s := RecordingState{Name: st.Name, Device: st.Device, Format: st.Format.String(), Streams: st.Streams, Files: st.Files,
		Downloads: make([]string, len(st.Files)), Started: st.Started, Stopped: st.Stopped, Notifications: st.Notifications, Error: st.Error}
	for i, f := range st.Files {
		s.Downloads[i] = "api/recordings/" + url.PathEscape(s.Name) + "/files/" + url.PathEscape(filepath.Base(f))
	}
	if len(s.Files) > 0 {
		s.EDF = "api/recordings/" + url.PathEscape(s.Name) + "/files/" + url.PathEscape(s.Name+".edf")
	}
	return s
}

// startRecording subscribes to the streams and records their
// notifications until the recording is stopped.
func (s *Server) startRecording(ctx context.Context, req RecordingRequest) (RecordingState, error) {
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
	serial, _, err := s.route(&Message{Type: "subscribe", Path: req.Paths[0], Device: req.Device})
	if err != nil {
		return RecordingState{}, err
	}
	if req.Name == "" {
		req.Name = record.DefaultName(serial, time.Now())
	}
	if !record.ValidName(req.Name) {
		return RecordingState{}, fmt.Errorf("%w: recording name %q: up to 64 letters, digits, '.', '_' and '-'", ErrBadMessage, req.Name)
	}
	r, err := s.Recordings.Start(req.Name, serial, format)
	if errors.Is(err, record.ErrExists) {
		return RecordingState{}, fmt.Errorf("%w: there is a recording named %s already", ErrBadMessage, req.Name)
	} else if err != nil {
		return RecordingState{}, err
	}
	if _, err := s.Phone.Faults(serial); err == nil { // a device of this program: its ground truth too
		r.SetFaults(func() []fault.Record {
			list, _ := s.Phone.Faults(serial)
			return list
		})
	}
	for _, p := range req.Paths {
		sub, a, err := s.subscribe(ctx, Message{Type: "subscribe", Path: p, Device: serial}, func(e phone.Event) {
			if e.Ended {
				r.Fail(fmt.Errorf("%s ended: %s", e.URI, e.Reason))
				return
			}
			r.Write(e.URI, e.Content)
		})
		if err == nil && sub == nil {
			err = fmt.Errorf("subscribe %s: %s", p, a.Envelope.Refusal())
		}
		if err != nil {
			s.Recordings.Forget(req.Name)
			return RecordingState{}, err
		}
		r.Hold(sub.URI(), func(ctx context.Context) error {
			if _, err := sub.Unsubscribe(ctx); !errors.Is(err, phone.ErrEnded) {
				return err
			}
			return nil
		})
	}
	return recordingState(r.State()), nil
}

func (s *Server) recordings(w http.ResponseWriter, r *http.Request) {
	states := s.Recordings.States()
	out := make([]RecordingState, len(states))
	for i, st := range states {
		out[i] = recordingState(st)
	}
	writeValue(w, out)
}

func (s *Server) startRecordingCall(w http.ResponseWriter, r *http.Request) {
	var req RecordingRequest
	if !decodeBody(w, r, &req, `{"paths": ["/Meas/Acc/104"], "format": "csv", "device": "000123", "name": "walk1"}`) {
		return
	}
	st, err := s.startRecording(r.Context(), req)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeValue(w, st)
}

func (s *Server) stopRecording(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	rec, err := s.Recordings.Recording(r.PathValue("name"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	err = rec.Stop(r.Context())
	st := recordingState(rec.State())
	if err != nil {
		st.Error = err.Error()
	}
	writeValue(w, st)
}

// recordingFile serves a file of a recording as a download, or the
// recording exported to EDF+. A recording under way serves what is
// written so far.
func (s *Server) recordingFile(w http.ResponseWriter, r *http.Request) {
	rec, err := s.Recordings.Recording(r.PathValue("name"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if name := r.PathValue("name"); r.PathValue("file") == name+".edf" {
		s.recordingEDF(w, name, rec)
		return
	}
	path, err := rec.File(r.PathValue("file"))
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

func (s *Server) recordingEDF(w http.ResponseWriter, name string, rec *record.Recording) {
	f, err := rec.EDF()
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
