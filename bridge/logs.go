package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/client"
	"senseboard/edf"
	"senseboard/logfile"
	"senseboard/resource"
)

// The bridge's calls for a device's offline recording, over the phone path
// to the device's /Mem/DataLogger and /Mem/Logbook resources:
//
//	GET    /api/devices/{serial}/logs                 the logs and the data logger's state
//	GET    /api/devices/{serial}/logs/{id}?format=F   a log: sbem (as stored), csv, json or edf
//	GET    /api/devices/{serial}/logs/{id}/preview    what a log holds, decoded
//	DELETE /api/devices/{serial}/logs                 erase every log
//	DELETE /api/devices/{serial}/logs/{id}            erase one log
//	POST   /api/devices/{serial}/logging              {"paths": [...]}: configure and start
//	POST   /api/devices/{serial}/logging/stop         stop
//
// A log is read by subscription to /Mem/Logbook/byId/{LogId}/Data, the
// family's fast transfer: a GET answer is one radio-link frame of at most
// 64 KiB, which a log outgrows.

// LogEntry is a log the device keeps.
type LogEntry struct {
	ID uint32 `json:"id"`
	// Modified is when the log last grew, in UTC; ModificationTimestamp is
	// the same in seconds since 1970, as the device gives it.
	Modified              time.Time `json:"modified"`
	ModificationTimestamp uint32    `json:"modificationTimestamp"`
	Size                  uint64    `json:"size"`
	// Downloads are the log's addresses on the bridge by format (sbem,
	// csv, json, edf), relative to its root.
	Downloads map[string]string `json:"downloads"`
}

// Logs is a device's logs and its data logger.
type Logs struct {
	Device string     `json:"device"`
	Logs   []LogEntry `json:"logs"`
	// State is the data logger's state: 2 READY, 3 LOGGING (1 INVALID);
	// StateName names it.
	State     int      `json:"state"`
	StateName string   `json:"stateName"`
	Paths     []string `json:"paths"`
	// Open says a log is being written; Full that logging stopped because
	// the log filled the storage.
	Open bool `json:"open"`
	Full bool `json:"full"`
}

// LogFormats are the formats a log downloads in.
var LogFormats = []string{"sbem", "csv", "json", "edf"}

// DeviceRefusal is a device's non-2xx answer to a request the bridge made
// for a log call. The HTTP status follows it: 400, 404, 409 (for the
// device's 403 and 409) and 507 pass through; others are 502.
type DeviceRefusal struct {
	Device string
	Op     resource.Op
	Path   string
	Status int
	Reason string // the device's error text
}

func (e *DeviceRefusal) Error() string {
	return fmt.Sprintf("device %s: %s %s: %d %s", e.Device, strings.ToUpper(e.Op.String()), e.Path, e.Status, e.Reason)
}

// httpStatus is the bridge's answer to the refusal.
func (e *DeviceRefusal) httpStatus() int {
	switch e.Status {
	case 400, 404, 409, 507:
		return e.Status
	case 403:
		return http.StatusConflict
	}
	return http.StatusBadGateway
}

// ErrLogging is a start of a data logger that is logging already.
var ErrLogging = errors.New("the data logger is already logging")

// ErrLogTransfer is a log read by subscription that broke off or lost bytes.
var ErrLogTransfer = errors.New("log transfer failed")

// ErrBadLogID is a log id that is not a whole number from 1.
var ErrBadLogID = fmt.Errorf("%w: bad log id", ErrBadMessage)

// logStatus maps an error of a log call to an HTTP status.
func logStatus(err error) int {
	var dr *DeviceRefusal
	if errors.As(err, &dr) {
		return dr.httpStatus()
	}
	switch {
	case errors.Is(err, ErrLogTransfer):
		return http.StatusBadGateway
	case errors.Is(err, ErrLogging):
		return http.StatusConflict
	}
	return statusOf(err)
}

// ParseLogID reads a log id: a whole number from 1 to 4294967295.
func ParseLogID(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%w %q: log ids are whole numbers from 1 to %d; GET /api/devices/{serial}/logs lists them", ErrBadLogID, s, uint32(math.MaxUint32))
	}
	return uint32(v), nil
}

// call makes one request of a device and returns its content; a non-2xx
// answer is a *DeviceRefusal.
func (b *Bridge) call(ctx context.Context, serial string, op resource.Op, path string, value any) (json.RawMessage, error) {
	m := Message{Type: op.String(), Path: path, Device: serial}
	if value != nil {
		raw, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		m.Value = raw
	}
	a, err := b.Do(ctx, m)
	if err != nil {
		return nil, err
	}
	env := a.Envelope
	if !env.OK() {
		reason := env.Error
		if reason == "" {
			reason = env.ResponseString
		}
		return nil, &DeviceRefusal{Device: a.Device, Op: op, Path: path, Status: env.Response, Reason: reason}
	}
	return json.RawMessage(env.Content), nil
}

var stateNames = map[int]string{1: "INVALID", 2: "READY", 3: "LOGGING"}

// Logs lists a device's logs (every page of /Mem/Logbook/Entries) with
// its data logger's state and configuration.
func (b *Bridge) Logs(ctx context.Context, serial string) (*Logs, error) {
	out := &Logs{Device: serial, Logs: []LogEntry{}, Paths: []string{}}
	var after *uint32
	for {
		var page struct {
			Elements []struct {
				ID       uint32 `json:"Id"`
				Modified uint32 `json:"ModificationTimestamp"`
				Size     uint64 `json:"Size"`
			} `json:"elements"`
		}
		var value any
		if after != nil {
			value = *after
		}
		raw, err := b.call(ctx, serial, resource.Get, "/Mem/Logbook/Entries", value)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("device %s: /Mem/Logbook/Entries: %w", serial, err)
		}
		if len(page.Elements) == 0 {
			break
		}
		for _, e := range page.Elements {
			out.Logs = append(out.Logs, LogEntry{ID: e.ID, ModificationTimestamp: e.Modified, Size: e.Size,
				Modified: time.Unix(int64(e.Modified), 0).UTC(), Downloads: logDownloads(serial, e.ID)})
		}
		last := page.Elements[len(page.Elements)-1].ID
		if after != nil && last <= *after {
			break // a device that pages wrong must not loop the bridge
		}
		after = &last
	}
	raw, err := b.call(ctx, serial, resource.Get, "/Mem/DataLogger/State", nil)
	if err != nil {
		return nil, err
	}
	json.Unmarshal(raw, &out.State)
	out.StateName = stateNames[out.State]
	var cfg loggerConfig
	if raw, err = b.call(ctx, serial, resource.Get, "/Mem/DataLogger/Config", nil); err != nil {
		return nil, err
	}
	json.Unmarshal(raw, &cfg)
	for _, e := range cfg.DataEntries.DataEntry {
		out.Paths = append(out.Paths, e.Path)
	}
	for path, v := range map[string]*bool{"/Mem/Logbook/IsOpen": &out.Open, "/Mem/Logbook/IsFull": &out.Full} {
		if raw, err = b.call(ctx, serial, resource.Get, path, nil); err != nil {
			return nil, err
		}
		json.Unmarshal(raw, v)
	}
	return out, nil
}

func logDownloads(serial string, id uint32) map[string]string {
	m := map[string]string{}
	for _, f := range LogFormats {
		m[f] = "api/devices/" + url.PathEscape(serial) + "/logs/" + strconv.FormatUint(uint64(id), 10) + "?format=" + f
	}
	return m
}

type loggerConfig struct {
	DataEntries struct {
		DataEntry []struct {
			Path string `json:"path"`
		} `json:"dataEntry"`
	} `json:"dataEntries"`
}

// DeleteLogs erases every log of a device.
func (b *Bridge) DeleteLogs(ctx context.Context, serial string) error {
	_, err := b.call(ctx, serial, resource.Delete, "/Mem/Logbook/Entries", nil)
	return err
}

// DeleteLog erases one log of a device.
func (b *Bridge) DeleteLog(ctx context.Context, serial string, id uint32) error {
	_, err := b.call(ctx, serial, resource.Delete, "/Mem/Logbook/byId/"+strconv.FormatUint(uint64(id), 10), nil)
	return err
}

// StartLogging configures the data logger with paths (unless there are
// none: then it keeps its configuration) and starts it.
func (b *Bridge) StartLogging(ctx context.Context, serial string, paths []string) error {
	raw, err := b.call(ctx, serial, resource.Get, "/Mem/DataLogger/State", nil)
	if err != nil {
		return err
	}
	if state, _ := strconv.Atoi(string(raw)); state == 3 {
		return fmt.Errorf("device %s: %w; stop it first (POST /api/devices/%s/logging/stop)", serial, ErrLogging, serial)
	}
	if paths != nil {
		var cfg loggerConfig
		for _, p := range paths {
			cfg.DataEntries.DataEntry = append(cfg.DataEntries.DataEntry, struct {
				Path string `json:"path"`
			}{p})
		}
		if _, err := b.call(ctx, serial, resource.Put, "/Mem/DataLogger/Config", cfg); err != nil {
			return err
		}
	}
	_, err = b.call(ctx, serial, resource.Put, "/Mem/DataLogger/State", 3)
	return err
}

// StopLogging stops the data logger; the log is closed.
func (b *Bridge) StopLogging(ctx context.Context, serial string) error {
	_, err := b.call(ctx, serial, resource.Put, "/Mem/DataLogger/State", 2)
	return err
}

// keyedMutex is a mutex per key; the zero value is ready.
type keyedMutex struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// lock waits until key is free or ctx ends; unlock frees it.
func (k *keyedMutex) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		k.mu.Lock()
		if k.held == nil {
			k.held = map[string]chan struct{}{}
		}
		ch, busy := k.held[key]
		if !busy {
			ch = make(chan struct{})
			k.held[key] = ch
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.held, key)
				k.mu.Unlock()
				close(ch)
			}, nil
		}
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ReadLog reads a log of a device by subscription to its data: the whole
// SBEM file. Reads of the same log wait for each other (the device serves
// one subscription per resource and client). Each notification must come
// within the bridge's exchange timeout.
func (b *Bridge) ReadLog(ctx context.Context, serial string, id uint32) ([]byte, error) {
	d, err := b.device(serial)
	if err != nil {
		return nil, err
	}
	unlock, err := b.logReads.lock(ctx, serial+"/"+strconv.FormatUint(uint64(id), 10))
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, done, err := d.use(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	path := "/Mem/Logbook/byId/" + strconv.FormatUint(uint64(id), 10) + "/Data"
	sctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	sub, env, err := c.Subscribe(sctx, path)
	cancel()
	if err != nil {
		return nil, deviceError(d, err)
	}
	if sub == nil {
		return nil, &DeviceRefusal{Device: serial, Op: resource.Subscribe, Path: path, Status: env.Response, Reason: env.Error}
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.Timeout)
		defer cancel()
		sub.Unsubscribe(uctx)
	}()
	var data []byte
	timer := time.NewTimer(b.cfg.Timeout)
	defer timer.Stop()
	for {
		select {
		case n, ok := <-sub.C():
			if !ok {
				return nil, fmt.Errorf("device %s: log %d: %w after %d bytes: the subscription ended: %v", serial, id, ErrLogTransfer, len(data), sub.Err())
			}
			var note struct {
				Offset *uint32 `json:"offset"`
				Bytes  []int   `json:"bytes"`
			}
			if err := json.Unmarshal(n.Payload, &note); err != nil || note.Offset == nil {
				return nil, fmt.Errorf("device %s: log %d: %w: a notification that is not {offset, bytes}: %.80s", serial, id, ErrLogTransfer, n.Payload)
			}
			if int(*note.Offset) != len(data) {
				return nil, fmt.Errorf("device %s: log %d: %w: bytes at offset %d after %d bytes (%d notifications lost); read it again", serial, id, ErrLogTransfer, *note.Offset, len(data), sub.Dropped())
			}
			if len(note.Bytes) == 0 {
				return data, nil
			}
			for _, v := range note.Bytes {
				data = append(data, byte(v))
			}
			timer.Reset(b.cfg.Timeout)
		case <-timer.C:
			return nil, fmt.Errorf("device %s: log %d: %w: nothing for %v after %d bytes", serial, id, ErrLogTransfer, b.cfg.Timeout, len(data))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.Done():
			return nil, fmt.Errorf("device %s: log %d: %w: %w", serial, id, ErrLogTransfer, client.ErrClosed)
		}
	}
}

// LogPreview is what a log holds, decoded.
type LogPreview struct {
	Device  string          `json:"device"`
	ID      uint32          `json:"id"`
	Size    int             `json:"size"`
	Records int             `json:"records"`
	Streams []StreamSummary `json:"streams"`
	// Head are the first records, at most PreviewRecords.
	Head []logfile.Record `json:"head"`
}

// StreamSummary sums up one stream of a log.
type StreamSummary struct {
	Stream  string `json:"stream"`
	Records int    `json:"records"`
	// Values counts the values of each field, in the log's order.
	Fields []FieldCount `json:"fields"`
	// First and Last are the device times (ms) of its first and last
	// records with a timestamp.
	First *float64 `json:"first,omitempty"`
	Last  *float64 `json:"last,omitempty"`
}

// FieldCount is how many values a field has in a log.
type FieldCount struct {
	Name   string `json:"name"`
	Values int    `json:"values"`
}

// PreviewRecords is how many records a preview shows.
const PreviewRecords = 20

// Preview decodes a log into its summary.
func Preview(serial string, id uint32, log []byte) (*LogPreview, error) {
	recs, err := logfile.Decode(log)
	if err != nil {
		return nil, fmt.Errorf("device %s: log %d does not decode: %w", serial, id, err)
	}
	p := &LogPreview{Device: serial, ID: id, Size: len(log), Records: len(recs), Streams: []StreamSummary{}, Head: recs[:min(len(recs), PreviewRecords)]}
	if p.Head == nil {
		p.Head = []logfile.Record{}
	}
	index := map[string]int{}
	for _, r := range recs {
		i, ok := index[r.Stream]
		if !ok {
			i = len(p.Streams)
			index[r.Stream] = i
			p.Streams = append(p.Streams, StreamSummary{Stream: r.Stream})
		}
		s := &p.Streams[i]
		s.Records++
		if r.Timestamp != nil {
			if s.First == nil {
				s.First = r.Timestamp
			}
			s.Last = r.Timestamp
		}
		for _, f := range r.Fields {
			k := 0
			for k < len(s.Fields) && s.Fields[k].Name != f.Name {
				k++
			}
			if k == len(s.Fields) {
				s.Fields = append(s.Fields, FieldCount{Name: f.Name})
			}
			s.Fields[k].Values += len(f.Values)
		}
	}
	return p, nil
}

// logRoutes installs the log calls.
func (s *Server) logRoutes(api func(string, http.HandlerFunc)) {
	api("GET /api/devices/{serial}/logs", s.listLogs)
	api("DELETE /api/devices/{serial}/logs", s.deleteLogs)
	api("GET /api/devices/{serial}/logs/{id}", perWrite(s.downloadLog))
	api("DELETE /api/devices/{serial}/logs/{id}", s.deleteLog)
	api("GET /api/devices/{serial}/logs/{id}/preview", s.previewLog)
	api("POST /api/devices/{serial}/logging", s.startLogging)
	api("POST /api/devices/{serial}/logging/stop", s.stopLogging)
}

func (s *Server) listLogs(w http.ResponseWriter, r *http.Request) {
	logs, err := s.Bridge.Logs(r.Context(), r.PathValue("serial"))
	if err != nil {
		writeError(w, logStatus(err), err)
		return
	}
	writeValue(w, logs)
}

// answerLogs answers a call that changed something with the listing.
func (s *Server) answerLogs(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		writeError(w, logStatus(err), err)
		return
	}
	s.listLogs(w, r)
}

func (s *Server) deleteLogs(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	s.answerLogs(w, r, s.Bridge.DeleteLogs(r.Context(), r.PathValue("serial")))
}

func (s *Server) deleteLog(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	id, err := ParseLogID(r.PathValue("id"))
	if err == nil {
		err = s.Bridge.DeleteLog(r.Context(), r.PathValue("serial"), id)
	}
	s.answerLogs(w, r, err)
}

func (s *Server) startLogging(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Paths []string `json:"paths"`
	}
	if !decodeBody(w, r, &in, `{"paths": ["/Meas/Acc/52", "/Meas/HR", "/Time/Detailed"]} (up to 8 paths; none keeps the configuration)`) {
		return
	}
	s.answerLogs(w, r, s.Bridge.StartLogging(r.Context(), r.PathValue("serial"), in.Paths))
}

func (s *Server) stopLogging(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	s.answerLogs(w, r, s.Bridge.StopLogging(r.Context(), r.PathValue("serial")))
}

// readLog reads the log a request names, or answers the error.
func (s *Server) readLog(w http.ResponseWriter, r *http.Request) (serial string, id uint32, log []byte, ok bool) {
	serial = r.PathValue("serial")
	id, err := ParseLogID(r.PathValue("id"))
	if err == nil {
		log, err = s.Bridge.ReadLog(r.Context(), serial, id)
	}
	if err != nil {
		writeError(w, logStatus(err), err)
		return "", 0, nil, false
	}
	return serial, id, log, true
}

func (s *Server) previewLog(w http.ResponseWriter, r *http.Request) {
	serial, id, log, ok := s.readLog(w, r)
	if !ok {
		return
	}
	p, err := Preview(serial, id, log)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err)
		return
	}
	writeValue(w, p)
}

// downloadLog serves a log as a download in the format the query names.
func (s *Server) downloadLog(w http.ResponseWriter, r *http.Request) {
	format := strings.ToLower(r.URL.Query().Get("format"))
	if format == "" {
		format = "sbem"
	}
	if !slices.Contains(LogFormats, format) {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: format %q: %s", ErrBadMessage, r.URL.Query().Get("format"), strings.Join(LogFormats, ", ")))
		return
	}
	serial, id, log, ok := s.readLog(w, r)
	if !ok {
		return
	}
	var body bytes.Buffer
	var err error
	ctype := map[string]string{"sbem": "application/octet-stream", "csv": "text/csv; charset=utf-8",
		"json": "application/json", "edf": "application/octet-stream"}[format]
	switch format {
	case "sbem":
		body.Write(log)
	case "csv":
		err = logfile.WriteCSV(&body, log)
	case "json":
		err = logfile.WriteJSON(&body, log)
	case "edf":
		var f *edf.File
		if f, err = logfile.EDF(log); err == nil {
			f.Recording = "X X senseboard_" + serial + "_log_" + strconv.FormatUint(uint64(id), 10)
			var b []byte
			if b, err = edf.Marshal(f); err == nil {
				body.Write(b)
			}
		}
	}
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, fmt.Errorf("device %s: log %d as %s: %w", serial, id, format, err))
		return
	}
	name := fmt.Sprintf("%s-log%d.%s", serial, id, format)
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.Write(body.Bytes())
}
