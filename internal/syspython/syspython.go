// Package syspython finds a Python interpreter with a given module for tests
// that check against a Python library. Debian's python3-* packages install
// for the system's Python (/usr/bin/python3), which may not be the python3
// first on the path.
package syspython

import "os/exec"

// With returns a Python interpreter that can import module: python3 on
// the path or the system's, or "" when neither can.
func With(module string) string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import "+module).Run() == nil {
			return p
		}
	}
	return ""
}
