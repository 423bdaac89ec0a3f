package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"senseboard/internal/await"
	"senseboard/internal/gobuild"
	"senseboard/internal/loopback"
)

// bin holds the senseboard and wbcmd programs the scripts run. Their wbcmd
// waits as long as the tests' hang guards for each answer (--timeout 1m
// before the script's own flags, which a script's --timeout overrides), not
// the 5 s a loaded machine can reach.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wbcmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, cmd := range []string{"senseboard", "real/wbcmd"} {
		if err := gobuild.Program("senseboard/cmd/"+filepath.Base(cmd), filepath.Join(dir, cmd)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nexec '%s' --timeout %v \"$@\"\n", filepath.Join(real, "wbcmd"), await.Guard)
	if err := os.WriteFile(filepath.Join(dir, "wbcmd"), []byte(wrapper), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestScripts runs testdata/script/*.txtar: each starts a device with
// senseboard and talks to it with wbcmd, both as separate processes.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("PORT", loopback.FreePort(t))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "xdg"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// waitfor tcp ADDR | file PATH: wait for a listener or a file (a minute at most, a guard against hanging)
			"waitfor": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: waitfor tcp ADDR | file PATH")
				}
				deadline := time.Now().Add(time.Minute)
				for {
					var err error
					switch args[0] {
					case "tcp":
						var c net.Conn
						if c, err = net.Dial("tcp", args[1]); err == nil {
							c.Close()
						}
					case "file":
						_, err = os.Stat(ts.MkAbs(args[1]))
					default:
						ts.Fatalf("waitfor %s: tcp or file", args[0])
					}
					if err == nil {
						return
					}
					if time.Now().After(deadline) {
						ts.Fatalf("waitfor %s %s: %v", args[0], args[1], err)
					}
					time.Sleep(20 * time.Millisecond)
				}
			},
			// lines N: stdout of the last command has exactly N lines
			"lines": func(ts *testscript.TestScript, neg bool, args []string) {
				n := strings.Count(ts.ReadFile("stdout"), "\n")
				if fmt.Sprint(n) != args[0] {
					ts.Fatalf("stdout has %d lines, want %s", n, args[0])
				}
			},
		},
	})
}
