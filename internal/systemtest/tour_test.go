package systemtest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

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
