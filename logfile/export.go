package logfile

import (
	"fmt"
	"io"

	"senseboard/edf"
)

// Formats are the formats a log exports to, by name: sbem (as stored),
// csv, json and edf.
var Formats = []string{"sbem", "csv", "json", "edf"}

// mediaTypes are the formats' media types.
var mediaTypes = map[string]string{"sbem": "application/octet-stream", "csv": "text/csv; charset=utf-8",
	"json": "application/json", "edf": "application/octet-stream"}

// MediaType returns the media type of a format of Formats, and false for
// another name.
func MediaType(format string) (string, bool) {
	t, ok := mediaTypes[format]
	return t, ok
}

// Export writes a log in a format of Formats: as stored (sbem), or
// converted by WriteCSV, WriteJSON or EDF, whose recording identification
// (edf.File.Recording) is recording.
func Export(w io.Writer, log []byte, format, recording string) error {
	switch format {
	case "sbem":
		_, err := w.Write(log)
		return err
	case "csv":
		return WriteCSV(w, log)
	case "json":
		return WriteJSON(w, log)
	case "edf":
		f, err := EDF(log)
		if err != nil {
			return err
		}
		f.Recording = recording
		return edf.Write(w, f)
	}
	return fmt.Errorf("log format %q: one of %v", format, Formats)
}
