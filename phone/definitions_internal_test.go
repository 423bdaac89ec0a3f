package phone

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"

	"senseboard/api"
	"senseboard/link"
)

// countingFiler serves one definition file and counts the asks.
type countingFiler struct {
	file  link.DefinitionFile
	calls int
}

func (c *countingFiler) DefinitionFile(_ context.Context, name string) (link.DefinitionFile, error) {
	c.calls++
	f := c.file
	f.Name = name
	return f, nil
}

// fetchCacheRuns counts the runs of TestFetchFileCache in this process.
var fetchCacheRuns atomic.Int64

// A file fetched from a device is parsed once: an app's file by its hash,
// a built-in file of a firmware other than the bridge's by the hash of
// that firmware's set; a file nothing identifies is asked for each time,
// and an app's file whose hash differs from its index's is refused. Files
// fetched later do not push out those fetched before.
func TestFetchFileCache(t *testing.T) {
	t.Parallel()
	// the cache is the process's: names and sets of their own in each
	// run (go test -count=N runs the test again in the same process)
	run := fmt.Sprintf("run%d-", fetchCacheRuns.Add(1))
	text, err := fs.ReadFile(api.Files(), "info.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hash := api.FileHash(text)
	d := &peer{serial: "000000"}
	c := &countingFiler{file: link.DefinitionFile{SHA256: hash, YAML: string(text)}}
	for _, tc := range []struct {
		name  string
		id    fileID
		calls int // asks of the device after this fetch
	}{
		{"a built-in file of another firmware", fileID{name: run + "fetchtest-a.yaml", set: run + "other-firmware-1"}, 1},
		{"the same again", fileID{name: run + "fetchtest-a.yaml", set: run + "other-firmware-1"}, 1},
		{"the same name in a third firmware", fileID{name: run + "fetchtest-a.yaml", set: run + "other-firmware-2"}, 2},
		{"another file of the second firmware", fileID{name: run + "fetchtest-ph.yaml", set: run + "other-firmware-1"}, 3},
		{"an app's file", fileID{name: run + "fetchtest-app.yaml", sha256: hash}, 4},
		{"the app's file again", fileID{name: run + "fetchtest-app.yaml", sha256: hash}, 4},
		{"the first file again, after others", fileID{name: run + "fetchtest-a.yaml", set: run + "other-firmware-1"}, 4},
		{"a file nothing identifies", fileID{name: run + "fetchtest-c.yaml"}, 5},
		{"that file again", fileID{name: run + "fetchtest-c.yaml"}, 6},
	} {
		f, err := d.fetchFile(context.Background(), c, tc.id)
		if err != nil || f == nil || f.Name != tc.id.name {
			t.Fatalf("%s: %v, %v", tc.name, f, err)
		}
		if c.calls != tc.calls {
			t.Errorf("%s: %d asks of the device, want %d", tc.name, c.calls, tc.calls)
		}
	}
	if _, err := d.fetchFile(context.Background(), c, fileID{name: run + "fetchtest-changed.yaml", sha256: "00" + hash[2:]}); err == nil {
		t.Error("an app's file whose hash differs from the index's was taken")
	}
}

// A fetch that the device's answer fails says so naming the device once,
// as the link's errors do: a file whose hash differs from its app's index,
// and a file that does not parse.
func TestFetchFileErrorsNameTheDevice(t *testing.T) {
	t.Parallel()
	d := &peer{serial: "000321"}
	for _, tc := range []struct {
		name string
		file link.DefinitionFile
		id   fileID
	}{
		{"a file changed since the index", link.DefinitionFile{SHA256: "aa", YAML: "swagger: '2.0'\n"}, fileID{name: "errtest-changed.yaml", sha256: "bb"}},
		{"a file that does not parse", link.DefinitionFile{YAML: "swagger: [\n"}, fileID{name: "errtest-broken.yaml"}},
	} {
		_, err := d.fetchFile(context.Background(), &countingFiler{file: tc.file}, tc.id)
		if err == nil || !strings.HasPrefix(err.Error(), "device 000321: definitions: ") || strings.Count(err.Error(), "000321") != 1 {
			t.Errorf("%s: %v; want an error that names the device once, first", tc.name, err)
		}
	}
}
