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
