package bridge

import (
	"net/http"

	"senseboard/api"
)

// definitions serves the built-in interface definitions.
func (s *Server) definitions(w http.ResponseWriter, r *http.Request) {
	b, err := api.EmbeddedOutline()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	writeJSON(w, http.StatusOK, b)
}

// deviceDefinitions serves the definitions of one device, its apps'
// resources included, as the device gives them over the radio link. It
// uses the device (and so connects to it when the bridge connects on
// demand).
func (s *Server) deviceDefinitions(w http.ResponseWriter, r *http.Request) {
	defs, err := s.Phone.Definitions(r.Context(), r.PathValue("serial"))
	var b []byte
	if err == nil {
		b, err = defs.Set.Outline(defs.Apps)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, b)
}
