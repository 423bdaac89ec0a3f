package senseboard_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"senseboard/internal/gobuild"
	"senseboard/internal/loopback"
	"senseboard/internal/needs"
)

// TestReadmeTour runs the README's tour as a new user would, on built
// programs, next to the device the tour starts first:
//
//   - it starts the device of the first console block (the line after "$ ");
//   - it runs the fenced blocks marked "sh tour", in order; commands of a
//     block run in one bash (set -e), so each must succeed;
//   - commands that start a program that keeps running (senseboard run and
//     the step counter example) are started apart, as in another terminal;
//     the test waits until they print "Press Ctrl-C to stop." and stops them
//     with Ctrl-C (SIGINT) at the end, when they must exit cleanly.
//
// "go run ./cmd/X" becomes the built X. HOME, XDG_STATE_HOME and
// XDG_RUNTIME_DIR are temporary directories (so ~/.local/state/senseboard is
// the test's), and the commands run in a temporary directory where
// scenarios/ is the repository's. The README's ports 7809 and 8080 become
// free ports, in the commands and as the defaults of senseboard: --listen
// added where a command leaves it out, and $SENSEBOARD_HTTP for --http. The
// radio link between the programs is the test's own: $SENSEBOARD_NATS names
// a free loopback port for the computer's NATS server, which the first
// program starts and the others join.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH to build the programs")
	}
	for _, tool := range []string{"bash", "curl", "grep"} {
		needs.Program(t, tool+", which the tour uses,", "Debian: apt-get install "+tool, tool)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	first, blocks := tourOf(t, string(readme))

	tmp := t.TempDir()
	bin, home, work, run := filepath.Join(tmp, "bin"), filepath.Join(tmp, "home"), filepath.Join(tmp, "work"), filepath.Join(tmp, "run")
	for _, d := range []string{bin, home, work, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	repo, _ := os.Getwd()
	if err := os.Symlink(filepath.Join(repo, "scenarios"), filepath.Join(work, "scenarios")); err != nil {
		t.Fatal(err)
	}
	for name, pkg := range map[string]string{
		"senseboard": "senseboard/cmd/senseboard", "wbcmd": "senseboard/cmd/wbcmd", "stepcounter": "senseboard/examples/stepcounter/run",
	} {
		if err := gobuild.Program(pkg, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_RUNTIME_DIR="+run, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SENSEBOARD_TOKEN=")
	httpPort := loopback.FreePort(t)
	env = append(env, "SENSEBOARD_HTTP=127.0.0.1:"+httpPort, "SENSEBOARD_NATS=local:"+loopback.FreePort(t))
	ports := strings.NewReplacer(":7809", ":"+loopback.FreePort(t), ":8080", ":"+httpPort)
	rewrite := func(cmd string) string {
		for _, r := range [][2]string{
			{"go run ./cmd/senseboard", "senseboard"}, {"go run ./cmd/wbcmd", "wbcmd"},
			{"go run ./examples/stepcounter/run", "stepcounter"},
		} {
			cmd = strings.ReplaceAll(cmd, r[0], r[1])
		}
		if strings.HasPrefix(cmd, "senseboard") && !strings.HasPrefix(cmd, "senseboard bridge") && !strings.Contains(cmd, "--listen") {
			cmd += " --listen 127.0.0.1:7809"
		}
		return ports.Replace(cmd)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a guard against a hang, not a speed check
	defer cancel()
	var running []*program
	defer func() {
		for _, p := range running {
			if err := p.stop(); err != nil {
				t.Errorf("%s: %v\n%s", p.cmdline, err, p.out.String())
			}
		}
	}()
	start := func(cmdline string) {
		t.Helper()
		p, err := startProgram(ctx, rewrite(cmdline), work, env)
		if p != nil {
			running = append(running, p)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmdline, err, p.out.String())
		}
	}
	start(first)
	for _, block := range blocks {
		var script []string
		flush := func() {
			if len(script) == 0 {
				return
			}
			text := strings.Join(script, "\n")
			script = nil
			cmd := exec.CommandContext(ctx, "bash", "-e", "-c", rewrite(text))
			cmd.Dir, cmd.Env = work, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the tour's commands\n%s\nfailed: %v\n%s", text, err, out)
			}
			t.Logf("%s\n%s", text, out)
		}
		for _, line := range block {
			if keepsRunning(line) {
				flush()
				start(line)
				continue
			}
			script = append(script, line)
		}
		flush()
	}
	if _, err := os.Stat(filepath.Join(work, "ecg-Meas_ECG_250.csv")); err != nil {
		t.Errorf("the recording of the tour: %v", err)
	}
}

// tourOf returns the command of the README's first console block and the
// commands of its "sh tour" blocks.
func tourOf(t *testing.T, readme string) (first string, blocks [][]string) {
	t.Helper()
	fence := regexp.MustCompile("(?ms)^```([^\\n]*)\\n(.*?)^```")
	for _, m := range fence.FindAllStringSubmatch(readme, -1) {
		info, body := strings.Fields(m[1]), m[2]
		switch {
		case first == "" && len(info) > 0 && info[0] == "console":
			for _, l := range strings.Split(body, "\n") {
				if c, ok := strings.CutPrefix(l, "$ "); ok {
					first = c
					break
				}
			}
		case len(info) == 2 && info[0] == "sh" && info[1] == "tour":
			var cmds []string
			for _, l := range strings.Split(body, "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					cmds = append(cmds, l)
				}
			}
			blocks = append(blocks, cmds)
		}
	}
	if first == "" || len(blocks) < 5 {
		t.Fatalf("README: the first device (%q) or the tour's blocks (%d) not found", first, len(blocks))
	}
	return first, blocks
}

// keepsRunning says whether a tour command starts a program that runs
// until Ctrl-C.
func keepsRunning(cmd string) bool {
	return strings.HasPrefix(cmd, "go run ./cmd/senseboard") && !strings.HasPrefix(cmd, "go run ./cmd/senseboard bridge") ||
		strings.HasPrefix(cmd, "go run ./examples/stepcounter/run")
}

// program is a tour command that keeps running.
type program struct {
	cmdline string
	cmd     *exec.Cmd
	out     syncBuffer
	done    chan error
}

const readyLine = "Press Ctrl-C to stop."

// startProgram starts cmdline with bash and waits for its ready line.
func startProgram(ctx context.Context, cmdline, dir string, env []string) (*program, error) {
	p := &program{cmdline: cmdline, done: make(chan error, 1)}
	p.cmd = exec.CommandContext(ctx, "bash", "-c", "exec "+cmdline)
	p.cmd.Dir, p.cmd.Env, p.cmd.Stderr = dir, env, &p.out
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			p.out.Write(append(sc.Bytes(), '\n'))
			if !seen && strings.TrimSpace(sc.Text()) == readyLine {
				seen = true
				close(ready)
			}
		}
		io.Copy(io.Discard, stdout)
		p.done <- p.cmd.Wait()
	}()
	select {
	case <-ready:
		return p, nil
	case err := <-p.done:
		p.done <- err
		return p, fmt.Errorf("ended before it was ready: %v", err)
	case <-ctx.Done():
		return p, ctx.Err()
	}
}

// stop interrupts the program as Ctrl-C does; it must exit with status 0.
func (p *program) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return <-p.done
}

// syncBuffer is a bytes.Buffer for two writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
