package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/nvm"
)

// TestMain keeps what the programs of the tests keep in the user's state
// directory by default (the token of the computer's NATS server) in a
// directory of the tests' own.
func TestMain(m *testing.M) { airtest.Main(m) }

// TestHelpHidesNATSPassword: the help shows $SENSEBOARD_NATS as the
// default of --nats, without its password.
func TestHelpHidesNATSPassword(t *testing.T) {
	t.Setenv("SENSEBOARD_NATS", "nats://fleet:s3cret@10.0.0.1:4222")
	for _, cmd := range []string{"run", "bridge"} {
		var stdout, stderr bytes.Buffer
		run([]string{cmd, "-h"}, &stdout, &stderr)
		help := stdout.String() + stderr.String()
		if !strings.Contains(help, `(default "nats://***@10.0.0.1:4222")`) || strings.Contains(help, "s3cret") {
			t.Errorf("senseboard %s -h:\n%s", cmd, help)
		}
	}
}

// TestRefusesBadFlags: a flag value that cannot be used stops the
// program before it serves anything, with a message that names the flag
// and what it takes.
func TestRefusesBadFlags(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	natsAddr := airtest.FreeLocal(t)
	_, natsPort, _ := net.SplitHostPort(natsAddr) // the bridge alone needs the radio link
	onAir, err := airtest.Local(t, natsAddr, air.Options{TokenFile: air.DefaultTokenFile()}).Listen("000999")
	if err != nil {
		t.Fatal(err)
	}
	defer onAir.Close()
	oneLead := filepath.Join(t.TempDir(), "one.hea")
	if err := os.WriteFile(oneLead, []byte("one 1 360\none.dat 16 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(oneLead), "one.dat"), []byte{1, 0, 2, 0, 3, 0, 4, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	noECG := filepath.Join(filepath.Dir(oneLead), "acc.csv")
	if err := os.WriteFile(noECG, []byte("Timestamp,acc_x,acc_y,acc_z\n0,1,2,3\n10,1,2,3\n20,1,2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
		held string // a state directory, under --state, that another holds
	}{
		{"device's state held", []string{"run", "--http", "none", "--listen", "127.0.0.1:0"}, "give this one other serials (--serial) or another --state", "000123"},
		{"bridge's state held", []string{"bridge", "--http", "127.0.0.1:0", "--nats", "local:" + natsPort}, "another bridge keeps its bonds there: stop it, or give this one a directory of its own with --state", "."},
		{"bridge's state of run held", []string{"run", "--http", "127.0.0.1:0", "--listen", "127.0.0.1:0"}, "another bridge keeps its bonds there", "bridge"},
		{"serial on the air", []string{"run", "--serial", "000999", "--http", "none", "--listen", "127.0.0.1:0", "--nats", "local:" + natsPort}, "give this one other serials (--serial), or a radio link of its own", ""},
		{"no devices", []string{"run", "--devices", "0"}, "--devices 0: give 1 or more", ""},
		{"negative devices", []string{"run", "--devices", "-3"}, "--devices -3: give 1 or more", ""},
		{"three leads for the heart rate", []string{"run", "--replay-hr-leads", "3"}, "--replay-hr-leads 3: give 1 (the lead the ECG plays) or 2 (both leads of a record of two)", ""},
		{"leads for the heart rate of no replay", []string{"run", "--replay-hr-leads", "2"}, "--replay-hr-leads: give --replay too", ""},
		{"two leads for the heart rate of a record of one", []string{"run", "--replay", oneLead, "--replay-hr-leads", "2"}, "--replay-hr-leads 2: --replay " + oneLead + ": the ECG played has no second lead", ""},
		{"two leads for the heart rate of no ECG", []string{"run", "--replay", noECG, "--replay-hr-leads", "2"}, "--replay-hr-leads 2: no file of --replay holds an ECG: the ECG played has no second lead", ""},
		{"negative idle", []string{"run", "--idle", "-1s"}, "--idle -1s: give a duration", ""},
		{"negative idle of the bridge", []string{"bridge", "--idle", "-1s"}, "--idle -1s: give a duration", ""},
		{"bridge address without a port", []string{"bridge", "--http", "foo"}, `bridge address "foo": address foo: missing port in address; give host:port`, ""},
		{"bridge address taken", []string{"bridge", "--http", taken}, "give --http another address", ""},
		{"bridge address of run taken", []string{"run", "--http", taken, "--listen", "127.0.0.1:0"}, "give --http another address", ""},
		{"device address taken", []string{"run", "--http", "none", "--listen", taken}, "give --listen (or --listen-fleet) another address", ""},
		{"fleet address taken", []string{"run", "--http", "none", "--listen-fleet", taken}, "give --listen (or --listen-fleet) another address", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			state := t.TempDir()
			if tt.held != "" {
				s, err := nvm.Open(filepath.Join(state, tt.held))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
			}
			args := append(tt.args, "--state", state)
			if !slices.Contains(args, "--nats") {
				args = append(args, "--nats", "none")
			}
			if tt.args[0] == "run" {
				args = append(args, "--pty", "none")
			}
			if code := run(args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestHelpSaysEachDefaultOnce: the help of a flag whose default an
// environment variable gives says the default once, and the overview
// names the help of every command, and the help of run (senseboard -h)
// points to it.
func TestHelpSaysEachDefaultOnce(t *testing.T) {
	for _, cmd := range []string{"run", "bridge"} {
		var stdout, stderr bytes.Buffer
		run([]string{cmd, "-h"}, &stdout, &stderr)
		for _, line := range strings.Split(stdout.String()+stderr.String(), "\n") {
			if n := strings.Count(line, "(default"); n > 1 {
				t.Errorf("senseboard %s -h: %d defaults in %q", cmd, n, line)
			}
		}
	}
	var runHelp bytes.Buffer
	run([]string{"-h"}, &runHelp, &runHelp)
	if !strings.Contains(runHelp.String(), "lists the others (bridge, load, version)") {
		t.Errorf("senseboard -h does not point to the other commands:\n%s", runHelp.String())
	}
	var stdout, stderr bytes.Buffer
	run([]string{"help"}, &stdout, &stderr)
	for name := range commands {
		if name != "run" && !strings.Contains(stdout.String(), "help "+name) {
			t.Errorf("senseboard help does not name help %s:\n%s", name, stdout.String())
		}
	}
}

// TestFlagErrorIsOneLine: a flag that cannot be parsed is said once, on
// one line that names it and where its help is, for every command, with
// exit status 2, as wbcmd's.
func TestFlagErrorIsOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--seed", "x"}, `senseboard: invalid value "x" for flag -seed: parse error; see senseboard help run` + "\n"},
		{[]string{"run", "--bogus"}, "senseboard: flag provided but not defined: -bogus; see senseboard help run\n"},
		{[]string{"bridge", "--idle", "soon"}, `senseboard: invalid value "soon" for flag -idle: parse error; see senseboard help bridge` + "\n"},
		{[]string{"load", "--devices"}, "senseboard: flag needs an argument: -devices; see senseboard help load\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != exitUsage || stderr.String() != tt.want || stdout.Len() > 0 {
			t.Errorf("senseboard %q: exit %d, stdout %q, stderr %q; want stderr %q", tt.args, code, stdout.String(), stderr.String(), tt.want)
		}
	}
}
