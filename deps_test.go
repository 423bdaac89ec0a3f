package senseboard_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyRules keeps the packages' dependencies pointing one way:
// the client and the serial tool link only the line protocol, nothing of
// the radio link; the radio knows no device, provider or transport; the
// serial transport knows no radio, and the radio link (package link) no
// carrier; transports know no provider, and providers know no transport;
// the phone imports no net/http, and the bridge, its web face, reaches
// devices through the phone alone. A provider imports no other provider's
// package, for its types either: what providers share is package content
// (the notifications) or a small interface where it is used. The file
// formats EDF+ and WFDB need the standard library alone. The GSP frames
// (gsp/gspwire) need the standard library alone, so that the bridge
// speaks GSP without the device; the content model (content), which GSP,
// the data logger and the load use too, knows no GSP module, device or
// provider; the data logger (logbook), built on the in-device application
// interface, knows no provider either, and the load no provider; the feed
// of the heart-rate service (hrs) takes /Meas/HR through the device. The clock
// needs no other package of the module, and the faults' vocabulary (fault)
// none of the layers that carry the faults out. The assembly (package senseboard)
// is above them all and below the programs.
func TestDependencyRules(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	rules := []struct {
		pkg       string
		direct    bool     // only the package's own imports count
		stdlib    bool     // the standard library alone
		forbidden []string // import paths; with a trailing slash, the path and all below it
	}{
		{"senseboard/client", false, false, []string{"senseboard", "senseboard/device/", "senseboard/api/", "senseboard/provider/", "senseboard/nvm/", "senseboard/link/", "senseboard/radio/", "senseboard/air/", "github.com/creack/pty/", "github.com/go-openapi/"}},
		{"senseboard/cmd/wbcmd", false, false, []string{"senseboard", "senseboard/device/", "senseboard/api/", "senseboard/provider/", "senseboard/nvm/", "senseboard/link/", "senseboard/radio/", "senseboard/air/", "github.com/creack/pty/", "github.com/go-openapi/"}},
		{"senseboard/wire", false, false, []string{"senseboard/device/", "senseboard/transport/", "senseboard/provider/", "senseboard/radio/", "senseboard/link/"}},
		{"senseboard/radio", false, false, []string{"senseboard", "senseboard/device/", "senseboard/provider/", "senseboard/transport/", "senseboard/bridge/", "senseboard/link/", "senseboard/content/"}},
		{"senseboard/transport/serial", false, false, []string{"senseboard", "senseboard/provider/", "senseboard/bridge/", "senseboard/radio/", "senseboard/link/", "senseboard/air/"}},
		{"senseboard/link", false, false, []string{"senseboard", "senseboard/provider/", "senseboard/bridge/", "senseboard/load/", "senseboard/air/", "senseboard/gsp"}},
		{"senseboard/provider/...", false, false, []string{"senseboard", "senseboard/transport/", "senseboard/client/", "senseboard/link/", "senseboard/bridge/", "senseboard/gsp", "senseboard/logbook/", "senseboard/app/"}},
		{"senseboard/provider/...", true, false, []string{"senseboard/provider/"}},
		// The phone reaches devices over the radio link alone; the link's
		// package, which serves the peripheral's end too, brings the
		// device core along, but not the providers. The phone knows no
		// web, and the bridge, its web face, reaches devices through it.
		{"senseboard/phone", false, false, []string{"senseboard", "senseboard/provider/", "senseboard/gsp", "senseboard/content/", "senseboard/bridge/"}},
		{"senseboard/phone", true, false, []string{"net/http", "github.com/coder/websocket", "senseboard/device/", "senseboard/transport/", "senseboard/world/"}},
		{"senseboard/bridge", false, false, []string{"senseboard", "senseboard/provider/", "senseboard/gsp", "senseboard/content/"}},
		{"senseboard/bridge", true, false, []string{"senseboard/device/", "senseboard/transport/", "senseboard/world/", "senseboard/link", "senseboard/air", "senseboard/nvm"}},
		{"senseboard/gsp/gspwire", false, true, nil},
		{"senseboard/edf", false, true, nil},
		{"senseboard/wfdb", false, true, nil},
		{"senseboard/content", false, false, []string{"senseboard/gsp", "senseboard/app/", "senseboard/device/", "senseboard/provider/", "senseboard/logbook/"}},
		{"senseboard/logbook", false, false, []string{"senseboard", "senseboard/provider/", "senseboard/gsp", "senseboard/transport/", "senseboard/link/", "senseboard/bridge/"}},
		// the heart-rate service's feed takes the measurement through the
		// device, as an app does: no measurement provider
		{"senseboard/hrs", false, false, []string{"senseboard", "senseboard/provider/meas", "senseboard/gsp", "senseboard/logbook/", "senseboard/transport/", "senseboard/link/", "senseboard/bridge/", "senseboard/phone/"}},
		{"senseboard/load", false, false, []string{"senseboard", "senseboard/provider/", "senseboard/logbook/", "senseboard/gsp", "senseboard/bridge/", "senseboard/phone/"}},
		{"senseboard/clock", false, false, []string{"senseboard/"}}, // and golang.org/x/sys for its precise sleep
		// The faults' vocabulary knows no layer that carries them out.
		{"senseboard/fault", false, false, []string{"senseboard", "senseboard/device/", "senseboard/resource/", "senseboard/radio/", "senseboard/link/", "senseboard/phone/", "senseboard/bridge/", "senseboard/world/", "senseboard/provider/", "senseboard/clock/"}},
		{"senseboard", true, false, []string{"senseboard/bridge/", "senseboard/phone/", "senseboard/load/", "senseboard/client/", "senseboard/cmd/"}},
	}
	// one go list for all the rules: the packages, and what they import
	// and depend on
	args := []string{"list", "-deps", "-json=ImportPath,Imports,Deps,Standard,DepOnly"}
	for _, r := range rules {
		args = append(args, r.pkg)
	}
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	type pkg struct {
		ImportPath        string
		Imports, Deps     []string
		Standard, DepOnly bool
	}
	var listed []pkg // the packages of the rules
	standard := map[string]bool{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		standard[p.ImportPath] = p.Standard
		if !p.DepOnly {
			listed = append(listed, p)
		}
	}
	for _, tt := range rules {
		pattern, all := strings.CutSuffix(tt.pkg, "/...")
		n := 0
		for _, p := range listed {
			if p.ImportPath != pattern && !(all && strings.HasPrefix(p.ImportPath, pattern+"/")) {
				continue
			}
			n++
			deps := p.Deps
			if tt.direct {
				deps = p.Imports
			}
			for _, dep := range deps {
				if tt.stdlib && !standard[dep] {
					t.Errorf("%s depends on %s; it must use the standard library alone", p.ImportPath, dep)
				}
				for _, f := range tt.forbidden {
					if dep == strings.TrimSuffix(f, "/") || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
						t.Errorf("%s depends on %s; it must not depend on %s", p.ImportPath, dep, f)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("go list listed no package %s", tt.pkg)
		}
	}
}
