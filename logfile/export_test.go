package logfile_test

import (
	"bytes"
	"testing"

	"senseboard/edf"
	"senseboard/logfile"
)

// Export writes a log in each of Formats, each with a media type, and
// refuses another name; a preview sums up the same log.
func TestExportAndPreview(t *testing.T) {
	log := recordLog(t, 3, "/Meas/Acc/52", "/Time/Detailed")
	for _, format := range logfile.Formats {
		if _, ok := logfile.MediaType(format); !ok {
			t.Errorf("%s: no media type", format)
		}
		var b bytes.Buffer
		if err := logfile.Export(&b, log, format, "X X senseboard_000123_log_1"); err != nil || b.Len() == 0 {
			t.Errorf("%s: %d bytes, %v", format, b.Len(), err)
			continue
		}
		switch format {
		case "sbem":
			if !bytes.Equal(b.Bytes(), log) {
				t.Error("sbem: not the log as stored")
			}
		case "edf":
			f, err := edf.Unmarshal(b.Bytes())
			if err != nil {
				t.Errorf("edf: %v", err)
			} else if f.Recording != "X X senseboard_000123_log_1" {
				t.Errorf("edf: recording %q", f.Recording)
			}
		}
	}
	if _, ok := logfile.MediaType("xml"); ok {
		t.Error("xml has a media type")
	}
	if err := logfile.Export(&bytes.Buffer{}, log, "xml", ""); err == nil {
		t.Error("xml: no error")
	}
	p, err := logfile.NewPreview("000123", 1, log)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := logfile.Decode(log)
	if p.Size != len(log) || p.Records != len(recs) || len(p.Head) != min(len(recs), logfile.PreviewRecords) || len(p.Streams) != 2 {
		t.Errorf("preview: %d bytes, %d records, %d in head, streams %+v", p.Size, p.Records, len(p.Head), p.Streams)
	}
	if _, err := logfile.NewPreview("000123", 1, []byte("not a log")); err == nil {
		t.Error("a preview of what is not a log")
	}
}
