package bridge

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A close frame carries at most 123 bytes of reason: longer reasons are
// cut at a character boundary.
func TestCloseReason(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int // bytes
	}{
		{"short", "device 000123: disconnected", 27},
		{"exactly 123", strings.Repeat("a", 123), 123},
		{"long", strings.Repeat("a", 200), 123},
		{"a rune across the cut", strings.Repeat("a", 122) + "é" + "bc", 122},
		{"empty", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := closeReason(tc.in)
			if len(got) != tc.want || !utf8.ValidString(got) || !strings.HasPrefix(tc.in, got) {
				t.Errorf("closeReason(%q) = %q (%d bytes), want the first %d bytes", tc.in, got, len(got), tc.want)
			}
		})
	}
}
