// Package mem provides the sensor family's offline recording: the data
// logger (/Mem/DataLogger/...), which subscribes to up to 8 resources and
// writes their notifications as SBEM to a new log, and the Logbook
// (/Mem/Logbook/...), which keeps the logs in the non-volatile memory and
// serves them.
package logbook

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/content"
	"senseboard/device"
	"senseboard/nvm"
	"senseboard/provider/timesvc"
	"senseboard/resource"
	"senseboard/sbem"
	"senseboard/sensor"
)

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

// Provider serves the data logger and the Logbook.
type Provider struct {
	storage *Storage
	store   *nvm.Store
	time    *timesvc.Provider
	d       *device.Core

	mu      sync.Mutex
	paths   []string
	state   uint8
	full    bool
	client  *resource.Client
	writer  *sbem.Writer
	pending []byte
	err     error // the first error of a flush, stops logging
	flushT  interface{ Stop() bool }
}

const configFile = "datalogger.json"

// New opens the log storage of a state directory. t gives the UTC time of
// log entries.
func New(store *nvm.Store, capacity int, t *timesvc.Provider) (*Provider, error) {
	s, err := OpenStorage(store, capacity)
	if err != nil {
		return nil, err
	}
	p := &Provider{storage: s, store: store, time: t, state: StateReady}
	var cfg Config
	if _, err := store.ReadJSON(configFile, &cfg); err != nil {
		return nil, fmt.Errorf("datalogger: %w", err)
	}
	for _, e := range cfg.DataEntries.DataEntry {
		p.paths = append(p.paths, e.Path)
	}
	if err := checkPaths(p.paths); err != nil { // the rule of PUT /Mem/DataLogger/Config
		return nil, fmt.Errorf("datalogger: %w", &nvm.CorruptError{Path: store.Path(configFile), Reason: err.Error()})
	}
	return p, nil
}

// Storage returns the log storage.
func (p *Provider) Storage() *Storage { return p.storage }

// Register installs the resources.
func (p *Provider) Register(d *device.Core) error {
	p.d = d
	d.HandleFunc("/Mem/DataLogger/Config", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		return resource.OK(p.config())
	})
	d.HandleFunc("/Mem/DataLogger/Config", resource.Put, p.putConfig)
	d.HandleFunc("/Mem/DataLogger/State", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		return resource.OK(resource.Uint8(p.state))
	})
	d.HandleFunc("/Mem/DataLogger/State", resource.Put, p.putState)
	d.HandleFunc("/Mem/DataLogger/State", resource.Post, func(*resource.Request) resource.Response {
		if err := p.flush(); err != nil {
			return resource.Errorf(resource.StatusInternalServerError, "%v", err)
		}
		return resource.OK(nil)
	})
	d.HandleFunc("/Mem/Logbook/Entries", resource.Get, p.getEntries)
	d.HandleFunc("/Mem/Logbook/Entries", resource.Post, func(*resource.Request) resource.Response {
		id, err := p.storage.NewID()
		if err != nil {
			return resource.Errorf(resource.StatusInternalServerError, "%v", err)
		}
		return resource.Response{Status: 201, Content: resource.Uint32(id)}
	})
	d.HandleFunc("/Mem/Logbook/Entries", resource.Delete, func(*resource.Request) resource.Response {
		p.mu.Lock()
		logging := p.state == StateLogging
		p.mu.Unlock()
		if logging {
			return resource.Errorf(resource.StatusConflict, "the data logger is logging; PUT /Mem/DataLogger/State 2 first")
		}
		if err := p.storage.Clear(); err != nil {
			return resource.Errorf(resource.StatusInternalServerError, "%v", err)
		}
		p.setFull(false)
		return resource.OK(nil)
	})
	d.HandleFunc("/Mem/Logbook/IsOpen", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(resource.Bool(p.storage.IsOpen()))
	})
	d.HandleSource("/Mem/Logbook/IsOpen", acceptAll{})
	d.HandleFunc("/Mem/Logbook/IsFull", resource.Get, func(*resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		return resource.OK(resource.Bool(p.full))
	})
	d.HandleSource("/Mem/Logbook/IsFull", acceptAll{})
	d.HandleFunc("/Mem/Logbook/byId/{LogId}/Data", resource.Get, func(req *resource.Request) resource.Response {
		data, resp := p.read(req)
		if data == nil {
			return resp
		}
		return resource.OK(newLogData(data))
	})
	d.HandleSource("/Mem/Logbook/byId/{LogId}/Data", dataSource{p})
	d.HandleFunc("/Mem/Logbook/byId/{LogId}", resource.Delete, p.remove)
	d.HandleFunc("/Mem/Logbook/byId/{LogId}/Descriptors", resource.Get, func(req *resource.Request) resource.Response {
		data, resp := p.read(req)
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
	})
	return nil
}

type acceptAll struct{}

func (acceptAll) Subscribe(*resource.Topic, *resource.Request) resource.Response {
	return resource.OK(nil)
}
func (acceptAll) Unsubscribed(*resource.Topic) {}

// remove erases one log, as the family's DELETE /Mem/Logbook/byId/{LogId}.
func (p *Provider) remove(req *resource.Request) resource.Response {
	id, bad := logID(req)
	if bad != nil {
		return bad.Response()
	}
	if err := p.storage.Remove(id); err != nil {
		return logError(id, err)
	}
	return resource.OK(nil)
}

// read returns the bytes of the log a request names, or, when it has
// none, the answer.
func (p *Provider) read(req *resource.Request) ([]byte, resource.Response) {
	id, bad := logID(req)
	if bad != nil {
		return nil, bad.Response()
	}
	p.flush()
	data, err := p.storage.Read(id)
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

// config returns the configuration; p.mu is held.
func (p *Provider) config() *Config {
	c := &Config{DataEntries: DataEntries{DataEntry: []DataEntry{}}}
	for _, path := range p.paths {
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

func (p *Provider) putConfig(req *resource.Request) resource.Response {
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
			if _, err := p.d.ResourceURI(resource.Subscribe, path); err != nil {
				return resource.Errorf(resource.StatusBadRequest, "path %q cannot be logged: %v; allowed: resources that can be subscribed to, and %s", e.Path, err, TimeDetailed)
			}
		}
		paths = append(paths, path)
	}
	if err := checkPaths(paths); err != nil {
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == StateLogging {
		return resource.Errorf(resource.StatusConflict, "the data logger is logging; PUT /Mem/DataLogger/State 2 before changing its configuration")
	}
	p.paths = paths
	if err := p.store.WriteJSON(configFile, p.config()); err != nil {
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	return resource.OK(p.config())
}

func (p *Provider) putState(req *resource.Request) resource.Response {
	switch s := req.Arg(0).Uint(); s {
	case StateLogging:
		return p.start()
	case StateReady:
		p.mu.Lock()
		logging := p.state == StateLogging
		p.mu.Unlock()
		if !logging {
			return resource.Errorf(resource.StatusForbidden, "the data logger is not logging")
		}
		if err := p.stop(); err != nil {
			return resource.Errorf(resource.StatusInternalServerError, "%v", err)
		}
		return resource.OK(nil)
	default:
		return resource.Errorf(resource.StatusBadRequest, "state %d; allowed: 2 (READY, stops logging), 3 (LOGGING, starts it)", s)
	}
}

// utcSeconds is the device's UTC time in seconds.
func (p *Provider) utcSeconds() uint32 {
	if p.time == nil {
		return 0
	}
	return uint32(p.time.UTC() / 1e6)
}

func (p *Provider) start() resource.Response {
	p.mu.Lock()
	switch {
	case p.state == StateLogging:
		p.mu.Unlock()
		return resource.Errorf(resource.StatusForbidden, "the data logger is already logging")
	case len(p.paths) == 0:
		p.mu.Unlock()
		return resource.Errorf(resource.StatusBadRequest, "no paths to log; PUT /Mem/DataLogger/Config first")
	}
	paths := append([]string(nil), p.paths...)
	p.mu.Unlock()

	if _, err := p.storage.Create(p.utcSeconds()); err != nil {
		if errors.Is(err, ErrFull) {
			p.setFull(true)
			return resource.Errorf(resource.StatusInsufficientStorage, "%v", err)
		}
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	}
	p.publish("/Mem/Logbook/IsOpen", true)
	p.mu.Lock()
	p.writer = sbem.NewWriter()
	p.pending = p.pending[:0]
	p.err = nil
	p.state = StateLogging
	client := resource.NewClient("DataLogger", sink{p})
	p.client = client
	p.mu.Unlock()

	for _, path := range paths {
		if strings.EqualFold(path, TimeDetailed) {
			env, err := p.d.Call(resource.Get, TimeDetailed)
			if err == nil && env.Status.OK() {
				p.record(TimeDetailed, env.Content)
			}
			continue
		}
		env, err := p.d.Do(&resource.Request{Op: resource.Subscribe, Path: path, Client: client})
		if err == nil && !env.Status.OK() {
			err = fmt.Errorf("%d %s", env.Status, env.Error)
		}
		if err != nil {
			p.stop()
			return resource.Errorf(resource.StatusBadRequest, "subscribe %s: %v", path, err)
		}
	}
	p.scheduleFlush()
	return resource.OK(nil)
}

func (p *Provider) scheduleFlush() {
	t := p.d.Clock().AfterFunc(FlushInterval, func() {
		p.mu.Lock()
		logging := p.state == StateLogging
		p.mu.Unlock()
		if !logging {
			return
		}
		if err := p.flush(); err != nil {
			p.d.Logf(device.LevelError, "datalogger: %v", err)
			p.stop()
			return
		}
		p.scheduleFlush()
	})
	p.mu.Lock()
	p.flushT = t
	p.mu.Unlock()
}

// stop ends logging: the subscriptions end, what is pending is written and
// the log is closed.
func (p *Provider) stop() error {
	p.mu.Lock()
	client := p.client
	p.client = nil
	if p.flushT != nil {
		p.flushT.Stop()
		p.flushT = nil
	}
	wasLogging := p.state == StateLogging
	p.state = StateReady
	p.mu.Unlock()
	if client != nil {
		client.Close()
	}
	err := p.flush()
	if cerr := p.storage.CloseLog(); err == nil {
		err = cerr
	}
	if wasLogging {
		p.publish("/Mem/Logbook/IsOpen", false)
	}
	return err
}

// flush writes what is pending to the open log.
func (p *Provider) flush() error {
	p.mu.Lock()
	data := p.pending
	p.pending = nil
	p.mu.Unlock()
	if len(data) == 0 || !p.storage.IsOpen() {
		return nil
	}
	err := p.storage.Append(data, p.utcSeconds())
	if errors.Is(err, ErrFull) {
		p.setFull(true)
	}
	return err
}

func (p *Provider) setFull(v bool) {
	p.mu.Lock()
	changed := p.full != v
	p.full = v
	p.mu.Unlock()
	if changed {
		p.publish("/Mem/Logbook/IsFull", v)
	}
}

func (p *Provider) publish(path string, v bool) {
	if t, err := p.d.TopicOf(path); err == nil && t != nil {
		t.Publish(resource.Bool(v))
	}
}

// Reset stops logging: the hardware's data logger does not survive a reset.
func (p *Provider) Reset() { p.stop() }

// PowerOff stops logging.
func (p *Provider) PowerOff() { p.stop() }

// Close stops logging and writes what is pending.
func (p *Provider) Close() error { return p.stop() }

func (p *Provider) getEntries(req *resource.Request) resource.Response {
	all := p.storage.Entries()
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

type sink struct{ p *Provider }

func (s sink) Notify(n resource.Notification) bool {
	s.p.record(n.Sub.Topic.URI(), n.Content)
	return true
}

func (s sink) Ended(*resource.Subscription, resource.EndReason) {}

// record encodes one notification into pending chunks.
func (p *Provider) record(uri string, v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != StateLogging || p.writer == nil {
		return
	}
	var err error
	for _, c := range chunksOf(uri, v) {
		if p.pending, err = p.writer.AppendRecord(p.pending, c.layout, c.n, c.data); err != nil {
			p.d.Logf(device.LevelError, "datalogger: %v", err)
			return
		}
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

func layout(key string, make func() *sbem.Layout) *sbem.Layout {
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

// chunksOf turns a notification into data chunks, splitting those that
// would reach the escape value into chunks of fewer samples.
func chunksOf(uri string, v any) []chunk {
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
		l := layout("motion/"+name+"/"+strings.Join(names, ","), func() *sbem.Layout {
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
			data, _ := content.Append(nil, part)
			out = append(out, chunk{l, n, data})
		}
		return out
	case *content.ECGData:
		l := layout("ecg", func() *sbem.Layout {
			return &sbem.Layout{Stream: "MeasECG", Fixed: []sbem.Field{fTS}, Arrays: []sbem.Array{{Name: "Samples", Fields: []sbem.Field{{Format: sbem.Int32}}}}}
		})
		data, _ := content.Append(nil, c)
		return []chunk{{l, len(c.Samples), data}}
	case *content.ECGDataMV:
		l := layout("ecgmv", func() *sbem.Layout {
			return &sbem.Layout{Stream: "MeasECGmV", Fixed: []sbem.Field{fTS}, Arrays: []sbem.Array{{Name: "Samples",
				Fields: []sbem.Field{{Format: sbem.Int16, Mod: "x*0.001,roundf(MIN(+32.767f,MAX(y,-32.767f))*1000.0f)"}}}}}
		})
		data, _ := content.Append(nil, c)
		return []chunk{{l, len(c.Samples), data}}
	case *content.HRData:
		l := layout("hr", func() *sbem.Layout {
			return &sbem.Layout{Stream: "MeasHR", Fixed: []sbem.Field{{Name: "average", Format: sbem.Float32}},
				Arrays: []sbem.Array{{Name: "rrData", Fields: []sbem.Field{{Format: sbem.Uint16}}}}}
		})
		data, _ := content.Append(nil, c)
		return []chunk{{l, len(c.RRData), data}}
	case *content.TempData:
		l := layout("temp", func() *sbem.Layout {
			return &sbem.Layout{Stream: "MeasTemp", Fixed: []sbem.Field{{Name: "Measurement", Format: sbem.Float32}, fTS}}
		})
		data, _ := content.Append(nil, c)
		return []chunk{{l, 0, data}}
	case *content.DetailedTime:
		l := layout("time", func() *sbem.Layout {
			return &sbem.Layout{Stream: "TimeDetailed", Fixed: []sbem.Field{{Name: "relativeTime", Format: sbem.Uint32}, {Name: "utcTime", Format: sbem.Uint64}}}
		})
		data, _ := content.Append(nil, struct {
			Rel uint32
			UTC int64
		}{c.RelativeTime, c.UTCTime})
		return []chunk{{l, 0, data}}
	}
	return nil
}
