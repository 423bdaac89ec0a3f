// Package ci_test tests the scripts of .ci. The go command's ./... leaves
// out directories whose names begin with a dot, so .ci/run runs it by name
// (go test ./.ci).
package ci_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"senseboard/internal/needs"
)

// fakeGo is a go command as old ones behave, for .ci/toolchain: it says
// it is version $FAKE_GO, fails as go 1.19 does inside a module whose
// go.mod names a three-part version, takes only the go env variables and
// flags old versions have, and "downloads" the toolchain module into
// $FAKE_CACHE in the form of the real module (no file modes, _go.mod for
// the go.mod files below the root), printing what go mod download -json
// prints. It logs each call with its directory and environment to
// $FAKE_LOG.
const fakeGo = `#!/bin/bash
echo "$PWD|GO111MODULE=$GO111MODULE|GOFLAGS=$GOFLAGS|$*" >> "$FAKE_LOG"
if [ "$1" != version ]; then
  d="$PWD"
  while [ "$d" != / ]; do
    if [ -f "$d/go.mod" ] && grep -q '^go [0-9]*\.[0-9]*\.[0-9]' "$d/go.mod"; then
      echo "go: errors parsing go.mod:" >&2
      echo "$d/go.mod:3: invalid go version '$(sed -n 's/^go //p' "$d/go.mod")': must match format 1.23" >&2
      exit 1
    fi
    d="$(dirname "$d")"
  done
fi
case "$1" in
version) echo "go version go$FAKE_GO linux/amd64" ;;
env)
  shift
  for v in "$@"; do
    case "$v" in
    GOVERSION) echo "go$FAKE_GO" ;;
    GOHOSTOS) echo linux ;;
    GOHOSTARCH) echo amd64 ;;
    GOPROXY) echo "https://proxy.golang.org,direct" ;;
    *) echo "flag provided but not defined: $v" >&2; exit 2 ;;
    esac
  done ;;
mod)
  [ "$2 $3" = "download -json" ] && [ "$GO111MODULE" = on ] || { echo "go mod: unexpected $*" >&2; exit 2; }
  if [ -n "$FAKE_FAIL" ]; then
    printf '{\n\t"Path": "golang.org/toolchain",\n\t"Error": "not found"\n}\n'
    exit 1
  fi
  dir="$FAKE_CACHE/${4/@/@}"
  mkdir -p "$dir/bin" "$dir/pkg/tool/linux_amd64" "$dir/lib/wasm" "$dir/src/cmd"
  printf '#!/bin/sh\necho "go version go%s linux/amd64"\n' "${4#*-go}" | sed 's/\.linux-amd64 / /' > "$dir/bin/go"
  echo vet > "$dir/pkg/tool/linux_amd64/vet"
  echo exec > "$dir/lib/wasm/go_js_wasm_exec"
  echo "module std" > "$dir/src/_go.mod"
  echo "module cmd" > "$dir/src/cmd/_go.mod"
  chmod 0444 "$dir/bin/go" "$dir/pkg/tool/linux_amd64/vet" "$dir/lib/wasm/go_js_wasm_exec"
  printf '{\n\t"Path": "golang.org/toolchain",\n\t"Version": "%s",\n\t"Dir": "%s",\n\t"Sum": "h1:x="\n}\n' "${4#*@}" "$dir" ;;
*) echo "go $1: unknown command" >&2; exit 2 ;;
esac
`

// TestToolchainScript runs .ci/toolchain with a fake go of each version
// on PATH: an old one (Debian 12's 1.19) gets the toolchain module that
// go.mod names, fetched outside the module and made runnable, with its
// go.mod files back; a new enough one is used as it is; none, or a fetch
// that fails, is an error that says so.
func TestToolchainScript(t *testing.T) {
	t.Parallel()
	bash := needs.Program(t, "bash", "Debian: apt-get install bash", "bash")
	repo, err := filepath.Abs("..") // the module's root
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, l := range strings.Split(string(goMod), "\n") {
		if v, ok := strings.CutPrefix(l, "toolchain go"); ok {
			want = v
			break
		}
		if v, ok := strings.CutPrefix(l, "go "); ok && want == "" {
			want = v
		}
	}
	// the tools the script uses, and no go
	tools := t.TempDir()
	for _, tool := range []string{"bash", "sed", "sort", "head", "awk", "dirname", "chmod", "find", "cp", "grep", "mkdir", "cat"} {
		p := needs.Program(t, tool+", which .ci/toolchain uses,", "Debian's base system has it", tool)
		if err := os.Symlink(p, filepath.Join(tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(version string, env ...string) (string, string, error, string, string) {
		t.Helper()
		dir := t.TempDir()
		cache, log := filepath.Join(dir, "cache"), filepath.Join(dir, "log")
		path := tools
		if version != "" {
			path = fake + ":" + tools
		}
		cmd := exec.Command(bash, filepath.Join(repo, ".ci", "toolchain"))
		cmd.Dir = repo
		cmd.Env = append([]string{"PATH=" + path, "HOME=" + dir, "TMPDIR=" + dir, "FAKE_GO=" + version, "FAKE_CACHE=" + cache, "FAKE_LOG=" + log}, env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		calls, _ := os.ReadFile(log)
		return strings.TrimSpace(stdout.String()), stderr.String(), err, string(calls), cache
	}

	// Debian 12's go: the toolchain module of go.mod's version
	out, stderr, err, calls, cache := run("1.19.8")
	mod := "golang.org/toolchain@v0.0.1-go" + want + ".linux-amd64"
	if err != nil || out != filepath.Join(cache, mod, "bin") {
		t.Fatalf("with go 1.19.8: %v, printed %q\n%s\ncalls:\n%s", err, out, stderr, calls)
	}
	if !strings.Contains(stderr, "go 1.19.8 is on PATH; fetching go "+want) || !strings.Contains(stderr, "go version go"+want) {
		t.Errorf("with go 1.19.8, the script says: %s", stderr)
	}
	for _, call := range strings.Split(strings.TrimSpace(calls), "\n") {
		if strings.HasPrefix(call, repo+"|") {
			t.Errorf("the old go ran inside the module, whose go.mod it cannot read: %s", call)
		}
		if strings.Contains(call, "|mod download") && !strings.Contains(call, "|GO111MODULE=on|GOFLAGS=-modcacherw|mod download -json "+mod) {
			t.Errorf("download: %s", call)
		}
	}
	root := filepath.Dir(out)
	for _, f := range []string{"bin/go", "pkg/tool/linux_amd64/vet", "lib/wasm/go_js_wasm_exec"} {
		if fi, err := os.Stat(filepath.Join(root, f)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", f, err)
		}
	}
	for f, text := range map[string]string{"src/go.mod": "module std\n", "src/cmd/go.mod": "module cmd\n"} {
		if b, err := os.ReadFile(filepath.Join(root, f)); err != nil || string(b) != text {
			t.Errorf("%s: %q, %v; want the module's _go.mod", f, b, err)
		}
	}
	if v, err := exec.Command(filepath.Join(out, "go"), "version").Output(); err != nil || !strings.Contains(string(v), "go"+want+" ") {
		t.Errorf("the fetched go says %q, %v", v, err)
	}

	// a go as new as go.mod's, or newer: that one
	for _, v := range []string{want, "1.99.0"} {
		if out, stderr, err, calls, _ := run(v); err != nil || out != fake || strings.Contains(calls, "mod download") {
			t.Errorf("with go %s: %v, printed %q\n%s\ncalls:\n%s", v, err, out, stderr, calls)
		}
	}
	// no go at all, or no toolchain to fetch
	if out, stderr, err, _, _ := run(""); err == nil || out != "" || !strings.Contains(stderr, "no go on PATH; install one first (Debian: sudo apt install golang-go)") {
		t.Errorf("without go: %v, printed %q, said %q", err, out, stderr)
	}
	if out, stderr, err, _, _ := run("1.19.8", "FAKE_FAIL=1"); err == nil || out != "" || !strings.Contains(stderr, "could not fetch "+mod+" through https://proxy.golang.org,direct") {
		t.Errorf("a fetch that fails: %v, printed %q, said %q", err, out, stderr)
	}
}
