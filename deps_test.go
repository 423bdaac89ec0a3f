package senseboard_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyRules keeps the packages' dependencies pointing one way:
// the client and the serial tool link only the protocol, the radio knows
// no device, provider or transport, transports know no provider, and
// providers know no transport.
func TestDependencyRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, tt := range []struct {
		pkg       string
		direct    bool     // only the package's own imports count
		forbidden []string // import path prefixes
	}{
		{"senseboard/client", false, []string{"senseboard/device", "senseboard/api", "senseboard/provider/", "senseboard/nvm", "senseboard/host", "github.com/creack/pty", "github.com/go-openapi/"}},
		{"senseboard/cmd/wbcmd", false, []string{"senseboard/device", "senseboard/api", "senseboard/provider/", "senseboard/nvm", "senseboard/host", "github.com/creack/pty", "github.com/go-openapi/"}},
		{"senseboard/wire", false, []string{"senseboard/device", "senseboard/transport/", "senseboard/provider/", "senseboard/radio"}},
		{"senseboard/radio", false, []string{"senseboard/device", "senseboard/provider/", "senseboard/transport/", "senseboard/host", "senseboard/bridge"}},
		{"senseboard/transport/serial", false, []string{"senseboard/provider/", "senseboard/host", "senseboard/bridge"}},
		{"senseboard/provider/...", false, []string{"senseboard/transport/", "senseboard/client", "senseboard/host", "senseboard/bridge"}},
		{"senseboard/bridge", false, []string{"senseboard/provider/", "senseboard/device", "senseboard/transport/"}},
		{"senseboard/bridge", true, []string{"senseboard/world"}},
	} {
		args := []string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", tt.pkg}
		if tt.direct {
			args = []string{"list", "-f", `{{join .Imports "\n"}}`, tt.pkg}
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range tt.forbidden {
				if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s; it must not depend on %s", tt.pkg, dep, f)
				}
			}
		}
	}
}
