package debug_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/provider/debug"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func enable(t *testing.T, d *sbt.Rig, system, user bool) {
	t.Helper()
	d.Expect(200, resource.Put, "/System/Debug/Config",
		sbt.Record(t, "DebugMessageConfig", fmt.Sprintf(`{"SystemMessages": %v, "DebugMessages": %v}`, system, user)))
}

func messages(s *sbt.Sub) []string {
	var out []string
	for _, c := range s.Contents() {
		m := c.(*debug.Message)
		out = append(out, fmt.Sprintf("%s:%s", m.Level.Name, m.Message))
	}
	return out
}

func TestConfigDefaultsAndPersists(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	if c := d.Expect(200, resource.Get, "/System/Debug/Config").Content.(*debug.Config); c.SystemMessages || c.DebugMessages {
		t.Errorf("defaults %+v", c)
	}
	enable(t, d, true, false)
	d.Restart()
	if c := d.Expect(200, resource.Get, "/System/Debug/Config").Content.(*debug.Config); !c.SystemMessages || c.DebugMessages {
		t.Errorf("after restart %+v", c)
	}
}

func TestLevelStreams(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	warn := d.Subscribe("/System/Debug/WARNING")
	verbose := d.Subscribe("/System/Debug/verbose")
	d.Expect(400, resource.Subscribe, "/System/Debug/loud")
	for l := device.LevelFatal; l <= device.LevelVerbose; l++ {
		d.Device.Logf(l, "before enabling %d", l)
	}
	enable(t, d, true, false)
	for l := device.LevelFatal; l <= device.LevelVerbose; l++ {
		d.Device.Logf(l, "system %d", l)
		d.Device.Log(device.GroupUser, l, "user, not enabled")
	}
	d.Advance(debug.DrainInterval)
	if got := strings.Join(messages(warn), " | "); got != "Fatal:system 0 | Error:system 1 | Warning:system 2" {
		t.Errorf("warning subscriber got %s", got)
	}
	if got := len(messages(verbose)); got != 5 {
		t.Errorf("verbose subscriber got %d messages, want 5", got)
	}
	enable(t, d, false, true)
	d.Device.Log(device.GroupUser, device.LevelError, "from an app")
	d.Device.Logf(device.LevelError, "system, now off")
	d.Advance(debug.DrainInterval)
	if got := fmt.Sprint(messages(warn)); got != "[Error:from an app]" {
		t.Errorf("user group only: %s", got)
	}
}

func TestMessageBuffer(t *testing.T) {
	d := sbt.New(t, senseboard.Config{}) // 6 lines, 120 characters
	enable(t, d, true, false)
	s := d.Subscribe("/System/Debug/verbose")
	sixty := strings.Repeat("a", 59) // 60 characters with its terminator
	d.Device.Logf(device.LevelInfo, "%s", sixty)
	d.Device.Logf(device.LevelInfo, "%s", sixty)
	d.Device.Logf(device.LevelInfo, "%s", "a third message finds no room")
	d.Device.Logf(device.LevelInfo, "%s", "nor does a fourth")
	d.Advance(debug.DrainInterval)
	got := messages(s)
	if len(got) != 4 || got[0] != "Info:"+sixty || got[1] != "Info:"+sixty || got[2] != "Info:"+debug.Ellipsis ||
		got[3] != "Warning:1 debug messages did not fit in the message buffer (6 lines, 120 characters)" {
		t.Errorf("two 60-character messages and more: %q", got)
	}
	for i := range 7 {
		d.Device.Logf(device.LevelInfo, "message %011d", i) // 19 characters, 20 with the terminator
	}
	d.Advance(debug.DrainInterval)
	got = messages(s)
	if len(got) != 7 || got[5] != "Info:message 00000000005" || !strings.Contains(got[6], "1 debug messages did not fit") {
		t.Errorf("seven messages of 20: %q", got)
	}
	d.Device.Logf(device.LevelInfo, "%s", strings.Repeat("b", 200)) // clipped to the room left, with an ellipsis
	d.Advance(debug.DrainInterval)
	got = messages(s)
	if len(got) != 1 || got[0] != "Info:"+strings.Repeat("b", 116)+debug.Ellipsis {
		t.Errorf("a long message: %q", got)
	}
}

func logProfile(size int) *profile.Profile {
	p := profile.Default()
	p.Debug.Log = profile.LogArea{Enabled: true, Offset: 2*profile.ChipSize - size, Size: size}
	return p
}

func query(t *testing.T, d *sbt.Rig, q string) (resource.Status, []debug.Message) {
	t.Helper()
	var params []resource.Value
	if q != "" {
		params = append(params, sbt.Record(t, "DebugLogQuery", q))
	}
	env := d.Do(resource.Get, "/System/Debug/Log", params...)
	if env.Status != 200 {
		return env.Status, nil
	}
	return env.Status, env.Content.(*debug.LogResult).Messages
}

func ids(ms []debug.Message) string {
	var s []string
	for _, m := range ms {
		if m.ID == nil {
			s = append(s, "-")
		} else {
			s = append(s, fmt.Sprint(*m.ID))
		}
	}
	return strings.Join(s, ",")
}

func TestLogDisabledAnswers204(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	enable(t, d, true, false)
	d.Device.Logf(device.LevelError, "not stored")
	d.Expect(204, resource.Get, "/System/Debug/Log")
}

func TestLogQueriesAndPaging(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Profile: logProfile(4096)})
	d.Expect(200, resource.Put, "/System/Debug/Log/Config", sbt.Record(t, "DebugLogConfig", `{"MinimalLevel": 2}`))
	if c := d.Expect(200, resource.Get, "/System/Debug/Log/Config").Content.(*debug.LogConfig); c.MinimalLevel != (resource.Pair{Value: 2, Name: "Warning"}) {
		t.Errorf("log config %+v", c)
	}
	enable(t, d, true, false)
	for i := 1; i <= 30; i++ {
		d.Advance(100_000_000) // 100 ms apart
		d.Device.Logf(device.LevelWarning, "warning %d", i)
		d.Device.Logf(device.LevelInfo, "info %d, below the minimal level", i)
	}
	st, ms := query(t, d, `{"Id": 1000, "Count": 5}`)
	if st != 200 || ids(ms) != "30,29,28,27,26" || ms[0].Message != "warning 30" || ms[0].Level.Name != "Warning" {
		t.Fatalf("newest five: %d %s %+v", st, ids(ms), ms)
	}
	// page back from the smallest id minus 1 until 204
	seen := 5
	next := *ms[len(ms)-1].ID - 1
	for {
		st, ms = query(t, d, fmt.Sprintf(`{"Id": %d, "Count": 100}`, next))
		if st == 204 {
			break
		}
		if len(ms) > debug.MaxQueryCount {
			t.Fatalf("%d messages in one answer", len(ms))
		}
		seen += len(ms)
		next = *ms[len(ms)-1].ID - 1
	}
	if seen != 30 {
		t.Errorf("paged through %d messages, want 30", seen)
	}
	// Timestamp limits; the earlier form has no Id
	_, ms = query(t, d, `{"Id": 30, "Timestamp": 1500, "Count": 3}`)
	if ids(ms) != "15,14,13" {
		t.Errorf("with Timestamp 1500: %s", ids(ms))
	}
	_, ms = query(t, d, `{"Timestamp": 1000, "Count": 2}`)
	if ids(ms) != "-,-" || ms[0].Message != "warning 10" {
		t.Errorf("earlier form: %s %+v", ids(ms), ms)
	}
	// ids continue across a reset while timestamps restart
	d.Device.Reset()
	enable(t, d, true, false)
	d.Device.Logf(device.LevelError, "after the reset")
	_, ms = query(t, d, `{"Id": 100, "Count": 1}`)
	if ids(ms) != "31" || ms[0].Timestamp > 10 {
		t.Errorf("after a reset: %s ts %d", ids(ms), ms[0].Timestamp)
	}
	// and across a restart of the process
	d.Restart()
	enable(t, d, true, false)
	d.Device.Logf(device.LevelError, "after the restart")
	_, ms = query(t, d, `{"Id": 100, "Count": 2}`)
	if ids(ms) != "32,31" || ms[1].Message != "after the reset" {
		t.Errorf("after a restart: %s %+v", ids(ms), ms)
	}
}

func TestLogWrapsAndSurvivesOverwrites(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Profile: logProfile(256)})
	enable(t, d, true, false)
	for i := 1; i <= 40; i++ {
		d.Device.Logf(device.LevelError, "entry %02d", i) // 24 bytes a record: the area holds 10
	}
	_, ms := query(t, d, `{"Id": 100, "Count": 100}`)
	if len(ms) == 0 || len(ms) > 10 || *ms[0].ID != 40 || ms[0].Message != "entry 40" {
		t.Fatalf("after wrapping: %s", ids(ms))
	}
	oldest := *ms[len(ms)-1].ID
	// a client overwrites the start of the log area through the EEPROM
	junk := `{"bytes": [` + strings.TrimSuffix(strings.Repeat("213,", 60), ",") + `]}`
	d.Expect(200, resource.Put, "/Component/Eeprom/1", resource.Uint32(profile.ChipSize-256), sbt.Record(t, "EepromData", junk))
	_, ms = query(t, d, `{"Id": 100, "Count": 100}`)
	for _, m := range ms {
		if !strings.HasPrefix(m.Message, "entry ") || *m.ID < oldest || *m.ID > 40 {
			t.Fatalf("garbage after an overwrite: %+v", m)
		}
	}
	if len(ms) == 0 {
		t.Fatal("nothing survived a partial overwrite")
	}
	d.Device.Logf(device.LevelError, "after the overwrite")
	d.Restart()
	_, ms = query(t, d, `{"Id": 1000, "Count": 1}`)
	if len(ms) != 1 || ms[0].Message != "after the overwrite" || *ms[0].ID != 41 {
		t.Errorf("newest after restart: %+v", ms)
	}
}

func FuzzLogRegion(f *testing.F) {
	f.Add([]byte{0xD5, 2, 3, 0, 1, 0, 0, 0, 9, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, junk []byte) {
		d := sbt.New(t, senseboard.Config{Profile: logProfile(256)})
		enable(t, d, true, false)
		d.Device.Logf(device.LevelError, "before")
		if len(junk) > 256 {
			junk = junk[:256]
		}
		if len(junk) > 0 {
			ints := make([]string, len(junk))
			for i, b := range junk {
				ints[i] = fmt.Sprint(b)
			}
			d.Expect(200, resource.Put, "/Component/Eeprom/1", resource.Uint32(profile.ChipSize-256),
				sbt.Record(t, "EepromData", `{"bytes": [`+strings.Join(ints, ",")+`]}`))
		}
		d.Device.Logf(device.LevelError, "after")
		st, ms := query(t, d, `{"Id": 4294967295, "Count": 100}`)
		if st != 200 || ms[0].Message != "after" {
			t.Fatalf("newest message lost: %d %+v", st, ms)
		}
	})
}

// A value the rules refuse is a 400 that says why; a setting the state
// file does not take is a 500; neither changes the setting.
func TestConfigRefusedOrNotStored(t *testing.T) {
	dir := t.TempDir()
	d := sbt.New(t, senseboard.Config{StateDir: dir})
	level := func(v int) resource.Value {
		return sbt.Record(t, "DebugLogConfig", fmt.Sprintf(`{"MinimalLevel": %d}`, v))
	}
	d.Expect(400, resource.Put, "/System/Debug/Log/Config", level(9))
	// a directory where the state file goes: the write fails
	path := filepath.Join(dir, "debug.json")
	os.Remove(path)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := d.Expect(500, resource.Put, "/System/Debug/Log/Config", level(2)); !strings.Contains(r.Error, "did not reach non-volatile memory") {
		t.Errorf("failed write: %s", r.Error)
	}
	if c := d.Expect(200, resource.Get, "/System/Debug/Log/Config").Content.(*debug.LogConfig); c.MinimalLevel.Value != int(device.LevelInfo) {
		t.Errorf("MinimalLevel %d after a refused and a failed change, want %d", c.MinimalLevel.Value, device.LevelInfo)
	}
}
