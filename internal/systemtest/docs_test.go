package systemtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"senseboard/internal/gobuild"
	"senseboard/internal/loopback"
	"senseboard/internal/needs"
)

// The documents whose commands TestDocs runs, in this order: the README's
// tour first, as a new user starts, then every file of docs/, then the
// bleak stand-in's README (its example needs Python's websockets).
// The names are the repository's, from its root (repoRoot).
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot(t), "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v", err)
	}
	for i, d := range docs {
		docs[i] = filepath.Join("docs", filepath.Base(d))
	}
	slices.Sort(docs)
	return append(append([]string{"README.md"}, docs...), "contrib/python/bleak/README.md")
}

// repoRoot returns the repository's root, two directories up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Marks of a shell block (```sh MARK, ```console MARK): every shell block
// of the documents has one, which says whether TestDocs runs it. The
// README's first console block, the device the tour starts, has none.
var blockMarks = map[string]string{
	"tour":     "run, in order, next to the tour's device",
	"websocat": "a WebSocket session (console: $ websocat URL, then the messages typed): each message is sent and must not be refused",
	"synopsis": "the form of a command, with placeholders",
	"setup":    "installs software or changes the shell (apt, go install, PATH)",
	"network":  "fetches from the internet",
	"slow":     "runs long or needs a tool the test does not have: the test suite itself, benchmarks (whose names TestDocsBenchmarksExist checks), fuzzing, hyperfine",
}

// docBlock is a fenced shell block of a document.
type docBlock struct {
	file string
	line int
	mark string
	cmds []string // commands, continuation lines joined, comments dropped
	text string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// shellBlocks returns the fenced blocks of a document that hold shell
// commands, and the first console line ("$ command") of the first console
// block.
func shellBlocks(file, text string) (blocks []docBlock, first string) {
	fence := regexp.MustCompile("(?ms)^```([^\\n]*)\\n(.*?)^```")
	for _, m := range fence.FindAllStringSubmatchIndex(text, -1) {
		info, body := strings.Fields(text[m[2]:m[3]]), text[m[4]:m[5]]
		if len(info) == 0 || !slices.Contains([]string{"sh", "bash", "shell", "console"}, info[0]) {
			continue
		}
		b := docBlock{file: file, line: strings.Count(text[:m[0]], "\n") + 1, text: body}
		if len(info) > 1 {
			b.mark = info[1]
		}
		if file == "README.md" && info[0] == "console" && b.mark == "" && first == "" {
			for _, l := range strings.Split(body, "\n") {
				if c, ok := strings.CutPrefix(l, "$ "); ok {
					first = c
					break
				}
			}
			continue
		}
		var cont string
		for _, l := range strings.Split(body, "\n") {
			l = strings.TrimSpace(l)
			if c, ok := strings.CutSuffix(l, "\\"); ok {
				cont += c
				continue
			}
			if l = cont + l; l != "" && !strings.HasPrefix(l, "#") {
				b.cmds = append(b.cmds, l)
			}
			cont = ""
		}
		blocks = append(blocks, b)
	}
	return blocks, first
}

// allShellBlocks returns the shell blocks of every document of docFiles.
func allShellBlocks(t *testing.T) []docBlock {
	t.Helper()
	var all []docBlock
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(repoRoot(t), file))
		if err != nil {
			t.Fatal(err)
		}
		blocks, _ := shellBlocks(file, string(text))
		all = append(all, blocks...)
	}
	return all
}

// TestDocsBlocksMarked: every shell block of the documents says whether
// TestDocs runs it, with a mark of blockMarks.
func TestDocsBlocksMarked(t *testing.T) {
	runs := 0
	for _, b := range allShellBlocks(t) {
		if _, ok := blockMarks[b.mark]; !ok {
			t.Errorf("%s: a shell block marked %q; mark it with what TestDocs does with it: %v", b, b.mark, slices.Sorted(maps.Keys(blockMarks)))
		}
		if b.mark == "tour" || b.mark == "websocat" {
			runs++
		}
	}
	if runs < 20 {
		t.Errorf("%d blocks of the documents run; the README's tour alone has 6", runs)
	}
}

// TestDocs runs the documents' commands as a new user would, on built
// programs, next to the device the README's tour starts first:
//
//   - it starts the device of the README's first console block (the line
//     after "$ ");
//   - it runs the blocks marked "tour" of README.md, docs/*.md and the
//     bleak stand-in's README, in that order, in one environment (programs
//     that the tour starts keep running for the documents after it, as they
//     would for a user); commands of a block run in one bash (set -e), so
//     each must succeed, and their output must hold no refusal of the bridge
//     ("type":"error") nor an error status of the device ("response": 4xx
//     or 5xx);
//   - commands that start a program that keeps running (senseboard run and
//     bridge, the step counter example, with or without a trailing &) are
//     started apart, as in another terminal; the test waits until they print
//     "Press Ctrl-C to stop." and stops them with Ctrl-C (SIGINT) at the
//     end, when they must exit cleanly;
//   - the blocks marked "websocat" are WebSocket sessions: each message
//     typed is sent, and its answer must not be a refusal or an error status;
//     the session then stays open to the end, its subscriptions running, as
//     a user leaves websocat running in a terminal;
//   - at the end, the directory the commands run in (the checkout, for a
//     user) holds no file they left.
//
// "go run ./cmd/X" becomes the built X. HOME, XDG_STATE_HOME and
// XDG_RUNTIME_DIR are temporary directories (so ~/.local/state/senseboard is
// the test's), /tmp/ is a temporary directory of the test's, and the
// commands run in a temporary directory where scenarios/ and contrib/ are the
// repository's. The ports 7809, 7810 and 8080 become free ports, in the commands
// and as the defaults of senseboard: --listen added where a command that
// runs devices leaves it out, $SENSEBOARD_HTTP for --http and
// $SENSEBOARD_BRIDGE for the bleak stand-in. The radio link between the programs is the test's own:
// $SENSEBOARD_NATS names a free loopback port for the computer's NATS server,
// which the first program starts and the others join; "--nats local" names
// it too. The fleets of the documents run with a few devices: a command's
// --devices of more than 3 becomes 3 (the fleet port 7900 and the first
// port 10000 of a fleet's own ports become free ports, room for them), a
// load that measures for 10 s or more measures for 2 s (--duration) and
// reports every second (--every), and a load asks for no least delivery
// (--min-delivery 0): the test checks that the commands reach every
// device, not how fast this machine is.
func TestDocs(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH to build the programs")
	}
	for _, tool := range []string{"bash", "curl", "grep"} {
		needs.Program(t, tool+", which the documents use,", "Debian: apt-get install "+tool, tool)
	}
	var docs [][]docBlock
	var first string
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(repoRoot(t), file))
		if err != nil {
			t.Fatal(err)
		}
		blocks, f := shellBlocks(file, string(text))
		if file == "README.md" {
			first = f
		}
		docs = append(docs, blocks)
	}
	if first == "" {
		t.Fatal("README: the first device (the first console block) not found")
	}

	tmp := t.TempDir()
	bin, home, work, run, files := filepath.Join(tmp, "bin"), filepath.Join(tmp, "home"), filepath.Join(tmp, "work"), filepath.Join(tmp, "run"), filepath.Join(tmp, "tmp")
	for _, d := range []string{bin, home, work, run, files} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	repo := repoRoot(t)
	for _, d := range []string{"scenarios", "contrib"} {
		if err := os.Symlink(filepath.Join(repo, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	for name, pkg := range map[string]string{
		"senseboard": "senseboard/cmd/senseboard", "wbcmd": "senseboard/cmd/wbcmd", "stepcounter": "senseboard/examples/stepcounter/run",
	} {
		if err := gobuild.Program(pkg, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_RUNTIME_DIR="+run, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SENSEBOARD_TOKEN=",
		"PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in the repository's contrib/
	httpPort, devicePort, secondPort := loopback.FreePort(t), loopback.FreePort(t), loopback.FreePort(t)
	natsLocal, fleetPort, fleetPorts := "local:"+loopback.FreePort(t), loopback.FreePort(t), strconv.Itoa(loopback.FreePorts(t, docFleet))
	env = append(env, "SENSEBOARD_HTTP=127.0.0.1:"+httpPort, "SENSEBOARD_BRIDGE=http://127.0.0.1:"+httpPort,
		"SENSEBOARD_NATS="+natsLocal)
	replace := strings.NewReplacer(":7809", ":"+devicePort, ":7810", ":"+secondPort, ":8080", ":"+httpPort,
		":7900", ":"+fleetPort, ":10000", ":"+fleetPorts, " /tmp/", " "+files+"/", "=/tmp/", "="+files+"/")
	fleet := []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`--devices ([4-9]|[1-9][0-9]+)\b`), "--devices " + strconv.Itoa(docFleet)},
		{regexp.MustCompile(`--duration ([1-9][0-9]+s|[0-9]+m)\b`), "--duration 2s"},
		{regexp.MustCompile(`--every ([1-9][0-9]+s|[0-9]+m)\b`), "--every 1s"},
		{regexp.MustCompile(`--nats local(\s|$)`), "--nats " + natsLocal + "$1"},
		{regexp.MustCompile(`(senseboard load)( |$)`), "$1 --min-delivery 0$2"},
	}
	rewrite := func(cmd string) string {
		for _, r := range [][2]string{
			{"go run ./cmd/senseboard", "senseboard"}, {"go run ./cmd/wbcmd", "wbcmd"},
			{"go run ./examples/stepcounter/run", "stepcounter"},
		} {
			cmd = strings.ReplaceAll(cmd, r[0], r[1])
		}
		for _, f := range fleet {
			cmd = f.re.ReplaceAllString(cmd, f.with)
		}
		if strings.HasPrefix(cmd, "senseboard") && !strings.HasPrefix(cmd, "senseboard bridge") && !strings.HasPrefix(cmd, "senseboard load") && !strings.Contains(cmd, "--listen") {
			c, comment, _ := strings.Cut(cmd, " #")
			cmd = strings.TrimSpace(c) + " --listen 127.0.0.1:7809"
			if comment != "" {
				cmd += " #" + comment
			}
		}
		return replace.Replace(cmd)
	}

	// A hang ends with the test binary's -timeout, a moment before it, so
	// that the programs and commands are stopped and their output shown;
	// a busy machine's slowness is no hang.
	ctx := context.Background()
	if end, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end.Add(-30*time.Second))
		defer cancel()
	}
	var running []*program
	defer func() {
		for _, p := range running {
			if err := p.stop(); err != nil {
				t.Errorf("%s: %v\n%s", p.cmdline, err, p.out.String())
			}
		}
	}()
	start := func(b docBlock, cmdline string) {
		t.Helper()
		p, err := startProgram(ctx, rewrite(cmdline), work, env)
		if p != nil {
			running = append(running, p)
		}
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", b, cmdline, err, p.out.String())
		}
	}
	var sessions []func() // the WebSocket sessions, left open as a user leaves websocat running
	defer func() {
		for _, end := range sessions {
			end()
		}
	}()
	refusal := regexp.MustCompile(`"type":\s*"error"|"response":\s*[45]\d\d`)
	start(docBlock{file: "README.md"}, first)
	python := false
	for _, blocks := range docs {
		for _, b := range blocks {
			switch b.mark {
			case "websocat":
				sessions = append(sessions, websocatSession(ctx, t, b, replace.Replace))
				continue
			case "tour":
			default:
				continue
			}
			if !python && strings.Contains(b.text, "python3") {
				// the documents' Python talks to the bridge with websockets
				if err := os.Symlink(needs.Python(t, "websockets", "Debian: apt-get install python3-websockets"), filepath.Join(bin, "python3")); err != nil {
					t.Fatal(err)
				}
				python = true
			}
			var script []string
			flush := func() {
				if len(script) == 0 {
					return
				}
				text := strings.Join(script, "\n")
				script = nil
				cmd := exec.CommandContext(ctx, "bash", "-e", "-c", rewrite(text))
				cmd.Dir, cmd.Env = work, env
				began := time.Now()
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: the commands\n%s\nfailed: %v\n%s", b, text, err, out)
				}
				if l := refusal.Find(out); l != nil {
					t.Errorf("%s: the commands\n%s\nwere refused (%s):\n%s", b, text, l, out)
				}
				t.Logf("%s (%v):\n%s\n%s", b, time.Since(began).Round(time.Millisecond), text, out)
			}
			for _, line := range b.cmds {
				if c, ok := keepsRunning(line); ok {
					flush()
					start(b, c)
					continue
				}
				script = append(script, line)
			}
			flush()
		}
	}
	if _, err := os.Stat(filepath.Join(files, "ecg-Meas_ECG_250.csv")); err != nil {
		t.Errorf("the recording of the tour: %v", err)
	}
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "scenarios" && e.Name() != "contrib" {
			t.Errorf("the documents' commands left %s in the directory they run in (a user's checkout)", e.Name())
		}
	}
}

// docFleet is how many devices the documents' fleets run with in TestDocs.
const docFleet = 3

// keepsRunning says whether a command of a document starts a program that
// runs until Ctrl-C, and returns it without a trailing "&".
func keepsRunning(cmd string) (string, bool) {
	cmd = strings.TrimSpace(strings.TrimSuffix(cmd, "&"))
	for _, prefix := range []string{"go run ./cmd/senseboard", "senseboard"} {
		rest, ok := strings.CutPrefix(cmd, prefix)
		if !ok || rest != "" && rest[0] != ' ' {
			continue
		}
		args := strings.Fields(rest)
		if len(args) > 0 && slices.Contains([]string{"load", "version", "help", "-h", "--help", "--version"}, args[0]) {
			return "", false
		}
		return cmd, true
	}
	if strings.HasPrefix(cmd, "go run ./examples/stepcounter/run") || strings.HasPrefix(cmd, "stepcounter") {
		return cmd, true
	}
	return "", false
}

// websocatSession plays a "websocat" block: it dials the URL of its
// "$ websocat URL" line and sends each line after it as a message; the
// answer to each (the response or error with its id, or its path when it has
// none) must not be a refusal of the bridge or an error status. The session
// stays open, read and its messages dropped, until end is called.
func websocatSession(ctx context.Context, t *testing.T, b docBlock, rewrite func(string) string) (end func()) {
	t.Helper()
	url, ok := strings.CutPrefix(b.cmds[0], "$ websocat ")
	if !ok {
		t.Fatalf("%s: a websocat block begins with $ websocat URL, not %q", b, b.cmds[0])
	}
	c, _, err := websocket.Dial(ctx, rewrite(strings.Fields(url)[0]), nil)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	done := make(chan struct{})
	end = func() {
		c.Close(websocket.StatusNormalClosure, "")
		<-done
	}
	defer func() {
		go func() { // drains the session until it closes
			defer close(done)
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
	}()
	for _, msg := range b.cmds[1:] {
		var sent struct {
			ID   any    `json:"id"`
			Path string `json:"path"`
		}
		if err := json.Unmarshal([]byte(msg), &sent); err != nil {
			t.Fatalf("%s: %q is no message: %v", b, msg, err)
		}
		id := sent.Path
		if sent.ID != nil {
			id = fmt.Sprint(sent.ID)
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatalf("%s: send %s: %v", b, msg, err)
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("%s: the answer to %s: %v", b, msg, err)
			}
			var got struct {
				Type     string `json:"type"`
				ID       any    `json:"id"`
				Response int    `json:"response"`
			}
			if json.Unmarshal(data, &got) != nil || got.ID == nil || fmt.Sprint(got.ID) != id || got.Type != "response" && got.Type != "error" {
				continue // a notification, a device's state, another's answer
			}
			if got.Type == "error" || got.Response >= 400 {
				t.Errorf("%s: %s was answered %s", b, msg, data)
			}
			t.Logf("%s: %s\n%s", b, msg, data)
			break
		}
	}
	return end
}

// TestDocsBenchmarksExist: every benchmark command of the documents
// (go test ... -bench PATTERN PACKAGES, in a block or in the text) names
// benchmarks that exist in each package it names, as the go command
// matches them (the pattern's first element, unanchored, against the
// names of the package's Benchmark functions). The benchmarks themselves
// are slow, so the test reads their names instead of running them.
func TestDocsBenchmarksExist(t *testing.T) {
	command := regexp.MustCompile("go test [^`\\n]*-bench [^`\\n]*")
	benchmark := regexp.MustCompile(`(?m)^func (Benchmark\w*)\(b \*testing\.B\)`)
	seen := map[string]bool{}
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(repoRoot(t), file))
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range command.FindAllString(string(text), -1) {
			cmd = strings.TrimSpace(strings.SplitN(cmd, "#", 2)[0])
			if seen[cmd] {
				continue
			}
			seen[cmd] = true
			pattern, pkgs := "", []string(nil)
			args := strings.Fields(cmd)[2:]
			for i := 0; i < len(args); i++ {
				switch a := args[i]; {
				case a == "-bench" && i+1 < len(args):
					i++
					pattern = strings.Trim(args[i], "'")
				case a == "-run" || a == "-benchtime" || a == "-cpuprofile" || a == "-count":
					i++
				case strings.HasPrefix(a, "./"):
					pkgs = append(pkgs, a)
				}
			}
			if pattern == "" || len(pkgs) == 0 {
				continue // a mention, such as "go test -bench", with nothing to match
			}
			re, err := regexp.Compile(strings.Split(pattern, "/")[0])
			if err != nil {
				t.Errorf("%s: %s: the pattern: %v", file, cmd, err)
				continue
			}
			for _, pkg := range pkgs {
				tests, _ := filepath.Glob(filepath.Join(repoRoot(t), pkg, "*_test.go"))
				found := false
				for _, f := range tests {
					src, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range benchmark.FindAllSubmatch(src, -1) {
						found = found || re.Match(m[1])
					}
				}
				if !found {
					t.Errorf("%s: %s: no benchmark of %s matches %q", file, cmd, pkg, pattern)
				}
			}
		}
	}
	if len(seen) < 3 {
		t.Errorf("%d benchmark commands found in the documents", len(seen))
	}
}

// The mutation notes of docs/development.md name each surviving mutant by
// its file and line (and column, as gremlins gives it), and the expression
// mutated: "`file.go:N` `expr`", or "`file.go:N` (`expr`, ...)", a line
// named alone ("`:N`") being in the last file its entry named. Each line
// named with its expression holds it as the code is now (runs of spaces
// aside), with the column, when named, on it, so that a change that moves
// the code renumbers the notes with it. An entry that starts "gone since"
// names a mutant whose code has changed, at its run's line: its file no
// longer holds the expression anywhere. A span with no operator in it
// names a variable or a function, not an expression mutated.
func TestDocsMutationNotesLines(t *testing.T) {
	root := repoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, notes, ok := strings.Cut(string(text), "\nThe survivors left are equivalent")
	if !ok {
		t.Fatal("docs/development.md: no mutation notes (The survivors left are equivalent)")
	}
	notes, _, _ = strings.Cut(notes, "\n#")
	span := regexp.MustCompile("`([^`]+)`")
	operator := regexp.MustCompile(`[-+*/%<>=!&|^]`)
	ref := regexp.MustCompile(`^(\w+\.go)?:(\d+)(?::(\d+))?$`)
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	sources := map[string][]string{}
	source := func(path string) ([]string, error) {
		if lines, ok := sources[path]; ok {
			return lines, nil
		}
		src, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, err
		}
		sources[path] = strings.Split(string(src), "\n")
		return sources[path], nil
	}
	// checked counts the expressions checked per package; a package whose
	// notes list survivors and check none is a note the parser misread.
	checked, named := map[string]int{}, map[string]bool{}
	pkg, head, prev := "", "", ""
	for line := range strings.SplitSeq(notes, "\n") {
		// A package's notes start a paragraph with its name; other
		// paragraphs may start with a name of the code.
		paragraph := prev == ""
		prev = line
		if paragraph && strings.HasPrefix(line, "`") {
			head, pkg = span.FindStringSubmatch(line)[1], ""
			if st, err := os.Stat(filepath.Join(root, head)); err == nil && st.IsDir() {
				pkg = head
				checked[pkg] += 0
			}
			continue
		}
		if !strings.HasPrefix(line, "- ") {
			continue
		}
		if pkg == "" {
			t.Errorf("mutation notes under %q, which is not a package's directory: %.40s", head, line)
			continue
		}
		gone := strings.HasPrefix(line, "- gone since ")
		file, at, col := "", 0, 0
		idx := span.FindAllStringSubmatchIndex(line, -1)
		for i, m := range idx {
			s := line[m[2]:m[3]]
			if r := ref.FindStringSubmatch(s); r != nil {
				if r[1] != "" {
					file = r[1]
				}
				at, _ = strconv.Atoi(r[2])
				col, _ = strconv.Atoi(r[3])
				named[pkg] = true
				continue
			}
			// The expression of a line is the code span right after its
			// name, or after the parenthesis that opens a list of them.
			if at == 0 || i == 0 || strings.Trim(line[idx[i-1][1]:m[0]], " (") != "" || !operator.MatchString(s) {
				at = 0
				continue
			}
			n := at
			at = 0
			checked[pkg]++
			if file == "" {
				t.Errorf("the mutation notes of %s name :%d for %q without its file", pkg, n, s)
				continue
			}
			lines, err := source(filepath.Join(pkg, file))
			switch {
			case gone && errors.Is(err, fs.ErrNotExist):
				// The whole file is gone.
			case err != nil:
				t.Errorf("the mutation notes of %s: %v", pkg, err)
			case gone:
				if strings.Contains(squash(strings.Join(lines, "\n")), squash(s)) {
					t.Errorf("the mutation notes of %s say %q of %s:%d is gone, and the file holds it", pkg, s, file, n)
				}
			case n > len(lines) || !strings.Contains(squash(lines[n-1]), squash(s)):
				t.Errorf("the mutation notes of %s name %s:%d for %q, which the line does not hold", pkg, file, n, s)
			case col > 0 && !onColumn(lines[n-1], s, col):
				t.Errorf("the mutation notes of %s name %s:%d:%d for %q, which the column is not in", pkg, file, n, col, s)
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(named)) {
		if checked[pkg] == 0 {
			t.Errorf("the mutation notes of %s name lines, and no expression of theirs was checked", pkg)
		}
	}
	if len(checked) < 10 {
		t.Errorf("the mutation notes of %d packages found", len(checked))
	}
}

// onColumn reports whether one of the places where line holds expr, as
// written, spans the 1-based byte column col, where gremlins names the
// operator it mutated.
func onColumn(line, expr string, col int) bool {
	for from := 0; ; {
		i := strings.Index(line[from:], expr)
		if i < 0 {
			return false
		}
		if i += from; i < col && col <= i+len(expr) {
			return true
		}
		from = i + 1
	}
}

// TestDocsFleetPortsClear: a documented fleet on ports of its own
// (--devices N --listen HOST:PORT, one port a device from PORT) leaves
// clear the ports of the README's device, which the documents run
// beside: its 7809, the second device's 7810, the bridge's 8080 and the
// NATS server's 4222. A device whose port is taken does not start, and
// TestDocs, which runs three devices on free ports, cannot see it.
func TestDocsFleetPortsClear(t *testing.T) {
	devices := regexp.MustCompile(`--devices[ =](\d+)`)
	listen := regexp.MustCompile(`--listen[ =][^ :]+:(\d+)`)
	taken := []int{4222, 7809, 7810, 8080}
	fleets := 0
	for _, b := range allShellBlocks(t) {
		for _, cmd := range b.cmds {
			d, l := devices.FindStringSubmatch(cmd), listen.FindStringSubmatch(cmd)
			if d == nil || l == nil {
				continue
			}
			n, _ := strconv.Atoi(d[1])
			first, _ := strconv.Atoi(l[1])
			if first == 0 {
				continue // the system picks the ports
			}
			fleets++
			for _, p := range taken {
				if first <= p && p < first+n {
					t.Errorf("%s: %s: its %d devices listen on %d to %d, which takes %d of the README's device", b, cmd, n, first, first+n-1, p)
				}
			}
		}
	}
	if fleets == 0 {
		t.Error("no fleet on ports of its own found in the documents")
	}
}
