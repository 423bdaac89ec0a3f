package bridge

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"senseboard/logfile"
	"senseboard/phone"
)

// The bridge's calls for a device's offline recording, through the phone
// (its Logs, ReadLog and others) to the device's /Mem/DataLogger and
// /Mem/Logbook resources:
//
//	GET    /api/devices/{serial}/logs                 the logs and the data logger's state
//	GET    /api/devices/{serial}/logs/{id}?format=F   a log: sbem (as stored), csv, json or edf
//	GET    /api/devices/{serial}/logs/{id}/preview    what a log holds, decoded
//	DELETE /api/devices/{serial}/logs                 erase every log
//	DELETE /api/devices/{serial}/logs/{id}            erase one log
//	POST   /api/devices/{serial}/logging              {"paths": [...]}: configure and start
//	POST   /api/devices/{serial}/logging/stop         stop

// LogEntry is a log the device keeps, with its downloads.
type LogEntry struct {
	phone.LogEntry
	// Downloads are the log's addresses on the bridge by format (sbem,
	// csv, json, edf), relative to its root.
	Downloads map[string]string `json:"downloads"`
}

// Logs is a device's logs and its data logger, as GET
// /api/devices/{serial}/logs gives them.
type Logs struct {
	Device string     `json:"device"`
	Logs   []LogEntry `json:"logs"`
	phone.Logger
}

// ErrBadLogID is a log id that is not a whole number from 1.
var ErrBadLogID = fmt.Errorf("%w: bad log id", ErrBadMessage)

// logStatus maps an error of a log call to an HTTP status: a device's
// refusal passes through as 400, 404, 409 (for the device's 403 and 409
// too) and 507, and is 502 otherwise.
func logStatus(err error) int {
	var dr *phone.DeviceRefusal
	if errors.As(err, &dr) {
		switch dr.Status {
		case 400, 404, 409, 507:
			return dr.Status
		case 403:
			return http.StatusConflict
		}
		return http.StatusBadGateway
	}
	switch {
	case errors.Is(err, phone.ErrLogTransfer):
		return http.StatusBadGateway
	case errors.Is(err, phone.ErrLogging):
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
	logs, err := s.Phone.Logs(r.Context(), r.PathValue("serial"))
	if err != nil {
		writeError(w, logStatus(err), err)
		return
	}
	out := Logs{Device: logs.Device, Logs: make([]LogEntry, len(logs.Logs)), Logger: logs.Logger}
	for i, e := range logs.Logs {
		out.Logs[i] = LogEntry{LogEntry: e, Downloads: map[string]string{}}
		for _, f := range logfile.Formats {
			out.Logs[i].Downloads[f] = "api/devices/" + url.PathEscape(logs.Device) + "/logs/" + strconv.FormatUint(uint64(e.ID), 10) + "?format=" + f
		}
	}
	writeValue(w, out)
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
	s.answerLogs(w, r, s.Phone.DeleteLogs(r.Context(), r.PathValue("serial")))
}

func (s *Server) deleteLog(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	id, err := ParseLogID(r.PathValue("id"))
	if err == nil {
		err = s.Phone.DeleteLog(r.Context(), r.PathValue("serial"), id)
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
	s.answerLogs(w, r, s.Phone.StartLogging(r.Context(), r.PathValue("serial"), in.Paths))
}

func (s *Server) stopLogging(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	s.answerLogs(w, r, s.Phone.StopLogging(r.Context(), r.PathValue("serial")))
}

// readLog reads the log a request names, or answers the error.
func (s *Server) readLog(w http.ResponseWriter, r *http.Request) (serial string, id uint32, log []byte, ok bool) {
	serial = r.PathValue("serial")
	id, err := ParseLogID(r.PathValue("id"))
	if err == nil {
		log, err = s.Phone.ReadLog(r.Context(), serial, id)
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
	p, err := logfile.NewPreview(serial, id, log)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, fmt.Errorf("device %s: log %d does not decode: %w", serial, id, err))
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
	ctype, ok := logfile.MediaType(format)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: format %q: %s", ErrBadMessage, r.URL.Query().Get("format"), strings.Join(logfile.Formats, ", ")))
		return
	}
	serial, id, log, ok := s.readLog(w, r)
	if !ok {
		return
	}
	var body bytes.Buffer
	if err := logfile.Export(&body, log, format, "X X senseboard_"+serial+"_log_"+strconv.FormatUint(uint64(id), 10)); err != nil {
		writeError(w, http.StatusUnprocessableEntity, fmt.Errorf("device %s: log %d as %s: %w", serial, id, format, err))
		return
	}
	name := fmt.Sprintf("%s-log%d.%s", serial, id, format)
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.Write(body.Bytes())
}
