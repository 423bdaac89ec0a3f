// Package logbook is the sensor family's offline recording, an in-device
// module built on the in-device application interface (package app) as the
// firmware builds it: the data logger (/Mem/DataLogger/...), which
// subscribes to up to 8 resources and writes their notifications as SBEM
// to a new log, and the Logbook (/Mem/Logbook/...), which keeps the logs in
// the non-volatile memory and serves them. The resources are the device's
// own definitions of the module Logbook, which the module serves
// (app.Context.Serve); the notifications it writes are package content's.
package logbook

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/app"
	"senseboard/clock"
	"senseboard/content"
	"senseboard/device"
	"senseboard/nvm"
	"senseboard/resource"
	"senseboard/sbem"
	"senseboard/sensor"
)

// Name is the app's name, which its subscriptions carry.
const Name = "DataLogger"

// ModuleName is the profile module whose definitions the app serves.
const ModuleName = "Logbook"

// The data logger's states.
const (
	StateInvalid = 1
	StateReady   = 2
	StateLogging = 3
)

// MaxPaths is how many streams a data logger configuration holds;
// TimeDetailed comes on top of them.
const MaxPaths = 8

// PageSize is how many entries one GET /Mem/Logbook/Entries lists: as many
// as one GSP answer carries at the default MTU.
const PageSize = 14

// FlushInterval is how often, in device time, logged data is written to
// the non-volatile memory while logging.
const FlushInterval = time.Second

// TimeDetailed is the path recorded once when logging starts.
const TimeDetailed = "/Time/Detailed"

// timeStream is the SBEM stream of TimeDetailed's record.
const timeStream = "TimeDetailed"

// WriteStall is the longest the logger may be held up (a write of the log
// that an fsync on a busy disk stalls, a host that deschedules it) and
// lose nothing: each logged stream's notifications may wait that long for
// it (see waitFor). A longer stall loses notifications, and the log
// records the loss (a Lost stream record).
const WriteStall = 2 * time.Second

// LostPrefix starts the SBEM name of the records of a stream's losses:
// LostMeasECGmV counts the notifications of MeasECGmV the logger lost.
const LostPrefix = "Lost"

// maxChunk keeps every data chunk below the 0xAD that some readers take as
// the SBEM escape.
const maxChunk = sbem.SafeMax - 1

// Config is the content of /Mem/DataLogger/Config.
type Config struct {
	DataEntries DataEntries `json:"dataEntries"`
}

// DataEntries lists the logged paths.
type DataEntries struct {
	DataEntry []DataEntry `json:"dataEntry"`
}

// DataEntry is one logged path.
type DataEntry struct {
	Path string `json:"path"`
}

// Entries is the content of GET /Mem/Logbook/Entries.
type Entries struct {
	Elements []Entry `json:"elements"`
}

// LogData is the content of the log data and descriptor resources.
type LogData struct {
	Data []byte `json:"-"`
	// Ints is the data as the JSON form of the family's ByteStream.
	Ints []int `json:"bytes"`
}

// Bytes returns the log's bytes.
func (l *LogData) Bytes() []byte { return l.Data }

func newLogData(b []byte) *LogData {
	ints := make([]int, len(b))
	for i, v := range b {
		ints[i] = int(v)
	}
	return &LogData{Data: b, Ints: ints}
}

// UTC is the device's clock of UTC time (the time service): it gives the
// logs their times.
type UTC interface {
	// UTC returns the time in microseconds since 1970-01-01 UTC.
	UTC() int64
}

// Module is the data logger and the Logbook of one device: an app.App that
// serves the module's resources, and the log storage that outlives its
// runs. Run it with app.Run on a device whose core leaves the module to an
// app (device.Config.AppModules), and Close it after the app stopped.
type Module struct {
	storage *Storage
	store   *nvm.Store
	utc     UTC

	mu      sync.Mutex
	ctx     *app.Context   // the running app's, nil while it is stopped
	clk     clock.Clock    // the device's, from the first start
	dev     *device.Core   // the device, from the first start
	layout  content.Layout // the binary form of the logged content, from the profile
	paths   []string
	state   uint8
	full    bool
	subs    []*logged // the streams logged
	writer  *sbem.Writer
	pending []byte
	err     error // the first error of a flush, stops logging
	flushT  clock.Timer

	beforeWrite func() // a test's slow disk: runs before each write of the log
	warned      bool   // the storage's warnings were logged, at the first start
}

const configFile = "datalogger.json"

// New opens the log storage of a state directory, with room for capacity
// bytes of logs; utc gives the UTC time of log entries.
func New(store *nvm.Store, capacity int, utc UTC) (*Module, error) {
	s, err := OpenStorage(store, capacity)
	if err != nil {
		return nil, err
	}
	m := &Module{storage: s, store: store, utc: utc, state: StateReady}
	var cfg Config
	if _, err := store.ReadJSON(configFile, &cfg); err != nil {
		return nil, fmt.Errorf("datalogger: %w", err)
	}
	for _, e := range cfg.DataEntries.DataEntry {
		m.paths = append(m.paths, e.Path)
	}
	if err := checkPaths(m.paths); err != nil { // the rule of PUT /Mem/DataLogger/Config
		return nil, fmt.Errorf("datalogger: %w", &nvm.CorruptError{Path: store.Path(configFile), Reason: err.Error()})
	}
	return m, nil
}

// Storage returns the log storage.
func (m *Module) Storage() *Storage { return m.storage }

// Name implements app.App.
func (m *Module) Name() string { return Name }

// Start implements app.App: the module serves its resources. After a
// reset it is ready, not logging, as the hardware's data logger is. At the
// first start it warns on the device's debug output of what the storage
// repaired when it opened (Storage.Warnings).
func (m *Module) Start(ctx *app.Context) error {
	m.mu.Lock()
	m.ctx, m.clk, m.dev = ctx, ctx.Device().Clock(), ctx.Device()
	m.layout = content.Layout{TempMeasurementFirst: ctx.Device().Profile().Binary.TempMeasurementFirst()}
	warn := !m.warned
	m.warned = true
	m.mu.Unlock()
	if warn {
		for _, w := range m.storage.Warnings() {
			ctx.Device().Logf(device.LevelWarning, "%s", w)
		}
	}
	return ctx.Serve(ModuleName, app.Handlers{
		"GET /Mem/DataLogger/Config": func(*resource.Request) resource.Response {
			m.mu.Lock()
			defer m.mu.Unlock()
			return resource.OK(m.config())
		},
		"PUT /Mem/DataLogger/Config": m.putConfig,
		"GET /Mem/DataLogger/State": func(*resource.Request) resource.Response {
			m.mu.Lock()
			defer m.mu.Unlock()
			return resource.OK(resource.Uint8(m.state))
		},
		"PUT /Mem/DataLogger/State": m.putState,
		"POST /Mem/DataLogger/State": func(*resource.Request) resource.Response {
			if err := m.flush(); err != nil {
				return resource.Errorf(resource.StatusInternalServerError, "%v", err)
			}
			return resource.OK(nil)
		},
		"GET /Mem/Logbook/Entries": m.getEntries,
		"POST /Mem/Logbook/Entries": func(*resource.Request) resource.Response {
			id, err := m.storage.NewID()
			if err != nil {
				return resource.Errorf(resource.StatusInternalServerError, "%v", err)
			}
			return resource.Response{Status: 201, Content: resource.Uint32(id)}
		},
		"DELETE /Mem/Logbook/Entries": func(*resource.Request) resource.Response {
			m.mu.Lock()
			logging := m.state == StateLogging
			m.mu.Unlock()
			if logging {
				return resource.Errorf(resource.StatusConflict, "the data logger is logging; PUT /Mem/DataLogger/State 2 first")
			}
			if err := m.storage.Clear(); err != nil {
				return resource.Errorf(resource.StatusInternalServerError, "%v", err)
			}
			m.setFull(false)
			return resource.OK(nil)
		},
		"GET /Mem/Logbook/IsOpen": func(*resource.Request) resource.Response {
			return resource.OK(resource.Bool(m.storage.IsOpen()))
		},
		"GET /Mem/Logbook/IsFull": func(*resource.Request) resource.Response {
			m.mu.Lock()
			defer m.mu.Unlock()
			return resource.OK(resource.Bool(m.full))
		},
		"GET /Mem/Logbook/byId/{LogId}/Data": func(req *resource.Request) resource.Response {
			data, resp := m.read(req)
			if data == nil {
				return resp
			}
			return resource.OK(newLogData(data))
		},
		"DELETE /Mem/Logbook/byId/{LogId}": m.remove,
		"GET /Mem/Logbook/byId/{LogId}/Descriptors": func(req *resource.Request) resource.Response {
			data, resp := m.read(req)
			if data == nil {
				return resp
			}
			chunks, _, _ := sbem.Chunks(data)
			out := []byte(sbem.Header)
			for _, c := range chunks {
				if c.ID == sbem.DescriptorID {
					out = sbem.AppendChunk(out, c.ID, c.Data)
				}
			}
			return resource.OK(newLogData(out))
		},
	}, map[string]resource.Source{"/Mem/Logbook/byId/{LogId}/Data": dataSource{m}})
}

// Stop implements app.Stopper: logging stops, as the hardware's data
// logger stops at a reset and when the device turns off, and what is
// pending is written.
func (m *Module) Stop(*app.Context) {
	m.stop()
	m.mu.Lock()
	m.ctx = nil
	m.mu.Unlock()
}

// Close writes what is still pending and closes the open log, once the
// app has stopped for good.
func (m *Module) Close() error { return m.stop() }

// remove erases one log, as the family's DELETE /Mem/Logbook/byId/{LogId}.
func (m *Module) remove(req *resource.Request) resource.Response {
	id, bad := logID(req)
	if bad != nil {
		return bad.Response()
	}
	if err := m.storage.Remove(id); err != nil {
		return logError(id, err)
	}
	return resource.OK(nil)
}

// read returns the bytes of the log a request names, or, when it has
// none, the answer.
func (m *Module) read(req *resource.Request) ([]byte, resource.Response) {
	id, bad := logID(req)
	if bad != nil {
		return nil, bad.Response()
	}
	m.flush()
	data, err := m.storage.Read(id)
	if err != nil {
		return nil, logError(id, err)
	}
	return data, resource.Response{}
}

// logID returns the LogId of a request to one log, or the error when it is
// no log id.
func logID(req *resource.Request) (uint32, *resource.Error) {
	id := req.Arg(0).Int()
	if id <= 0 {
		return 0, &resource.Error{Status: resource.StatusBadRequest, Msg: fmt.Sprintf("log id %d: log ids start at 1; GET /Mem/Logbook/Entries lists them", id)}
	}
	return uint32(id), nil
}

// logError answers a request to log id that failed with err.
func logError(id uint32, err error) resource.Response {
	switch {
	case errors.Is(err, ErrNoLog):
		return resource.Errorf(resource.StatusNotFound, "no log with id %d; GET /Mem/Logbook/Entries lists them", id)
	case errors.Is(err, ErrOpenLog):
		return resource.Errorf(resource.StatusConflict, "log %d is being written; PUT /Mem/DataLogger/State 2 first", id)
	}
	return resource.Errorf(resource.StatusInternalServerError, "%v", err)
}

// config returns the configuration; m.mu is held.
func (m *Module) config() *Config {
	c := &Config{DataEntries: DataEntries{DataEntry: []DataEntry{}}}
	for _, path := range m.paths {
		c.DataEntries.DataEntry = append(c.DataEntries.DataEntry, DataEntry{Path: path})
	}
	return c
}

// checkPaths checks a configuration's paths: at most MaxPaths streams and
// TimeDetailed, each path once.
func checkPaths(paths []string) error {
	streams := 0
	for _, path := range paths {
		if !strings.EqualFold(path, TimeDetailed) {
			streams++
		}
	}
	if streams > MaxPaths {
		return fmt.Errorf("%d paths; at most %d can be logged, and %s", streams, MaxPaths, TimeDetailed)
	}
	for i, path := range paths {
		for _, earlier := range paths[:i] {
			if strings.EqualFold(earlier, path) {
				return fmt.Errorf("path %q is given twice; each path is logged once", path)
			}
		}
	}
	return nil
}

func (m *Module) putConfig(req *resource.Request) resource.Response {
	var c Config
	if err := req.Arg(0).Decode(&c); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "config: %v", err)
	}
	var paths []string
	for _, e := range c.DataEntries.DataEntry {
		path := e.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		if !strings.EqualFold(path, TimeDetailed) {
			if _, err := m.device().ResourceURI(resource.Subscribe, path); err != nil {
				return resource.Errorf(resource.StatusBadRequest, "path %q cannot be logged: %v; allowed: resources that can be subscribed to, and %s", e.Path, err, TimeDetailed)
			}
		}
		paths = append(paths, path)
	}
	if err := checkPaths(paths); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == StateLogging {
		return resource.Errorf(resource.StatusConflict, "the data logger is logging; PUT /Mem/DataLogger/State 2 before changing its configuration")
	}
	m.paths = paths
	if err := m.store.WriteJSON(configFile, m.config()); err != nil {
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	return resource.OK(m.config())
}

func (m *Module) putState(req *resource.Request) resource.Response {
	switch s := req.Arg(0).Uint(); s {
	case StateLogging:
		return m.start()
	case StateReady:
		return m.stopRequested()
	default:
		return resource.Errorf(resource.StatusBadRequest, "state %d; allowed: 2 (READY, stops logging), 3 (LOGGING, starts it)", s)
	}
}

// stopRequested stops logging at a request, on the app's goroutine. The
// notifications that came before the request, which wait for the app
// while it handles it, are logged first: a stop lets go only what comes
// after it, and what it lets go is not counted as lost.
func (m *Module) stopRequested() resource.Response {
	m.mu.Lock()
	ctx, logging := m.ctx, m.state == StateLogging
	m.mu.Unlock()
	if !logging {
		return resource.Errorf(resource.StatusForbidden, "the data logger is not logging")
	}
	ctx.TakeNotifications()
	if err := m.stop(); err != nil {
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	return resource.OK(nil)
}

// utcSeconds is the device's UTC time in seconds.
func (m *Module) utcSeconds() uint32 {
	if m.utc == nil {
		return 0
	}
	return uint32(m.utc.UTC() / 1e6)
}

// clock returns the device's clock, from the app's first start.
func (m *Module) clock() clock.Clock {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clk
}

// device returns the device the app runs on; the app runs.
func (m *Module) device() *device.Core {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctx.Device()
}

// start starts logging; it runs on the app's goroutine (a handler).
func (m *Module) start() resource.Response {
	m.mu.Lock()
	ctx := m.ctx
	switch {
	case m.state == StateLogging:
		m.mu.Unlock()
		return resource.Errorf(resource.StatusForbidden, "the data logger is already logging")
	case len(m.paths) == 0:
		m.mu.Unlock()
		return resource.Errorf(resource.StatusBadRequest, "no paths to log; PUT /Mem/DataLogger/Config first")
	}
	paths := append([]string(nil), m.paths...)
	m.mu.Unlock()

	if _, err := m.storage.Create(m.utcSeconds()); err != nil {
		if errors.Is(err, ErrFull) {
			m.setFull(true)
			return resource.Errorf(resource.StatusInsufficientStorage, "%v", err)
		}
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	m.publish("/Mem/Logbook/IsOpen", true)
	m.mu.Lock()
	m.writer = sbem.NewWriter()
	m.pending = m.pending[:0]
	m.err = nil
	m.state = StateLogging
	m.mu.Unlock()

	for _, path := range paths {
		if strings.EqualFold(path, TimeDetailed) {
			if env := ctx.CallNow(resource.Get, TimeDetailed); env.Status.OK() {
				m.record(&logged{uri: TimeDetailed}, env.Content)
			}
			continue
		}
		l := &logged{}
		s, env := ctx.SubscribeNowWaiting(path, waitFor(path), func(c any) { m.record(l, c) })
		if s == nil {
			m.stop()
			return resource.Errorf(resource.StatusBadRequest, "subscribe %s: %s", path, env.Refusal())
		}
		l.sub, l.uri = s, s.Resource().Topic.URI()
		l.name = sbemName(l.uri)
		m.mu.Lock()
		l.last = m.relativeTime()
		m.subs = append(m.subs, l)
		m.mu.Unlock()
	}
	m.scheduleFlush(ctx)
	return resource.OK(nil)
}

// scheduleFlush writes what is pending every FlushInterval while logging,
// on the app's goroutine.
func (m *Module) scheduleFlush(ctx *app.Context) {
	t := ctx.After(FlushInterval, func() {
		m.mu.Lock()
		logging := m.state == StateLogging
		m.mu.Unlock()
		if !logging {
			return
		}
		if err := m.flush(); err != nil {
			ctx.Device().Logf(device.LevelError, "datalogger: %v", err)
			m.stop()
			return
		}
		m.scheduleFlush(ctx)
	})
	m.mu.Lock()
	m.flushT = t
	m.mu.Unlock()
}

// stop ends logging: the subscriptions end, what is pending is written and
// the log is closed. It runs on the app's goroutine, or once the app has
// stopped for good.
func (m *Module) stop() error {
	m.mu.Lock()
	subs := m.subs
	m.subs = nil
	if m.flushT != nil {
		m.flushT.Stop()
		m.flushT = nil
	}
	wasLogging := m.state == StateLogging
	if wasLogging {
		now := m.relativeTime()
		for _, l := range subs {
			if r := l.sub.Resource(); r != nil {
				m.recordLoss(l, uint32(r.Dropped()), now) // lost after the last notification logged
			}
		}
	}
	m.state = StateReady
	m.mu.Unlock()
	for _, l := range subs {
		l.sub.Unsubscribe(nil)
	}
	err := m.flush()
	if cerr := m.storage.CloseLog(); err == nil {
		err = cerr
	}
	if wasLogging {
		m.publish("/Mem/Logbook/IsOpen", false)
	}
	return err
}

// flush writes what is pending to the open log.
func (m *Module) flush() error {
	m.mu.Lock()
	data := m.pending
	m.pending = nil
	hold := m.beforeWrite
	m.mu.Unlock()
	if len(data) == 0 || !m.storage.IsOpen() {
		return nil
	}
	if hold != nil {
		hold()
	}
	err := m.storage.Append(data, m.utcSeconds())
	if errors.Is(err, ErrFull) {
		m.setFull(true)
	}
	return err
}

func (m *Module) setFull(v bool) {
	m.mu.Lock()
	changed := m.full != v
	m.full = v
	m.mu.Unlock()
	if changed {
		m.publish("/Mem/Logbook/IsFull", v)
	}
}

// publish notifies the subscribers of a Logbook state, while the app runs.
func (m *Module) publish(path string, v bool) {
	m.mu.Lock()
	ctx := m.ctx
	m.mu.Unlock()
	if ctx != nil {
		ctx.Notify(path, resource.Bool(v))
	}
}

func (m *Module) getEntries(req *resource.Request) resource.Response {
	all := m.storage.Entries()
	start := 0
	if v := req.Arg(0); v.Type() != resource.TypeInvalid && v.Type() != resource.TypeNull {
		after := uint32(v.Uint())
		start = -1
		for i, e := range all {
			if e.ID == after {
				start = i + 1
			}
		}
		if start < 0 {
			return resource.Errorf(resource.StatusNotFound, "StartAfterId %d names no log", after)
		}
	}
	page := all[start:min(len(all), start+PageSize)]
	return resource.OK(&Entries{Elements: append([]Entry{}, page...)})
}

// logged is one stream the logger subscribes to, and the account of its
// losses; m.mu guards it.
type logged struct {
	sub     *app.Subscription
	uri     string // the topic's canonical URI
	name    string // its SBEM name, which its losses' records carry
	dropped uint32 // the subscription's drops the log has recorded, modulo 2³²
	last    uint32 // the device time (ms) of its last notification logged, or of the start
}

// waitFor returns how many notifications of the stream at path may wait
// for the logger: WriteStall's worth at the rate the path names, counted as
// a notification a sample (an upper bound: a motion notification carries
// several) or, for the ECG, an array of content.ECGArraySize samples; 16 a
// second for a path that names no rate (heart rate, temperature).
func waitFor(path string) int {
	name, rate := streamName(path)
	switch {
	case rate <= 0:
		rate = 16
	case strings.EqualFold(name, "MeasECG"):
		rate /= content.ECGArraySize
	}
	return max(2, int(math.Ceil(rate*WriteStall.Seconds())))
}

// sbemName names the stream at a topic's URI as its records do: MeasIMU9,
// MeasECG, MeasECGmV, MeasHR, MeasTemp; the path without its slashes for
// others.
func sbemName(uri string) string {
	name, _ := streamName(uri)
	switch {
	case name == "":
		return strings.ReplaceAll(strings.Trim(uri, "/"), "/", "")
	case strings.HasSuffix(strings.ToLower(uri), "/mv"):
		return name + "mV"
	}
	return name
}

// relativeTime is the device's relative time in ms; m.mu is held.
func (m *Module) relativeTime() uint32 {
	if m.dev == nil {
		return 0
	}
	return m.dev.RelativeTime()
}

// timeOf returns the device time (ms) of a notification: its timestamp,
// or now for content that has none (heart rate).
func timeOf(v any, now uint32) uint32 {
	if ts, ok := content.Timestamp(v); ok {
		return ts
	}
	return now
}

// record encodes one notification of stream l into pending chunks, after
// the record of the notifications of l lost since the last one logged.
func (m *Module) record(l *logged, v any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != StateLogging || m.writer == nil {
		return
	}
	at := timeOf(v, m.relativeTime())
	if l.sub != nil {
		m.recordLoss(l, l.sub.DroppedBefore(), at)
	}
	l.last = at
	var err error
	for _, c := range chunksOf(l.uri, v, m.layout) {
		if m.pending, err = m.writer.AppendRecord(m.pending, c.layout, c.n, c.data); err != nil {
			m.logError(err)
			return
		}
	}
}

// recordLoss writes the record of the notifications of l that its
// subscription dropped since the last record of them, dropped being its
// count of drops until then (modulo 2³²), if any: the device times between
// which they were (the last notification of l logged, or the start, and
// until), and how many. m.mu is held.
func (m *Module) recordLoss(l *logged, dropped uint32, until uint32) {
	n := dropped - l.dropped
	if m.writer == nil || n == 0 {
		return
	}
	l.dropped = dropped
	layout := sbemLayout("lost/"+l.name, func() *sbem.Layout {
		return &sbem.Layout{Stream: LostPrefix + l.name, Fixed: []sbem.Field{fTS,
			{Name: "Until", Format: sbem.Uint32}, {Name: "Notifications", Format: sbem.Uint32}}}
	})
	data := binary.LittleEndian.AppendUint32(nil, l.last)
	data = binary.LittleEndian.AppendUint32(data, until)
	data = binary.LittleEndian.AppendUint32(data, n)
	var err error
	if m.pending, err = m.writer.AppendRecord(m.pending, layout, 0, data); err != nil {
		m.logError(err)
		return
	}
	if m.ctx != nil {
		m.ctx.Device().Logf(device.LevelWarning, "datalogger: %s: %d notifications lost between %d and %d ms (the logger was held up longer than %v); the log records it",
			l.uri, n, l.last, until, WriteStall)
	}
}

// logError logs an error of the data logger, while the app runs; m.mu is
// held.
func (m *Module) logError(err error) {
	if m.ctx != nil {
		m.ctx.Device().Logf(device.LevelError, "datalogger: %v", err)
	}
}

type chunk struct {
	layout *sbem.Layout
	n      int
	data   []byte
}

var (
	xyz      = []sbem.Field{{Name: "x", Format: sbem.Float32}, {Name: "y", Format: sbem.Float32}, {Name: "z", Format: sbem.Float32}}
	fTS      = sbem.Field{Name: "Timestamp", Format: sbem.Uint32}
	layouts  = map[string]*sbem.Layout{}
	layoutMu sync.Mutex
)

// sbemLayout returns the SBEM layout of key, made by make the first time.
func sbemLayout(key string, make func() *sbem.Layout) *sbem.Layout {
	layoutMu.Lock()
	defer layoutMu.Unlock()
	l := layouts[key]
	if l == nil {
		l = make()
		layouts[key] = l
	}
	return l
}

// streamName names a motion stream in SBEM paths: /Meas/IMU9/52 → MeasIMU9.
func streamName(uri string) (name string, rate float64) {
	parts := strings.Split(strings.Trim(uri, "/"), "/")
	for i, s := range parts {
		if strings.EqualFold(s, "Meas") && i+1 < len(parts) {
			name = "Meas" + parts[i+1]
			if i+2 < len(parts) {
				rate, _ = strconv.ParseFloat(parts[i+2], 64)
			}
			return name, rate
		}
	}
	return "", 0
}

// chunksOf turns a notification into data chunks in the binary form of
// layout, splitting those that would reach the escape value into chunks
// of fewer samples.
func chunksOf(uri string, v any, layout content.Layout) []chunk {
	switch c := v.(type) {
	case *content.MotionData:
		name, rate := streamName(uri)
		arrays := [][]sensor.XYZ{}
		var names []string
		for i, a := range [][]sensor.XYZ{c.ArrayAcc, c.ArrayGyro, c.ArrayMagn} {
			if a != nil {
				arrays = append(arrays, a)
				names = append(names, []string{"ArrayAcc", "ArrayGyro", "ArrayMagn"}[i])
			}
		}
		if len(arrays) == 0 {
			return nil
		}
		l := sbemLayout("motion/"+name+"/"+strings.Join(names, ","), func() *sbem.Layout {
			l := &sbem.Layout{Stream: name, Fixed: []sbem.Field{fTS}}
			for _, n := range names {
				l.Arrays = append(l.Arrays, sbem.Array{Name: n, Fields: xyz})
			}
			return l
		})
		per := max(1, (maxChunk-4)/(12*len(arrays)))
		total := len(arrays[0])
		var out []chunk
		for off := 0; off < total; off += per {
			n := min(per, total-off)
			ts := c.Timestamp
			if rate > 0 {
				ts += uint32(float64(off) * 1000 / rate)
			}
			part := &content.MotionData{Timestamp: ts}
			for i, a := range arrays {
				s := a[off : off+n]
				switch names[i] {
				case "ArrayAcc":
					part.ArrayAcc = s
				case "ArrayGyro":
					part.ArrayGyro = s
				case "ArrayMagn":
					part.ArrayMagn = s
				}
			}
			data, _ := layout.Append(nil, part)
			out = append(out, chunk{l, n, data})
		}
		return out
	case *content.ECGData:
		l := sbemLayout("ecg", func() *sbem.Layout {
			return &sbem.Layout{Stream: "MeasECG", Fixed: []sbem.Field{fTS}, Arrays: []sbem.Array{{Name: "Samples", Fields: []sbem.Field{{Format: sbem.Int32}}}}}
		})
		data, _ := layout.Append(nil, c)
		return []chunk{{l, len(c.Samples), data}}
	case *content.ECGDataMV:
		l := sbemLayout("ecgmv", func() *sbem.Layout {
			return &sbem.Layout{Stream: "MeasECGmV", Fixed: []sbem.Field{fTS}, Arrays: []sbem.Array{{Name: "Samples",
				Fields: []sbem.Field{{Format: sbem.Int16, Mod: "x*0.001,roundf(MIN(+32.767f,MAX(y,-32.767f))*1000.0f)"}}}}}
		})
		data, _ := layout.Append(nil, c)
		return []chunk{{l, len(c.Samples), data}}
	case *content.HRData:
		l := sbemLayout("hr", func() *sbem.Layout {
			return &sbem.Layout{Stream: "MeasHR", Fixed: []sbem.Field{{Name: "average", Format: sbem.Float32}},
				Arrays: []sbem.Array{{Name: "rrData", Fields: []sbem.Field{{Format: sbem.Uint16}}}}}
		})
		data, _ := layout.Append(nil, c)
		return []chunk{{l, len(c.RRData), data}}
	case *content.TempData:
		fields := []sbem.Field{fTS, {Name: "Measurement", Format: sbem.Float32}}
		key := "temp"
		if layout.TempMeasurementFirst {
			fields[0], fields[1] = fields[1], fields[0]
			key = "temp/measurementFirst"
		}
		l := sbemLayout(key, func() *sbem.Layout { return &sbem.Layout{Stream: "MeasTemp", Fixed: fields} })
		data, _ := layout.Append(nil, c)
		return []chunk{{l, 0, data}}
	case *content.DetailedTime:
		l := sbemLayout("time", func() *sbem.Layout {
			return &sbem.Layout{Stream: timeStream, Fixed: []sbem.Field{{Name: "relativeTime", Format: sbem.Uint32}, {Name: "utcTime", Format: sbem.Uint64}}}
		})
		data, _ := layout.Append(nil, struct {
			Rel uint32
			UTC int64
		}{c.RelativeTime, c.UTCTime})
		return []chunk{{l, 0, data}}
	}
	return nil
}
