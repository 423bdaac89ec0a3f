// Package debug provides the debug service, /System/Debug/...: the message
// configuration, a stream of messages per level, the message buffer of the
// profile, and the debug log kept in the EEPROM.
//
// Messages come from the device's own components (the system group, through
// device.Logf) and from apps (the user group). Each group is produced only
// while enabled in /System/Debug/Config; both are off by default.
//
// The message buffer holds produced messages until the service delivers them
// to subscribers, every DrainInterval of device time. It is sized by the
// profile's debug.messageLines and debug.messageChars (characters count one
// terminator per message). A message that finds too few characters left is
// clipped to what remains and ends with an ellipsis (just the ellipsis when
// nothing remains); once that has happened, or when every line is taken,
// further messages do not fit. After the buffer is delivered, a Warning
// reports how many messages did not fit.
package debug

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"senseboard/clock"
	"senseboard/device"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/resource"
)

// DrainInterval is how often the message buffer is delivered.
const DrainInterval = 10 * time.Millisecond

// Ellipsis ends a clipped message.
const Ellipsis = "..."

// MaxQueryCount is the most messages one GET /System/Debug/Log returns,
// whatever Count asks for: the device's internal buffering.
const MaxQueryCount = 16

// configFile is the state file of the persisted settings.
const configFile = "debug.json"

// Config is DebugMessageConfig.
type Config struct {
	SystemMessages bool `json:"SystemMessages"`
	DebugMessages  bool `json:"DebugMessages"`
}

// LogConfig is the read form of DebugLogConfig.
type LogConfig struct {
	MinimalLevel resource.Pair `json:"MinimalLevel"`
}

// Message is a debug notification, and an entry of a log result.
type Message struct {
	ID        *uint32       `json:"Id,omitempty"`
	Timestamp uint32        `json:"Timestamp"`
	Level     resource.Pair `json:"Level"`
	Tag       string        `json:"Tag"`
	Message   string        `json:"Message"`
}

// LogResult is the content of GET /System/Debug/Log.
type LogResult struct {
	Messages []Message `json:"Messages"`
}

type persisted struct {
	Config
	MinimalLevel uint8 `json:"MinimalLevel"`
}

type pending struct {
	level device.Level
	ts    uint32
	msg   string
}

// Provider serves the debug resources.
type Provider struct {
	d    *device.Core
	cfg  *nvm.Var[persisted] // debug.json
	prof profile.Debug
	log  *logStore // nil when the profile disables the log

	mu       sync.Mutex
	topics   [5]*resource.Topic
	buf      []pending
	chars    int
	full     bool // an ellipsis was placed: nothing fits until delivery
	notFit   int
	drainTmr clock.Timer
}

// New returns the debug service over the state store and the EEPROM, which
// holds the log when the profile enables it.
func New(store *nvm.Store, mem *nvm.EEPROM, p *profile.Profile) (*Provider, error) {
	cfg, err := nvm.OpenVar(store, configFile, persisted{MinimalLevel: uint8(device.LevelInfo)}, (*persisted).check)
	if err != nil {
		return nil, err
	}
	pr := &Provider{cfg: cfg, prof: p.Debug}
	if p.Debug.Log.Enabled {
		l, err := openLog(mem, p.Debug.Log)
		if err != nil {
			return nil, err
		}
		pr.log = l
	}
	return pr, nil
}

// check applies the rules of DebugLogConfig, the same to the settings a
// client writes and to those loaded from the state file.
func (s *persisted) check() error {
	if s.MinimalLevel > uint8(device.LevelVerbose) {
		return fmt.Errorf("MinimalLevel %d is not a level: 0 (fatal) to %d (verbose)", s.MinimalLevel, device.LevelVerbose)
	}
	return nil
}

// Register installs the resources and becomes the device's message sink.
func (p *Provider) Register(d *device.Core) error {
	p.d = d
	d.SetLogger(p.produce)
	d.HandleFunc("/System/Debug/Config", resource.Get, func(*resource.Request) resource.Response {
		c := p.cfg.Get().Config
		return resource.OK(&c)
	})
	d.HandleFunc("/System/Debug/Config", resource.Put, func(req *resource.Request) resource.Response {
		var c Config
		if err := req.Arg(0).Decode(&c); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "DebugMessageConfig: %v", err)
		}
		return p.save(func(s *persisted) { s.Config = c })
	})
	d.HandleFunc("/System/Debug/Log/Config", resource.Get, func(*resource.Request) resource.Response {
		l := device.Level(p.cfg.Get().MinimalLevel)
		return resource.OK(&LogConfig{MinimalLevel: resource.Pair{Value: int(l), Name: l.String()}})
	})
	d.HandleFunc("/System/Debug/Log/Config", resource.Put, func(req *resource.Request) resource.Response {
		var c struct{ MinimalLevel uint8 }
		if err := req.Arg(0).Decode(&c); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "DebugLogConfig: %v", err)
		}
		return p.save(func(s *persisted) { s.MinimalLevel = c.MinimalLevel })
	})
	d.HandleFunc("/System/Debug/Log", resource.Get, p.query)
	d.HandleSource("/System/Debug/{Level}", source{p})
	return nil
}

// save changes the persisted settings durably, or not at all.
func (p *Provider) save(change func(*persisted)) resource.Response {
	err := p.cfg.Update(func(s *persisted) error { change(s); return nil })
	switch {
	case errors.Is(err, nvm.ErrNotStored):
		return resource.Errorf(resource.StatusInternalServerError, "%v", err)
	case err != nil: // refused by check
		return resource.Errorf(resource.StatusBadRequest, "%v", err)
	}
	return resource.OK(nil)
}

// produce is the device's message sink.
func (p *Provider) produce(group device.Group, level device.Level, msg string) {
	if level > device.LevelVerbose {
		level = device.LevelVerbose
	}
	cfg := p.cfg.Get()
	enabled := group == device.GroupSystem && cfg.SystemMessages || group == device.GroupUser && cfg.DebugMessages
	if !enabled {
		return
	}
	p.mu.Lock()
	ts := p.d.RelativeTime()
	store := p.log != nil && uint8(level) <= cfg.MinimalLevel
	p.buffer(level, ts, msg)
	p.mu.Unlock()
	if store {
		p.log.append(uint8(level), ts, msg)
	}
}

// buffer applies the message buffer's limits; p.mu is held.
func (p *Provider) buffer(level device.Level, ts uint32, msg string) {
	if !p.subscribed() {
		return
	}
	lines, chars := p.prof.MessageLines, p.prof.MessageChars
	if p.full || len(p.buf) >= lines {
		p.notFit++
		return
	}
	room := chars - p.chars - 1 // one terminator
	if need := len(msg); need > room {
		keep := max(room-len(Ellipsis), 0)
		for keep > 0 && !utf8.RuneStart(msg[keep]) {
			keep--
		}
		msg = msg[:keep] + Ellipsis
		p.full = true
	}
	p.buf = append(p.buf, pending{level, ts, msg})
	p.chars += len(msg) + 1
	if p.drainTmr == nil {
		p.drainTmr = p.d.Clock().AfterFunc(DrainInterval, p.drain)
	}
}

func (p *Provider) subscribed() bool {
	for _, t := range p.topics {
		if t != nil && t.Subscribers() > 0 {
			return true
		}
	}
	return false
}

// drain delivers the buffer to the subscribers of each level at or below
// the message's priority.
func (p *Provider) drain() {
	p.mu.Lock()
	buf, notFit, topics := p.buf, p.notFit, p.topics
	p.buf, p.chars, p.full, p.notFit, p.drainTmr = nil, 0, false, 0, nil
	p.mu.Unlock()
	deliver := func(level device.Level, ts uint32, msg string) {
		n := &Message{Timestamp: ts, Level: resource.Pair{Value: int(level), Name: level.String()}, Message: msg}
		for sub := level; sub <= device.LevelVerbose; sub++ {
			if t := topics[sub]; t != nil {
				t.Publish(n)
			}
		}
	}
	for _, m := range buf {
		deliver(m.level, m.ts, m.msg)
	}
	if notFit > 0 {
		deliver(device.LevelWarning, p.d.RelativeTime(), fmt.Sprintf("%d debug messages did not fit in the message buffer (%d lines, %d characters)",
			notFit, p.prof.MessageLines, p.prof.MessageChars))
	}
}

// query answers GET /System/Debug/Log.
func (p *Provider) query(req *resource.Request) resource.Response {
	if p.log == nil {
		return resource.Response{Status: resource.StatusNoContent} // the profile disables the log
	}
	var q struct {
		ID        *uint32 `json:"Id"`
		Timestamp *uint32 `json:"Timestamp"`
		Count     *uint16 `json:"Count"`
	}
	if v := req.Arg(0); v.Type() != resource.TypeInvalid {
		if err := v.Decode(&q); err != nil {
			return resource.Errorf(resource.StatusBadRequest, "DebugLogQuery: %v", err)
		}
	}
	count := MaxQueryCount
	if q.Count != nil && int(*q.Count) < count {
		count = int(*q.Count)
	}
	later := q.ID != nil || q.Timestamp == nil // no query at all reads the newest, later form
	var id, ts uint32
	if q.ID != nil {
		id = *q.ID
	}
	if q.Timestamp != nil {
		ts = *q.Timestamp
	}
	entries := p.log.query(q.ID != nil, id, q.Timestamp != nil, ts, count)
	if len(entries) == 0 {
		return resource.Response{Status: resource.StatusNoContent}
	}
	res := &LogResult{Messages: make([]Message, len(entries))}
	for i, e := range entries {
		l := device.Level(e.Level)
		m := Message{Timestamp: e.Timestamp, Level: resource.Pair{Value: int(l), Name: l.String()}, Message: e.Message}
		if later {
			idv := e.ID
			m.ID = &idv
		}
		res.Messages[i] = m
	}
	return resource.OK(res)
}

// Reset drops undelivered messages; the configuration and the log are
// non-volatile.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drainTmr != nil {
		p.drainTmr.Stop()
		p.drainTmr = nil
	}
	p.buf, p.chars, p.full, p.notFit = nil, 0, false, 0
}

// PowerOff drops undelivered messages.
func (p *Provider) PowerOff() { p.Reset() }

// Close writes what the log still holds in memory.
func (p *Provider) Close() error {
	p.Reset()
	if p.log != nil {
		p.log.close()
	}
	return nil
}

// source keeps the topic of each level.
type source struct{ p *Provider }

func levelOf(t *resource.Topic) device.Level {
	l, _ := device.ParseLevel(t.Args()[0].Str())
	return l
}

func (s source) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.topics[levelOf(t)] = t
	return resource.OK(nil)
}

func (s source) Unsubscribed(t *resource.Topic) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if l := levelOf(t); t.Subscribers() == 0 && s.p.topics[l] == t {
		s.p.topics[l] = nil
	}
}
