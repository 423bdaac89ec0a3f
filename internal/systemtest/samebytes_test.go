package systemtest_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/resource"
	"senseboard/wire"
	"senseboard/world"
)

// streamBytesFile holds the SHA-256 of every stream of TestStreamBytesUnchanged,
// for one architecture: math.Exp and fused multiply-adds round differently
// on others, so their samples differ in the last bits.
var streamBytesFile = filepath.Join("testdata", "stream-bytes-"+runtime.GOARCH+".txt")

// updateStreams records the sums anew. It is a flag of its own, not the
// package's -update of the docs' tables, so that rewriting a table cannot
// record a changed stream by the way.
var updateStreams = flag.Bool("update-streams", false, "record the stream sums of TestStreamBytesUnchanged anew, after an intended change of the streams")

// streamBytesScenarios are the wearers of TestStreamBytesUnchanged: at rest,
// walking, a heart with ectopic beats and atrial fibrillation, a workout
// with ECG noise, a contact loss, the gear off and on and a tap, and a slow
// heart with premature ventricular beats, whose intervals (over a second)
// scale the T waves most.
var streamBytesScenarios = []struct{ name, yaml string }{
	{"rest", ""},
	{"walk", "segments:\n  - walk: 1h\n    cadence: 112\n"},
	{"slow", "start:\n  heartRate: 44\nheart:\n  pvc: 6\n"},
	{"arrhythmia", `heart:
  pvc: 8
  pac: 5
  episodes:
    - at: 12s
      afib: 12s
`},
	{"workout", `segments:
  - run: 14s
    cadence: 165
  - walk: 1h
ecgNoise:
  baselineWander: 12
  muscle: 6
  electrodeMotion: 9
events:
  - at: 11s
    contactLoss: 2s
  - at: 16s
    gear: off
  - at: 19s
    gear: on
  - at: 23s
    tap: {}
`},
}

// streamBytesRun is how long each scenario runs, in device time.
const streamBytesRun = 25 * time.Second

// hashSink hashes the wire frames of the notifications of one stream.
type hashSink struct {
	buf    []byte
	h      hash.Hash
	frames int
}

func (s *hashSink) Notify(n resource.Notification) bool {
	var err error
	if s.buf, err = wire.AppendJSONFrame(s.buf[:0], wire.Notification, 1, n.Content); err != nil {
		panic(err) // the test sees no sum; the panic names the content
	}
	s.h.Write(s.buf)
	s.frames++
	return true
}

func (s *hashSink) Ended(*resource.Subscription, resource.EndReason) {}

// take hashes what q's events carry, as a session encodes them, and
// releases each notification afterwards, as a session does.
func (s *hashSink) take(events []resource.Event) {
	for _, e := range events {
		if e.Ended != 0 {
			continue
		}
		s.Notify(resource.Notification{Sub: e.Sub, Content: e.Content})
		if r, ok := e.Content.(resource.Recyclable); ok {
			r.Release()
		}
	}
}

func (s *hashSink) sum() string { return fmt.Sprintf("%x %d", s.h.Sum(nil), s.frames) }

// streamSums runs scenario sc on the virtual clock with the streams of paths
// subscribed together, each by a client of its own, and returns for each
// stream the SHA-256 of its notifications' wire frames and their number.
func streamSums(t *testing.T, sc *world.Scenario, paths []string) []string {
	c := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Clock: c, Seed: 7, StateDir: t.TempDir(), Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sinks := make([]*hashSink, len(paths))
	for i, p := range paths {
		sinks[i] = &hashSink{h: sha256.New()}
		cl := resource.NewClient("golden", sinks[i])
		defer cl.Close()
		if env, _ := d.Do(&resource.Request{Op: resource.Subscribe, Path: p, Client: cl}); !env.Status.OK() {
			t.Fatalf("SUBSCRIBE %s: %d", p, env.Status)
		}
	}
	c.Advance(streamBytesRun)
	out := make([]string, len(paths))
	for i, s := range sinks {
		if s.frames == 0 {
			t.Fatalf("%s: no notification in %v", paths[i], streamBytesRun)
		}
		out[i] = s.sum()
	}
	return out
}

// reuseStep is how often streamSumsReused drains its queues, and
// reuseLag how many steps later the second queue's reader takes what it
// drained: longer than a stream's batches take to be made.
const (
	reuseStep = 10 * time.Millisecond
	reuseLag  = 20
)

// streamSumsReused is streamSums with the streams of paths subscribed
// through queues that release what they took, as sessions do, so that the
// motion and ECG notifications go back to their pools and are made again:
// two queues each, both drained every reuseStep, the first's taken at
// once and the second's reuseLag steps later, after the next
// notifications were made. It returns each stream's sums as each queue's
// reader saw them.
func streamSumsReused(t *testing.T, sc *world.Scenario, paths []string) (first, second []string) {
	c := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Clock: c, Seed: 7, StateDir: t.TempDir(), Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	type reader struct {
		q    *resource.Queue
		sink *hashSink
		late [][]resource.Event // the second queue's, drained in the last steps
	}
	var readers [][2]*reader
	for _, p := range paths {
		var pair [2]*reader
		for i := range pair {
			pair[i] = &reader{q: resource.NewQueue(256), sink: &hashSink{h: sha256.New()}}
			cl := resource.NewClient("golden", pair[i].q)
			defer cl.Close()
			if env, _ := d.Do(&resource.Request{Op: resource.Subscribe, Path: p, Client: cl}); !env.Status.OK() {
				t.Fatalf("SUBSCRIBE %s: %d", p, env.Status)
			}
		}
		readers = append(readers, pair)
	}
	for range streamBytesRun / reuseStep {
		c.Advance(reuseStep)
		for _, pair := range readers {
			pair[0].sink.take(pair[0].q.Drain(nil))
			late := append(pair[1].late, pair[1].q.Drain(nil))
			if len(late) > reuseLag {
				pair[1].sink.take(late[0])
				late = late[1:]
			}
			pair[1].late = late
		}
	}
	for i, pair := range readers {
		for _, events := range pair[1].late {
			pair[1].sink.take(events)
		}
		for _, r := range pair {
			if r.sink.frames == 0 {
				t.Fatalf("%s: no notification in %v", paths[i], streamBytesRun)
			}
		}
		first = append(first, pair[0].sink.sum())
		second = append(second, pair[1].sink.sum())
	}
	return first, second
}

// TestStreamBytesUnchanged checks that the fleet streams (IMU6 at 52 Hz,
// ECG at 125 Hz, heart rate) of a seeded device give the same bytes as
// recorded, for several wearers, subscribed together and each alone, and
// together through queues whose readers release what they took, so that
// notifications are made again from their pools: a change meant to make
// the device faster must not change what it says.
// After an intended change of the streams,
// `go test ./internal/systemtest -run TestStreamBytesUnchanged -update-streams` records the new sums.
func TestStreamBytesUnchanged(t *testing.T) {
	want, err := readStreamSums(streamBytesFile)
	if errors.Is(err, fs.ErrNotExist) && !*updateStreams {
		t.Skipf("no sums recorded for %s (go test ./internal/systemtest -run TestStreamBytesUnchanged -update-streams records them): %v", runtime.GOARCH, err)
	}
	if err != nil && !*updateStreams {
		t.Fatal(err)
	}
	got := make(map[string]string)
	results := make(chan map[string]string, len(streamBytesScenarios))
	t.Run("scenarios", func(t *testing.T) {
		for _, s := range streamBytesScenarios {
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				sc := world.DefaultScenario()
				if s.yaml != "" {
					var err error
					if sc, err = world.ParseScenario([]byte(s.yaml)); err != nil {
						t.Fatal(err)
					}
				}
				sums := make(map[string]string)
				for i, sum := range streamSums(t, sc, fleetStreams) {
					sums[s.name+" together "+fleetStreams[i]] = sum
				}
				for _, p := range fleetStreams {
					sums[s.name+" alone "+p] = streamSums(t, sc, []string{p})[0]
				}
				// Notifications made again from their pools say the same.
				first, second := streamSumsReused(t, sc, fleetStreams)
				for i, p := range fleetStreams {
					k := s.name + " together " + p
					if first[i] != sums[k] || second[i] != sums[k] {
						t.Errorf("%s, through queues that release what they took: sha256 and notifications %s and, taken later, %s; kept by their sink %s", k, first[i], second[i], sums[k])
					}
				}
				for k, sum := range sums {
					if w, ok := want[k]; !*updateStreams && (!ok || w != sum) {
						t.Errorf("%s: the stream's bytes changed: sha256 and notifications %s, recorded %q", k, sum, w)
					}
				}
				results <- sums
			})
		}
	})
	close(results)
	for sums := range results {
		for k, v := range sums {
			got[k] = v
		}
	}
	if *updateStreams {
		if len(got) != 2*len(streamBytesScenarios)*len(fleetStreams) {
			t.Fatalf("%d sums: a scenario failed, not recording", len(got))
		}
		if err := writeStreamSums(streamBytesFile, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	for k := range want {
		if _, ok := got[k]; !ok && !t.Failed() {
			t.Errorf("%s is recorded but no longer checked: -update-streams forgets it", k)
		}
	}
}

// readStreamSums reads lines "scenario mode path: sha256 notifications".
func readStreamSums(name string) (map[string]string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("stream sums: %w", err)
	}
	out := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, v, ok := strings.Cut(text, ": ")
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q: want \"scenario mode path: sha256 notifications\"", name, line, text)
		}
		out[k] = v
	}
	return out, nil
}

func writeStreamSums(name string, sums map[string]string) error {
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# SHA-256 of the notification wire frames of each stream, and their number,\n")
	b.WriteString("# of TestStreamBytesUnchanged (samebytes_test.go). Rewrite only for an\n")
	b.WriteString("# intended change of the streams: go test ./internal/systemtest -run TestStreamBytesUnchanged -update-streams\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, sums[k])
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}
