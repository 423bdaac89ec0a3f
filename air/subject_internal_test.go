package air

import (
	"strings"
	"testing"
)

// A subject token is 1 to 64 letters, digits, - or _.
func TestTokenLimits(t *testing.T) {
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{"", false},
		{"a", true},
		{strings.Repeat("z", 64), true},
		{strings.Repeat("z", 65), false},
		{"azAZ09-_", true},
		{"a`", false},
		{"a{", false},
		{"a@", false},
		{"a[", false},
		{"a/", false},
		{"a:", false},
		{"a.b", false},
		{"a*", false},
	} {
		if got := token(tt.s); got != tt.ok {
			t.Errorf("token(%q) = %v, want %v", tt.s, got, tt.ok)
		}
	}
}

// A scan's subject has no token after its kind.
func TestParseScanSubject(t *testing.T) {
	for _, tt := range []struct {
		subject string
		ok      bool
	}{
		{Prefix + "." + KindScan, true},
		{Prefix + "." + KindScan + ".000123", false},
	} {
		s, err := ParseSubject(tt.subject)
		if ok := err == nil; ok != tt.ok || ok && s != (Subject{Kind: KindScan}) {
			t.Errorf("ParseSubject(%q) = %+v, %v; want ok %t", tt.subject, s, err, tt.ok)
		}
	}
}
