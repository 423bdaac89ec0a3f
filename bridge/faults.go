package bridge

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"senseboard/fault"
	"senseboard/phone"
)

// The field faults of a device of the bridge's program (docs/faults.md):
// POST starts one and answers with its record, GET lists every fault of
// the device (its ground truth), DELETE ends one. GET /api/faults
// describes the faults and their parameters, for forms.

func (s *Server) describeFaults(w http.ResponseWriter, r *http.Request) {
	writeValue(w, fault.Describe())
}

func (s *Server) injectFault(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	rec, err := s.Phone.InjectFault(r.PathValue("serial"), b)
	if err != nil {
		writeError(w, faultStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, rec.AppendJSON(nil))
}

func (s *Server) listFaults(w http.ResponseWriter, r *http.Request) {
	recs, err := s.Phone.Faults(r.PathValue("serial"))
	if err != nil {
		writeError(w, faultStatus(err), err)
		return
	}
	b := []byte{'['}
	for i := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = recs[i].AppendJSON(b)
	}
	writeJSON(w, http.StatusOK, append(b, ']'))
}

func (s *Server) endFault(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 1 {
		writeError(w, http.StatusNotFound, fmt.Errorf("fault %q: %w; a fault's id is a whole number from 1, as POST answered it", r.PathValue("id"), fault.ErrNoFault))
		return
	}
	rec, err := s.Phone.EndFault(r.PathValue("serial"), id)
	if err != nil {
		writeError(w, faultStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, rec.AppendJSON(nil))
}

// faultStatus maps an error of the faults' calls to an HTTP status.
func faultStatus(err error) int {
	var ee *phone.EventError
	switch {
	case errors.As(err, &ee):
		return http.StatusBadRequest
	case errors.Is(err, fault.ErrNoFault), errors.Is(err, phone.ErrUnknownDevice):
		return http.StatusNotFound
	}
	return http.StatusConflict // ended already; a device of another program
}
