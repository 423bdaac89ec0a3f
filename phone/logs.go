package phone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/api"
	"senseboard/client"
	"senseboard/resource"
)

// The phone's calls for a device's offline recording, over the radio link
// to the device's /Mem/DataLogger and /Mem/Logbook resources. A log is
// read by subscription to /Mem/Logbook/byId/{LogId}/Data, the family's
// fast transfer: a GET answer is one radio-link frame of at most 64 KiB,
// which a log outgrows.

// LogEntry is a log the device keeps.
type LogEntry struct {
	ID uint32 `json:"id"`
	// Modified is when the log last grew, in UTC; ModificationTimestamp is
	// the same in seconds since 1970, as the device gives it.
	Modified              time.Time `json:"modified"`
	ModificationTimestamp uint32    `json:"modificationTimestamp"`
	Size                  uint64    `json:"size"`
}

// Logs is a device's logs and its data logger.
type Logs struct {
	Device string     `json:"device"`
	Logs   []LogEntry `json:"logs"`
	Logger
}

// Logger is the state of a device's data logger.
type Logger struct {
	// State is the data logger's state: 2 READY, 3 LOGGING (1 INVALID);
	// StateName names it.
	State     int      `json:"state"`
	StateName string   `json:"stateName"`
	Paths     []string `json:"paths"`
	// Open says a log is being written; Full that logging stopped because
	// the log filled the storage.
	Open bool `json:"open"`
	Full bool `json:"full"`
}

// DeviceRefusal is a device's non-2xx answer to a request the phone made
// for a log call.
type DeviceRefusal struct {
	Device string
	Op     resource.Op
	Path   string
	Status int
	Reason string // the device's error text, "" when it gave none
}

// Error words the refusal as the load's refusals are: "device 000777:
// GET /Mem/Logbook/Entries: status 404: no such resource", or "status 501"
// alone when the device gave no reason.
func (e *DeviceRefusal) Error() string {
	s := fmt.Sprintf("device %s: %s %s: status %d", e.Device, strings.ToUpper(e.Op.String()), e.Path, e.Status)
	if e.Reason == "" {
		return s
	}
	return s + ": " + e.Reason
}

// ErrLogging is a start of a data logger that is logging already.
var ErrLogging = errors.New("the data logger is already logging")

// ErrLogTransfer is a log read by subscription that broke off or lost bytes.
var ErrLogTransfer = errors.New("log transfer failed")

// call makes one request of a device, with value (when not nil) as the
// request's values as the embedded definitions take them, and returns its
// content; a non-2xx answer is a *DeviceRefusal.
func (ph *Phone) call(ctx context.Context, serial string, op resource.Op, path string, value any) (json.RawMessage, error) {
	var params []resource.Value
	if value != nil {
		raw, err := json.Marshal(value)
		if err == nil {
			params, err = api.EmbeddedIndex().Operation(op, path).Values(raw)
		}
		if err != nil {
			return nil, err
		}
	}
	u, err := ph.Use(ctx, serial)
	if err != nil {
		return nil, err
	}
	defer u.Done()
	env, err := u.Do(ctx, op, path, params...)
	if err != nil {
		return nil, err
	}
	if !env.OK() {
		reason := env.Error
		if reason == "" {
			reason = env.ResponseString
		}
		return nil, &DeviceRefusal{Device: serial, Op: op, Path: path, Status: env.Response, Reason: reason}
	}
	return json.RawMessage(env.Content), nil
}

var stateNames = map[int]string{1: "INVALID", 2: "READY", 3: "LOGGING"}

// Logs lists a device's logs (every page of /Mem/Logbook/Entries) with
// its data logger's state and configuration.
func (ph *Phone) Logs(ctx context.Context, serial string) (*Logs, error) {
	out := &Logs{Device: serial, Logs: []LogEntry{}, Logger: Logger{Paths: []string{}}}
	var after *uint32
	for {
		var page struct {
			Elements []struct {
				ID       uint32 `json:"Id"`
				Modified uint32 `json:"ModificationTimestamp"`
				Size     uint64 `json:"Size"`
			} `json:"elements"`
		}
		var value any
		if after != nil {
			value = *after
		}
		raw, err := ph.call(ctx, serial, resource.Get, "/Mem/Logbook/Entries", value)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("device %s: /Mem/Logbook/Entries: %w", serial, err)
		}
		if len(page.Elements) == 0 {
			break
		}
		for _, e := range page.Elements {
			out.Logs = append(out.Logs, LogEntry{ID: e.ID, ModificationTimestamp: e.Modified, Size: e.Size,
				Modified: time.Unix(int64(e.Modified), 0).UTC()})
		}
		last := page.Elements[len(page.Elements)-1].ID
		if after != nil && last <= *after {
			break // a device that pages wrong must not loop the phone
		}
		after = &last
	}
	raw, err := ph.call(ctx, serial, resource.Get, "/Mem/DataLogger/State", nil)
	if err != nil {
		return nil, err
	}
	json.Unmarshal(raw, &out.State)
	out.StateName = stateNames[out.State]
	var cfg loggerConfig
	if raw, err = ph.call(ctx, serial, resource.Get, "/Mem/DataLogger/Config", nil); err != nil {
		return nil, err
	}
	json.Unmarshal(raw, &cfg)
	for _, e := range cfg.DataEntries.DataEntry {
		out.Paths = append(out.Paths, e.Path)
	}
	for path, v := range map[string]*bool{"/Mem/Logbook/IsOpen": &out.Open, "/Mem/Logbook/IsFull": &out.Full} {
		if raw, err = ph.call(ctx, serial, resource.Get, path, nil); err != nil {
			return nil, err
		}
		json.Unmarshal(raw, v)
	}
	return out, nil
}

type loggerConfig struct {
	DataEntries struct {
		DataEntry []struct {
			Path string `json:"path"`
		} `json:"dataEntry"`
	} `json:"dataEntries"`
}

// DeleteLogs erases every log of a device.
func (ph *Phone) DeleteLogs(ctx context.Context, serial string) error {
	_, err := ph.call(ctx, serial, resource.Delete, "/Mem/Logbook/Entries", nil)
	return err
}

// DeleteLog erases one log of a device.
func (ph *Phone) DeleteLog(ctx context.Context, serial string, id uint32) error {
	_, err := ph.call(ctx, serial, resource.Delete, "/Mem/Logbook/byId/"+strconv.FormatUint(uint64(id), 10), nil)
	return err
}

// StartLogging configures the data logger with paths (unless there are
// none: then it keeps its configuration) and starts it.
func (ph *Phone) StartLogging(ctx context.Context, serial string, paths []string) error {
	raw, err := ph.call(ctx, serial, resource.Get, "/Mem/DataLogger/State", nil)
	if err != nil {
		return err
	}
	if state, _ := strconv.Atoi(string(raw)); state == 3 {
		return fmt.Errorf("device %s: %w; stop it first (POST /api/devices/%s/logging/stop)", serial, ErrLogging, serial)
	}
	if paths != nil {
		var cfg loggerConfig
		for _, p := range paths {
			cfg.DataEntries.DataEntry = append(cfg.DataEntries.DataEntry, struct {
				Path string `json:"path"`
			}{p})
		}
		if _, err := ph.call(ctx, serial, resource.Put, "/Mem/DataLogger/Config", cfg); err != nil {
			return err
		}
	}
	_, err = ph.call(ctx, serial, resource.Put, "/Mem/DataLogger/State", 3)
	return err
}

// StopLogging stops the data logger; the log is closed.
func (ph *Phone) StopLogging(ctx context.Context, serial string) error {
	_, err := ph.call(ctx, serial, resource.Put, "/Mem/DataLogger/State", 2)
	return err
}

// keyedMutex is a mutex per key; the zero value is ready.
type keyedMutex struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// lock waits until key is free or ctx ends; unlock frees it.
func (k *keyedMutex) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		k.mu.Lock()
		if k.held == nil {
			k.held = map[string]chan struct{}{}
		}
		ch, busy := k.held[key]
		if !busy {
			ch = make(chan struct{})
			k.held[key] = ch
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.held, key)
				k.mu.Unlock()
				close(ch)
			}, nil
		}
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ReadLog reads a log of a device by subscription to its data: the whole
// SBEM file. Reads of the same log wait for each other (the device serves
// one subscription per resource and client). Each notification must come
// within the phone's exchange timeout.
func (ph *Phone) ReadLog(ctx context.Context, serial string, id uint32) ([]byte, error) {
	d, err := ph.device(serial)
	if err != nil {
		return nil, err
	}
	unlock, err := ph.logReads.lock(ctx, serial+"/"+strconv.FormatUint(uint64(id), 10))
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, done, err := d.use(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	path := "/Mem/Logbook/byId/" + strconv.FormatUint(uint64(id), 10) + "/Data"
	sctx, cancel := context.WithTimeout(ctx, ph.cfg.Timeout)
	sub, env, err := c.Subscribe(sctx, path)
	cancel()
	if err != nil {
		return nil, d.error(err)
	}
	if sub == nil {
		return nil, &DeviceRefusal{Device: serial, Op: resource.Subscribe, Path: path, Status: env.Response, Reason: env.Error}
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ph.cfg.Timeout)
		defer cancel()
		sub.Unsubscribe(uctx)
	}()
	var data []byte
	timer := time.NewTimer(ph.cfg.Timeout)
	defer timer.Stop()
	for {
		select {
		case n, ok := <-sub.C():
			if !ok {
				return nil, fmt.Errorf("device %s: log %d: %w after %d bytes: the subscription ended: %v", serial, id, ErrLogTransfer, len(data), sub.Err())
			}
			var note struct {
				Offset *uint32 `json:"offset"`
				Bytes  []int   `json:"bytes"`
			}
			if err := json.Unmarshal(n.Payload, &note); err != nil || note.Offset == nil {
				return nil, fmt.Errorf("device %s: log %d: %w: a notification that is not {offset, bytes}: %.80s", serial, id, ErrLogTransfer, n.Payload)
			}
			if int(*note.Offset) != len(data) {
				return nil, fmt.Errorf("device %s: log %d: %w: bytes at offset %d after %d bytes (%d notifications lost); read it again", serial, id, ErrLogTransfer, *note.Offset, len(data), sub.Dropped())
			}
			if len(note.Bytes) == 0 {
				return data, nil
			}
			for _, v := range note.Bytes {
				data = append(data, byte(v))
			}
			timer.Reset(ph.cfg.Timeout)
		case <-timer.C:
			return nil, fmt.Errorf("device %s: log %d: %w: nothing for %v after %d bytes", serial, id, ErrLogTransfer, ph.cfg.Timeout, len(data))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.Done():
			return nil, fmt.Errorf("device %s: log %d: %w: %w", serial, id, ErrLogTransfer, client.ErrClosed)
		}
	}
}
