package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"senseboard/client"
	"senseboard/record"
	"senseboard/resource"
)

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// subscribe holds a subscription and prints, exactly:
//
//	<uri>::onSubscribeResult
//	Subscribed and listening for notifications. Press ESC to stop:
//	@<ms> { <payload> }             (one line per notification)
//	<uri>::onUnsubscribeResult: SUCCESS
//	<envelope>                      (operation subscribe, querytimems the whole subscription)
//
// The second line offers ESC only when stdin is a terminal, where ESC
// stops; otherwise it ends at "notifications.". <ms> counts milliseconds
// since the subscription started. An object
// payload is printed with its own braces ({ "Timestamp": ... }), so what
// follows "@<ms> " is the notification's JSON. With --record the
// notifications also go to files; stderr says which.
//
// Nothing is dropped on the way: the connection's reader hands each
// notification to the printing loop and waits until the loop takes it, so
// a loop that prints slowly (a slow terminal or pipe) holds the reading of
// the line back, and what it has not printed waits in the line, as on a
// serial tool: the device then waits for room or applies its own rules for
// a client that reads too slowly (docs/wbcmd.md).
func subscribe(ctx context.Context, c *client.Conn, o *options, stdin io.Reader, stdout, stderr io.Writer) int {
	start := time.Now()
	notes := make(chan client.Notification, handoverBuffer)
	done := make(chan struct{})
	stopHandover := sync.OnceFunc(func() { close(done) }) // before Unsubscribe: its answer comes on the reader
	defer stopHandover()
	sub, env, err := c.SubscribeFunc(ctx, o.path, func(payload []byte, received time.Time) {
		select {
		case notes <- client.Notification{Received: received, Payload: append(json.RawMessage(nil), payload...)}:
		case <-done:
		}
	}, o.params...)
	if err != nil {
		fmt.Fprintln(stderr, "wbcmd:", err)
		return exitNoDevice
	}
	if !env.OK() {
		printEnvelope(stdout, env.Raw, o.compact)
		return exitStatus
	}
	var rec *record.Recorder
	if o.record != "" {
		format, _ := record.FormatOf(o.record) // checked with the flags
		file, err := filepath.Abs(o.record)
		if err == nil {
			rec, err = record.New(file, format)
		}
		if err != nil {
			fmt.Fprintln(stderr, "wbcmd:", err)
			stopHandover()
			sub.Unsubscribe(ctx)
			return exitUsage
		}
		defer func() {
			if err := rec.Close(); err != nil {
				fmt.Fprintln(stderr, "wbcmd:", err)
			}
			if files := rec.Files(); len(files) > 0 {
				fmt.Fprintf(stderr, "wbcmd: recorded to %s\n", strings.Join(files, ", "))
			} else {
				fmt.Fprintln(stderr, "wbcmd: recorded nothing: no notification came")
			}
		}()
		fmt.Fprintf(stderr, "wbcmd: recording to %s\n", rec.File(env.URI))
	}
	recording := rec != nil
	esc, stopEscape, terminal := watchEscape(stdin)
	defer stopEscape()
	fmt.Fprintf(stdout, "%s::onSubscribeResult\n", env.URI)
	fmt.Fprintln(stdout, listening(terminal))
	var deadline <-chan time.Time
	if o.duration > 0 {
		t := time.NewTimer(o.duration)
		defer t.Stop()
		deadline = t.C
	}
	n := 0
	// show prints a notification and reports whether it was the last
	// that --count asks for.
	show := func(note client.Notification) bool {
		fmt.Fprintf(stdout, "@%d %s\n", note.Received.Sub(start).Milliseconds(), braced(note.Payload))
		if recording {
			if err := rec.Write(env.URI, note.Payload); err != nil {
				fmt.Fprintln(stderr, "wbcmd:", err)
				recording = false // the rest is printed only
			}
		}
		n++
		return o.count > 0 && n >= o.count
	}
	var ended error
loop:
	for {
		select {
		case note := <-notes:
			if show(note) {
				break loop
			}
		case <-sub.C():
			// C closes once the reader has handed over every
			// notification of the subscription: print those waiting.
			ended = sub.Err()
			for len(notes) > 0 {
				if show(<-notes) {
					break
				}
			}
			break loop
		case <-esc:
			break loop
		case <-deadline:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	stopHandover()
	status := exitOK
	if ended != nil {
		fmt.Fprintln(stderr, "wbcmd:", ended)
		status = exitStatus
	} else {
		uctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		u, err := sub.Unsubscribe(uctx)
		switch {
		case err != nil:
			fmt.Fprintln(stderr, "wbcmd: unsubscribe:", err)
			return exitNoDevice
		case u.OK():
			fmt.Fprintf(stdout, "%s::onUnsubscribeResult: SUCCESS\n", env.URI)
		default:
			fmt.Fprintf(stdout, "%s::onUnsubscribeResult: FAILED (%s)\n", env.URI, u.Error)
			status = exitStatus
		}
	}
	total := time.Since(start)
	st := resource.Status(env.Response)
	if st == resource.StatusNoContent && n > 0 {
		st = resource.StatusOK // nothing to say at first (HR), but notifications came
	}
	final := resource.Envelope{Status: st, Op: resource.Subscribe, URI: env.URI, QueryTime: total}
	b, _ := final.AppendJSON(nil)
	printEnvelope(stdout, b, o.compact)
	return status
}

// handoverBuffer is how many notifications the connection's reader may
// hand over ahead of the printing loop before it waits for the loop.
const handoverBuffer = 64

// braced formats a payload as { <payload> }: an object keeps its braces.
func braced(p json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, p); err != nil {
		b.Reset()
		b.Write(p)
	}
	s := b.String()
	if len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' {
		if s == "{}" {
			return "{ }"
		}
		return "{ " + s[1:len(s)-1] + " }"
	}
	return "{ " + s + " }"
}

// listening is the line that follows a subscription's result.
func listening(terminal bool) string {
	if terminal {
		return "Subscribed and listening for notifications. Press ESC to stop:"
	}
	return "Subscribed and listening for notifications."
}

// watchEscape returns a channel that receives when ESC is pressed, and
// whether it can: when stdin is a terminal, which then goes to character
// mode (no echo) until stop is called. Ctrl-C stays a signal. stop ends the
// watch, waits for its goroutine and restores the terminal; it is safe to
// call more than once.
func watchEscape(stdin io.Reader) (esc <-chan struct{}, stop func(), terminal bool) {
	ch := make(chan struct{})
	none := func() {}
	f, ok := stdin.(*os.File)
	if !ok {
		return ch, none, false
	}
	fd := int(f.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return ch, none, false // not a terminal
	}
	old := *t
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(fd, unix.TCSETS, t) != nil {
		return ch, none, false
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		b := make([]byte, 1)
		for {
			select {
			case <-done:
				return
			default:
			}
			// a read only when a byte waits, so that stop is seen within
			// escapePoll
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(fds, int(escapePoll.Milliseconds())); err == unix.EINTR || err == nil && n == 0 {
				continue
			} else if err != nil || fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				return
			}
			n, err := f.Read(b)
			if err != nil {
				return
			}
			if n == 1 && b[0] == 0x1b {
				close(ch)
				return
			}
		}
	})
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			unix.IoctlSetTermios(fd, unix.TCSETS, &old)
		})
	}, true
}

// escapePoll is how long watchEscape's goroutine waits for a key before it
// looks whether it is to stop.
const escapePoll = 100 * time.Millisecond

// printEnvelope prints an envelope's JSON, indented unless compact.
func printEnvelope(w io.Writer, raw []byte, compact bool) {
	var b bytes.Buffer
	var err error
	if compact {
		err = json.Compact(&b, raw)
	} else {
		err = json.Indent(&b, raw, "", "  ")
	}
	if err != nil {
		b.Reset()
		b.Write(raw)
	}
	b.WriteByte('\n')
	w.Write(b.Bytes())
}
