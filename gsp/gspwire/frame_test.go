package gspwire

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want Command
		err  error
		msg  string // the error's text, when it is checked
	}{
		{"hello", []byte{0, 100}, Command{Code: Hello, Ref: 100}, nil, ""},
		{"subscribe NUL-terminated", append([]byte{1, 5}, "/Meas/Acc/52\x00"...), Command{Code: Subscribe, Ref: 5, Path: "/Meas/Acc/52"}, nil, ""},
		{"get without NUL or slash", append([]byte{4, 101}, "Mem/DataLogger/State"...), Command{Code: Get, Ref: 101, Path: "/Mem/DataLogger/State"}, nil, ""},
		{"fetch", []byte{3, 1, 2, 0, 0, 0}, Command{Code: FetchLog, Ref: 1, LogID: 2}, nil, ""},
		{"config", append([]byte{6, 102}, "/Meas/Acc/52\x00/Time/Detailed\x00"...), Command{Code: PutDataLoggerConfig, Ref: 102, Paths: []string{"/Meas/Acc/52", "/Time/Detailed"}}, nil, ""},
		{"utc", []byte{8, 108, 1, 0, 0, 0, 0, 0, 0, 0}, Command{Code: PutUTCTime, Ref: 108, Time: 1}, nil, ""},
		{"state", []byte{9, 103, 3}, Command{Code: PutDataLoggerState, Ref: 103, Value: 3}, nil, ""},
		{"short", []byte{0}, Command{}, ErrShort, "gsp: a command is at least 2 bytes: command code and reference: got 1"},
		{"unknown", []byte{10, 1}, Command{}, ErrUnknown, "gsp: command(10): unknown command code; allowed: 0 HELLO .. 9 PUT_DATALOGGER_STATE: got 10"},
		{"empty path", []byte{1, 1, 0}, Command{}, ErrBadPayload, ""},
		{"NUL inside path", append([]byte{4, 1}, "/a\x00b"...), Command{}, ErrBadPayload, ""},
		{"not UTF-8", []byte{4, 1, '/', 0xff}, Command{}, ErrBadPayload, ""},
		{"eight streams and the time", append([]byte{6, 1}, "/a\x00/b\x00/c\x00/d\x00/e\x00/f\x00/g\x00/h\x00/Time/Detailed\x00"...), Command{Code: PutDataLoggerConfig, Ref: 1, Paths: []string{"/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h", "/Time/Detailed"}}, nil, ""},
		{"ten paths", append([]byte{6, 1}, "/a\x00/a\x00/a\x00/a\x00/a\x00/a\x00/a\x00/a\x00/a\x00/a\x00"...), Command{}, ErrBadPayload, ""},
		{"short time", []byte{8, 1, 1}, Command{}, ErrBadPayload, "gsp: PUT_UTCTIME: malformed command payload: the time is a uint64 of microseconds since 1970 (8 bytes), got 1 bytes"},
		{"longest path", append([]byte{4, 1}, "/"+strings.Repeat("a", MaxPath-1)...), Command{Code: Get, Ref: 1, Path: "/" + strings.Repeat("a", MaxPath-1)}, nil, ""},
		{"longest path without its slash", append([]byte{4, 1}, strings.Repeat("a", MaxPath-1)...), Command{Code: Get, Ref: 1, Path: "/" + strings.Repeat("a", MaxPath-1)}, nil, ""},
		{"a path one byte too long once its slash is added", append([]byte{4, 1}, strings.Repeat("a", MaxPath)...), Command{}, ErrBadPayload, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCommand(tc.in)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			var ce *CommandError
			if err != nil && !errors.As(err, &ce) {
				t.Fatalf("err %T, want *CommandError", err)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("error %q, want %q", err, tc.msg)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseCommand: no input crashes the parser, and every command it
// accepts encodes back to a command that parses the same.
func FuzzParseCommand(f *testing.F) {
	for _, s := range [][]byte{{0, 1}, append([]byte{1, 5}, "/Meas/IMU9/52\x00"...), {3, 1, 1, 0, 0, 0},
		append([]byte{6, 2}, "/Meas/ECG/200/mV\x00/Time/Detailed\x00"...), {7, 1, 5}, {8, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {9, 1, 3}, {5, 1}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCommand(b)
		if err != nil {
			var ce *CommandError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T", err)
			}
			return
		}
		again, err := ParseCommand(AppendCommand(nil, c))
		if err != nil {
			t.Fatalf("%+v re-encoded fails: %v", c, err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("%+v re-parsed as %+v", c, again)
		}
	})
}

func TestSplit(t *testing.T) {
	payload := bytes.Repeat([]byte{1, 2, 3}, 30)
	var got [][]byte
	Split(MinMTU, 9, payload, nil, func(b []byte) { got = append(got, append([]byte(nil), b...)) })
	var joined []byte
	for i, n := range got {
		want := byte(Data + min(i, 2))
		if n[0] != want || n[1] != 9 || len(n) > 20 {
			t.Errorf("part %d: % x", i, n[:2])
		}
		joined = append(joined, n[2:]...)
	}
	if !bytes.Equal(joined, payload) || len(got) != 5 {
		t.Errorf("%d parts joined to %d bytes, want 5 parts of 90 bytes", len(got), len(joined))
	}
}
