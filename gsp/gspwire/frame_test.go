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

// A payload is cut into DATA, DATA_PART2 and DATA_PART3 notifications of
// the MTU that join to the payload again.
func TestSplitter(t *testing.T) {
	var s Splitter
	for _, tc := range []struct {
		name    string
		mtu     int
		payload int // bytes
		parts   int
	}{
		{"empty", DefaultMTU, 0, 1},
		{"one part", DefaultMTU, 242, 1},
		{"one byte over", DefaultMTU, 243, 2},
		{"five at the smallest MTU", MinMTU, 90, 5},
		{"below the smallest MTU", 5, 90, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := make([]byte, tc.payload)
			for i := range payload {
				payload[i] = byte(i)
			}
			got := s.Split(tc.mtu, 9, payload)
			var joined []byte
			for i, n := range got {
				want := byte(Data + min(i, 2))
				if n[0] != want || n[1] != 9 || len(n) > MaxNotification(tc.mtu) || cap(n) != len(n) {
					t.Errorf("part %d: % x, %d bytes (cap %d), at most %d", i, n[:2], len(n), cap(n), MaxNotification(tc.mtu))
				}
				joined = append(joined, n[2:]...)
			}
			if !bytes.Equal(joined, payload) || len(got) != tc.parts {
				t.Errorf("%d parts joined to %d bytes, want %d parts of %d bytes", len(got), len(joined), tc.parts, tc.payload)
			}
		})
	}
}

// A Splitter that has cut a payload cuts another of that size without
// allocating.
func TestSplitterReuses(t *testing.T) {
	var s Splitter
	payload := make([]byte, 600)
	s.Split(DefaultMTU, 1, payload)
	if n := testing.AllocsPerRun(10, func() { s.Split(DefaultMTU, 1, payload) }); n != 0 {
		t.Errorf("%v allocations a split, want 0", n)
	}
}
