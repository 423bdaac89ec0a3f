package air

import (
	"path/filepath"
	"strings"
	"testing"
)

// The address of the local server is a loopback host and a port of 1 to
// 65535; anything else is refused before a server starts.
func TestLocalAddressRefused(t *testing.T) {
	for _, tt := range []struct {
		addr, want string
	}{
		{"127.0.0.1:0", "the port is 1 to 65535"},
		{"127.0.0.1:65536", "the port is 1 to 65535"},
		{"127.0.0.1:x", "the port is 1 to 65535"},
		{"192.0.2.1:4222", "is not loopback"},
		{"127.0.0.1", "give host:port"},
	} {
		l, err := Local(tt.addr, Options{TokenFile: filepath.Join(t.TempDir(), "token")})
		if err == nil {
			l.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Local(%q): %v, want an error saying %q", tt.addr, err, tt.want)
		}
	}
}
