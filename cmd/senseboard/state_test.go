package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"senseboard"
	"senseboard/internal/damage"
	"senseboard/nvm"
	"senseboard/resource"
)

// TestRunOnDamagedState runs the program on state directories with one
// damaged file: it exits with status 1 and one line on stderr that names
// the file and says what to do, and the other devices' state (and the
// bridge's) is as it was.
func TestRunOnDamagedState(t *testing.T) {
	t.Parallel()
	bin := buildSenseboard(t)
	for _, tt := range []struct {
		name    string
		file    string // under the state directory
		kind    damage.Kind
		prefix  string // of the line, after "senseboard: "
		reason  string
		bridged bool
	}{
		{"truncated chip of the second device", "000124/eeprom0.bin", damage.Files()[0], "device 000124: ", "truncated", false},
		{"ble.json out of range", "000123/ble.json",
			damage.OutOfRange("interval", func(m map[string]any) { m["Adv"].(map[string]any)["Interval"] = 1 }, "Interval 1"),
			"device 000123: ", "Interval 1", false},
		{"malformed keys of the bridge", "bridge/keys.json", damage.JSON()[0], "bridge: ", "do not decode", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			state := filepath.Join(root, "state")
			for _, serial := range []string{"000123", "000124"} {
				d, err := senseboard.New(senseboard.Config{StateDir: filepath.Join(state, serial)})
				if err != nil {
					t.Fatal(err)
				}
				if err := d.EEPROM.Write(0, 0, []byte(serial)); err != nil {
					t.Fatal(err)
				}
				if env, err := d.Call(resource.Put, "/Comm/Ble/Security/Pin", resource.String("123456")); err != nil || env.Status != resource.StatusOK {
					t.Fatalf("PUT Pin: %v %+v", err, env)
				}
				d.Close()
			}
			s, err := nvm.Open(filepath.Join(state, "bridge"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.WriteJSON("keys.json", map[string]string{"C0:53:42:00:00:07": "00112233445566778899aabbccddeeff"}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			path := filepath.Join(state, tt.file)
			if err := tt.kind.Apply(path); err != nil {
				t.Fatal(err)
			}
			before, err := damage.Snapshot(state)
			if err != nil {
				t.Fatal(err)
			}
			http := "none"
			if tt.bridged {
				http = "127.0.0.1:0"
			}
			cmd := exec.Command(bin, "run", "--devices", "2", "--state", state, "--listen", "none", "--pty", "none",
				"--nats", "none", "--http", http)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			line := stderr.String()
			t.Log(strings.TrimSpace(line))
			if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "senseboard: "+tt.prefix+"state file "+path+" ") ||
				!strings.Contains(line, tt.reason) || !strings.Contains(line, "; restore it from a backup") {
				t.Errorf("stderr %q: want one line naming %s, %q and what to do", line, path, tt.reason)
			}
			after, err := damage.Snapshot(state)
			if err != nil {
				t.Fatal(err)
			}
			if diff := damage.Diff(before, after); len(diff) > 0 {
				t.Errorf("the program changed state: %v", diff)
			}
		})
	}
}
