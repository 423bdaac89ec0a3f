package main

import (
	"bytes"
	"strings"
	"testing"

	"senseboard/profile"
)

// TestHelpGoesToStdout: help asked for, in every spelling and for every
// command, is the program's output: on stdout, with exit status 0 and
// nothing on stderr, so that senseboard --help | less shows it.
func TestHelpGoesToStdout(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the help's first line
	}{
		{[]string{"--help"}, "Usage: senseboard run [flags]"},
		{[]string{"-h"}, "Usage: senseboard run [flags]"},
		{[]string{"-help"}, "Usage: senseboard run [flags]"},
		{[]string{"help"}, "senseboard runs simulated wearable sensor devices."},
		{[]string{"run", "--help"}, "Usage: senseboard run [flags]"},
		{[]string{"help", "run"}, "Usage: senseboard run [flags]"},
		{[]string{"bridge", "-h"}, "Usage: senseboard bridge [flags]"},
		{[]string{"help", "bridge"}, "Usage: senseboard bridge [flags]"},
		{[]string{"load", "--help"}, "Usage: senseboard load [flags]"},
		{[]string{"help", "load"}, "Usage: senseboard load [flags]"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tt.args, &stdout, &stderr)
		if first, _, _ := strings.Cut(stdout.String(), "\n"); code != 0 || first != tt.want || stderr.Len() > 0 {
			t.Errorf("senseboard %s: exit %d, stdout beginning %q, stderr %q; want exit 0, %q, nothing",
				strings.Join(tt.args, " "), code, first, stderr.String(), tt.want)
		}
	}
}

// TestVersionFlag: senseboard --version prints what senseboard version
// does, in wbcmd --version's form: the program's name and its version.
func TestVersionFlag(t *testing.T) {
	want := "senseboard " + profile.Version + "\n"
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || stdout.String() != want || stderr.Len() > 0 {
			t.Errorf("senseboard %s: exit %d, stdout %q, stderr %q; want exit 0, %q", args[0], code, stdout.String(), stderr.String(), want)
		}
	}
}

// TestCommandErrorIsOneLine: an unknown command is one line that names it
// and where help is, with wbcmd's exit status for a command line that
// cannot be parsed.
func TestCommandErrorIsOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `senseboard: unknown command "frob"; see senseboard help` + "\n"},
		{[]string{"help", "frob"}, `senseboard: no command "frob" to help with; see senseboard help` + "\n"},
		{[]string{"run", "extra"}, `senseboard: unexpected argument "extra"; see senseboard help run` + "\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != exitUsage || stderr.String() != tt.want || stdout.Len() > 0 {
			t.Errorf("senseboard %q: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", tt.args, code, stdout.String(), stderr.String(), exitUsage, tt.want)
		}
	}
}

// TestNATSIDRefused: a program id that cannot be a subject's token is
// refused with what it may be, before anything starts; --nats-id is the
// radio link's, so the load refuses it over TCP.
func TestNATSIDRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--state", t.TempDir(), "--http", "none", "--listen", "none", "--pty", "none", "--nats", "local:1", "--nats-id", "a.b"},
			`program id "a.b": a program's id on the air is 1 to 64 letters, digits, '-' or '_'`},
		{[]string{"load", "--nats-id", "x"}, "--nats-id is for the radio link: give --nats too"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("senseboard %q: exit %d, stderr %q; want %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}
