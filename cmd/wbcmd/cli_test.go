package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"senseboard/internal/await"
	"senseboard/profile"
)

// TestMistypedFlagIsOneLine: a flag that cannot be parsed is one line on
// stderr that names it and says where the help is, with exit status 2
// (a usage error), and nothing on stdout.
func TestMistypedFlagIsOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--prot", "TCP127.0.0.1:7809", "--path", "/Info"}, "wbcmd: flag provided but not defined: -prot; see wbcmd --help\n"},
		{[]string{"--port"}, "wbcmd: flag needs an argument: -port; see wbcmd --help\n"},
		{[]string{"--port", "x", "--path", "/Info", "--count", "many"}, `wbcmd: invalid value "many" for flag -count: parse error; see wbcmd --help` + "\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, nil, &stdout, &stderr); code != exitUsage || stderr.String() != tt.want || stdout.Len() > 0 {
			t.Errorf("wbcmd %q: exit %d, stdout of %d lines, stderr %q; want exit %d, stderr %q",
				tt.args, code, strings.Count(stdout.String(), "\n"), stderr.String(), exitUsage, tt.want)
		}
	}
}

// TestHelpAndVersion: help asked for goes to stdout with exit status 0;
// --version prints the program's name and version.
func TestHelpAndVersion(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{arg}, nil, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "wbcmd makes one request") || stderr.Len() > 0 {
			t.Errorf("wbcmd %s: exit %d, stdout %.40q, stderr %q", arg, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, nil, &stdout, &stderr); code != exitOK || stdout.String() != "wbcmd "+profile.Version+"\n" {
		t.Errorf("wbcmd --version: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestEscapeOnlyOnATerminal: a subscription offers ESC only when stdin is
// a terminal, where ESC stops it; from a pipe it does not.
func TestEscapeOnlyOnATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, stop, terminal := watchEscape(r); terminal {
		stop()
		t.Error("a pipe is taken for a terminal")
	}
	if got := listening(false); strings.Contains(got, "ESC") {
		t.Errorf("without a terminal: %q", got)
	}

	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer tty.Close()
	esc, stop, terminal := watchEscape(tty)
	defer stop()
	if !terminal {
		t.Fatal("a pseudo-terminal is not taken for a terminal")
	}
	if got := listening(true); got != "Subscribed and listening for notifications. Press ESC to stop:" {
		t.Errorf("on a terminal: %q", got)
	}
	if _, err := ptm.Write([]byte{'x', 0x1b}); err != nil {
		t.Fatal(err)
	}
	await.Within(t, esc, "ESC on the terminal has not been seen")
	stop()
	if tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS); err != nil || tio.Lflag&unix.ICANON == 0 || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("after stop the terminal is not back in line mode with echo: %v", err)
	}

	// stopped before any key: its goroutine ends (stop waits for it) and
	// the terminal is restored
	_, stop, terminal = watchEscape(tty)
	if !terminal {
		t.Fatal("a pseudo-terminal is not taken for a terminal the second time")
	}
	stop()
	stop() // twice is harmless
	if tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS); err != nil || tio.Lflag&unix.ICANON == 0 {
		t.Errorf("after an early stop the terminal is not back in line mode: %v", err)
	}
}
