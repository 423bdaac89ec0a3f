package senseboard_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyRules keeps the packages' dependencies pointing one way:
// the client and the serial tool link only the protocol, the radio knows
// no device, provider or transport, transports know no provider, and
// providers know no transport. The GSP frames (gsp/gspwire) need the
// standard library alone, so that the bridge speaks GSP without the
// device; the binary form of content (gsp/gspdata), which the data logger
// writes too, knows no GSP module, and no provider does.
func TestDependencyRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, tt := range []struct {
		pkg       string
		direct    bool     // only the package's own imports count
		stdlib    bool     // the standard library alone
		forbidden []string // import paths; with a trailing slash, the path and all below it
	}{
		{"senseboard/client", false, false, []string{"senseboard/device/", "senseboard/api/", "senseboard/provider/", "senseboard/nvm/", "senseboard/host/", "github.com/creack/pty/", "github.com/go-openapi/"}},
		{"senseboard/cmd/wbcmd", false, false, []string{"senseboard/device/", "senseboard/api/", "senseboard/provider/", "senseboard/nvm/", "senseboard/host/", "github.com/creack/pty/", "github.com/go-openapi/"}},
		{"senseboard/wire", false, false, []string{"senseboard/device/", "senseboard/transport/", "senseboard/provider/", "senseboard/radio/"}},
		{"senseboard/radio", false, false, []string{"senseboard/device/", "senseboard/provider/", "senseboard/transport/", "senseboard/host/", "senseboard/bridge/"}},
		{"senseboard/transport/serial", false, false, []string{"senseboard/provider/", "senseboard/host/", "senseboard/bridge/"}},
		{"senseboard/provider/...", false, false, []string{"senseboard/transport/", "senseboard/client/", "senseboard/host/", "senseboard/bridge/", "senseboard/gsp"}},
		{"senseboard/bridge", false, false, []string{"senseboard/provider/", "senseboard/device/", "senseboard/transport/", "senseboard/gsp", "senseboard/gsp/gspdata/"}},
		{"senseboard/bridge", true, false, []string{"senseboard/world/"}},
		{"senseboard/gsp/gspwire", false, true, nil},
		{"senseboard/gsp/gspdata", false, false, []string{"senseboard/gsp", "senseboard/app/", "senseboard/provider/mem/"}},
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
			if tt.stdlib && dep != tt.pkg {
				t.Errorf("%s depends on %s; it must use the standard library alone", tt.pkg, dep)
			}
			for _, f := range tt.forbidden {
				if dep == strings.TrimSuffix(f, "/") || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s; it must not depend on %s", tt.pkg, dep, f)
				}
			}
		}
	}
}
