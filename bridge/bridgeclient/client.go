// Package bridgeclient is the Go client of the phone bridge (package
// bridge): messages over its WebSocket, with any number of subscriptions
// in parallel, and the bridge's HTTP calls for devices and recordings.
//
//	c, err := bridgeclient.Dial(ctx, "http://127.0.0.1:8080", nil)
//	r, err := c.Get(ctx, "/Info")
//	sub, r, err := c.Subscribe(ctx, "/Meas/Acc/104")
//	for n := range sub.C() { ... n.Content ... }
//	sub.Unsubscribe(ctx)
//	c.Close()
package bridgeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"senseboard/internal/inbox"
)

// Options tune a client. The zero value is ready to use.
type Options struct {
	// Token is the bridge's access token, when it has one.
	Token string
	// HTTPClient makes the HTTP calls; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Device is the serial number messages go to when they name none; the
	// bridge's one connected device when empty.
	Device string
}

// Message is a message to the bridge.
type Message struct {
	Type   string          `json:"type"`
	Path   string          `json:"path,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	ID     string          `json:"id,omitempty"`
	Device string          `json:"device,omitempty"`
}

// Response is the device's answer: the specification's envelope, with the
// id of the message and the device's serial number.
type Response struct {
	ID             string          `json:"id"`
	Device         string          `json:"device"`
	Response       int             `json:"response"`
	ResponseString string          `json:"responsestring"`
	Operation      string          `json:"operation"`
	URI            string          `json:"uri"`
	Content        json.RawMessage `json:"content,omitempty"`
	QueryTimeMs    int64           `json:"querytimems"`
	QueryTimeNs    int64           `json:"querytimens"`
	Error          string          `json:"error,omitempty"`
	// Raw is the message as the bridge sent it.
	Raw json.RawMessage `json:"-"`
}

// OK reports a 2xx status.
func (r *Response) OK() bool { return r.Response >= 200 && r.Response < 300 }

// Notification is one notification of a subscription.
type Notification struct {
	ID      string          `json:"id"`
	Device  string          `json:"device"`
	URI     string          `json:"uri"`
	Content json.RawMessage `json:"content"`
}

// Error is the bridge's refusal of a message or a call.
type Error struct {
	Status int    // HTTP status of a call; 0 on the WebSocket
	Msg    string // the bridge's words
}

func (e *Error) Error() string { return "bridge: " + e.Msg }

// ErrClosed is a client whose WebSocket closed.
var ErrClosed = errors.New("bridge connection closed")

// ErrEnded is a subscription the device or the bridge ended (a reset, a
// mode change, a disconnect): its Err wraps ErrEnded and gives the reason.
var ErrEnded = errors.New("the device ended the subscription")

// in is any message from the bridge.
type in struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

// Client is a connection to a bridge.
type Client struct {
	base string
	opts Options
	http *http.Client
	conn *websocket.Conn

	mu      sync.Mutex
	nextID  int
	pending map[string]chan []byte
	subs    map[string]*Subscription
	err     error
	done    chan struct{}
	wg      sync.WaitGroup
}

// Dial connects to the bridge at base, for example http://127.0.0.1:8080.
func Dial(ctx context.Context, base string, opts *Options) (*Client, error) {
	c := &Client{base: strings.TrimSuffix(base, "/"), pending: map[string]chan []byte{}, subs: map[string]*Subscription{},
		done: make(chan struct{})}
	if opts != nil {
		c.opts = *opts
	}
	c.http = c.opts.HTTPClient
	if c.http == nil {
		c.http = http.DefaultClient
	}
	u, err := url.Parse(c.base + "/api/ws")
	if err != nil {
		return nil, fmt.Errorf("bridge address %q: %w", base, err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return nil, fmt.Errorf("bridge address %q: give http://host:port", base)
	}
	hdr := http.Header{}
	if c.opts.Token != "" {
		hdr.Set("Authorization", "Bearer "+c.opts.Token)
	}
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: hdr})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, &Error{Status: resp.StatusCode, Msg: fmt.Sprintf("%s refused the WebSocket: %s", base, resp.Status)}
		}
		return nil, fmt.Errorf("bridge %s: %w", base, err)
	}
	conn.SetReadLimit(1 << 20)
	c.conn = conn
	c.wg.Add(1)
	go c.read()
	return c, nil
}

// read hands the bridge's messages on. It exits when the connection closes.
func (c *Client) read() {
	defer c.wg.Done()
	for {
		_, data, err := c.conn.Read(context.Background())
		if err != nil {
			c.shut(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
		var m in
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		switch m.Type {
		case "response", "error":
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- data
			}
		case "notification":
			c.mu.Lock()
			s := c.subs[m.ID]
			c.mu.Unlock()
			var n Notification
			if s != nil && json.Unmarshal(data, &n) == nil {
				s.in.Deliver(n)
			}
		case "ended":
			c.mu.Lock()
			s := c.subs[m.ID]
			delete(c.subs, m.ID)
			c.mu.Unlock()
			if s != nil {
				s.in.Finish(fmt.Errorf("%w: %s", ErrEnded, m.Reason))
			}
		}
	}
}

func (c *Client) shut(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	subs := c.subs
	c.subs = map[string]*Subscription{}
	c.mu.Unlock()
	close(c.done)
	for _, s := range subs {
		s.in.Close(err)
	}
}

// Close closes the connection; the bridge ends its subscriptions.
func (c *Client) Close() error {
	c.conn.Close(websocket.StatusNormalClosure, "")
	c.shut(ErrClosed)
	c.wg.Wait()
	return nil
}

// Send sends a message and waits for its answer. A message without an id
// gets one. The device's error statuses are answers, not errors; the
// bridge's refusals are *Error.
func (c *Client) Send(ctx context.Context, m Message) (*Response, error) {
	return c.send(ctx, m, nil)
}

func (c *Client) send(ctx context.Context, m Message, sub *Subscription) (*Response, error) {
	if m.Device == "" {
		m.Device = c.opts.Device
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	if m.ID == "" {
		c.nextID++
		m.ID = "c" + strconv.Itoa(c.nextID)
	}
	if _, busy := c.pending[m.ID]; busy {
		c.mu.Unlock()
		return nil, fmt.Errorf("bridgeclient: id %q is waiting for an answer already", m.ID)
	}
	if _, busy := c.subs[m.ID]; busy && sub != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("bridgeclient: id %q names a subscription of this client already", m.ID)
	}
	ch := make(chan []byte, 1)
	c.pending[m.ID] = ch
	if sub != nil {
		sub.id = m.ID
		c.subs[m.ID] = sub // before the first notification can come
	}
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, m.ID)
		if sub != nil && c.subs[m.ID] == sub {
			delete(c.subs, m.ID)
		}
		c.mu.Unlock()
	}
	b, err := json.Marshal(m)
	if err != nil {
		forget()
		return nil, err
	}
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		forget()
		return nil, fmt.Errorf("bridgeclient: %w", err)
	}
	select {
	case data := <-ch:
		var head in
		json.Unmarshal(data, &head)
		if head.Type == "error" {
			forget()
			return nil, &Error{Msg: head.Error}
		}
		r := &Response{Raw: data}
		if err := json.Unmarshal(data, r); err != nil {
			forget()
			return nil, fmt.Errorf("bridgeclient: answer %s: %w", data, err)
		}
		if sub != nil && !r.OK() {
			forget()
		}
		return r, nil
	case <-c.done:
		return nil, c.err
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// Get reads a resource.
func (c *Client) Get(ctx context.Context, path string) (*Response, error) {
	return c.Send(ctx, Message{Type: "get", Path: path})
}

// Put writes a resource; value is encoded as JSON.
func (c *Client) Put(ctx context.Context, path string, value any) (*Response, error) {
	b, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return c.Send(ctx, Message{Type: "put", Path: path, Value: b})
}

// SubscriptionBuffer is how many notifications wait for the reader of C;
// the memory for them is taken as they pile up and let go as the reader
// catches up.
const SubscriptionBuffer = 4096

// Subscription is a subscription made over the client.
type Subscription struct {
	c    *Client
	id   string
	path string
	in   *inbox.Inbox[Notification]
}

// Subscribe subscribes to a resource. The subscription is made when the
// response says 2xx; otherwise the subscription is nil.
func (c *Client) Subscribe(ctx context.Context, path string) (*Subscription, *Response, error) {
	return c.SubscribeMessage(ctx, Message{Type: "subscribe", Path: path})
}

// SubscribeMessage subscribes with a message of its own (an id, a device,
// a value).
func (c *Client) SubscribeMessage(ctx context.Context, m Message) (*Subscription, *Response, error) {
	m.Type = "subscribe"
	s := &Subscription{c: c, path: m.Path, in: inbox.New[Notification](SubscriptionBuffer)}
	r, err := c.send(ctx, m, s)
	if err != nil || !r.OK() {
		return nil, r, err
	}
	return s, r, nil
}

// ID returns the subscription's id.
func (s *Subscription) ID() string { return s.id }

// C returns the notifications; it is closed when the subscription ends.
// When the device ends it, the notifications that waited come first; when
// the connection closes or Unsubscribe is called, those are let go.
func (s *Subscription) C() <-chan Notification { return s.in.C() }

// Err says why the subscription ended, or nil while it lasts or after
// Unsubscribe; it wraps ErrEnded when the device ended it.
func (s *Subscription) Err() error { return s.in.Err() }

// Dropped counts notifications lost because C was not read fast enough.
func (s *Subscription) Dropped() uint64 { return s.in.Dropped() }

// Unsubscribe ends the subscription.
func (s *Subscription) Unsubscribe(ctx context.Context) (*Response, error) {
	c := s.c
	c.mu.Lock()
	delete(c.subs, s.id)
	c.mu.Unlock()
	s.in.Close(nil)
	return c.Send(ctx, Message{Type: "unsubscribe", ID: s.id})
}

// call makes an HTTP call to the bridge's API and decodes the answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if method != http.MethodGet {
		// the bridge takes calls that change things as JSON only, even
		// without a body
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("bridgeclient: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("bridgeclient: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var m in
		if json.Unmarshal(data, &m) != nil || m.Error == "" {
			m.Error = resp.Status
		}
		return &Error{Status: resp.StatusCode, Msg: m.Error}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// DeviceState is what the bridge knows of a device (bridge.DeviceState).
type DeviceState struct {
	Serial      string   `json:"serial"`
	Name        string   `json:"name"`
	Address     string   `json:"address"`
	Local       bool     `json:"local"`
	State       string   `json:"state"`
	Advertising bool     `json:"advertising"`
	Connected   bool     `json:"connected"`
	Handle      uint16   `json:"handle"`
	PassKey     bool     `json:"passKey"`
	HRS         bool     `json:"hrs"`
	Bonded      bool     `json:"bonded"`
	Encrypted   bool     `json:"encrypted"`
	AutoConnect bool     `json:"autoConnect"`
	Note        string   `json:"note"`
	Streams     []string `json:"streams"`
	UpdateMode  bool     `json:"updateMode"`
}

// Devices lists the devices the bridge sees.
func (c *Client) Devices(ctx context.Context) ([]DeviceState, error) {
	var out []DeviceState
	err := c.call(ctx, http.MethodGet, "/api/devices", nil, &out)
	return out, err
}

// Device returns what the bridge knows of one device.
func (c *Client) Device(ctx context.Context, serial string) (DeviceState, error) {
	var out DeviceState
	err := c.call(ctx, http.MethodGet, "/api/devices/"+url.PathEscape(serial), nil, &out)
	return out, err
}

// Connect asks the bridge to connect to a device.
func (c *Client) Connect(ctx context.Context, serial string) (DeviceState, error) {
	var out DeviceState
	err := c.call(ctx, http.MethodPost, "/api/devices/"+url.PathEscape(serial)+"/connect", nil, &out)
	return out, err
}

// Pair asks the bridge to pair with a device, with its pass key ("" when it
// has none), and to bond when bond is set.
func (c *Client) Pair(ctx context.Context, serial, passKey string, bond bool) (DeviceState, error) {
	var out DeviceState
	body := map[string]any{"passKey": passKey, "bond": bond}
	err := c.call(ctx, http.MethodPost, "/api/devices/"+url.PathEscape(serial)+"/pair", body, &out)
	return out, err
}

// Disconnect asks the bridge to disconnect from a device.
func (c *Client) Disconnect(ctx context.Context, serial string) (DeviceState, error) {
	var out DeviceState
	err := c.call(ctx, http.MethodPost, "/api/devices/"+url.PathEscape(serial)+"/disconnect", nil, &out)
	return out, err
}

// Inject makes something happen to the wearer of a device of the bridge's
// own program, for example map[string]any{"doubleTap": true}.
func (c *Client) Inject(ctx context.Context, serial string, event any) error {
	return c.call(ctx, http.MethodPost, "/api/devices/"+url.PathEscape(serial)+"/events", event, nil)
}

// FaultRecord is the ground truth of one fault of a device (package
// fault's Record, as the bridge gives it): Raw holds it whole, with the
// fault's parameters.
type FaultRecord struct {
	ID      int             `json:"id"`
	Device  string          `json:"device"`
	Fault   string          `json:"fault"`
	Start   FaultStamp      `json:"start"`
	End     *FaultStamp     `json:"end"`
	Origin  string          `json:"origin"`
	EndedBy string          `json:"endedBy"`
	Raw     json.RawMessage `json:"-"`
}

// FaultStamp is a moment of a fault: the device's relative time in ms and
// its UTC time in RFC 3339.
type FaultStamp struct {
	MS  uint32 `json:"ms"`
	UTC string `json:"utc"`
}

// UnmarshalJSON decodes a record and keeps it whole in Raw.
func (r *FaultRecord) UnmarshalJSON(b []byte) error {
	type plain FaultRecord
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Fault starts a field fault on a device of the bridge's own program, for
// example map[string]any{"fault": "stall", "path": "/Meas/ECG"}
// (docs/faults.md), and returns its record.
func (c *Client) Fault(ctx context.Context, serial string, fault any) (FaultRecord, error) {
	var out FaultRecord
	err := c.call(ctx, http.MethodPost, "/api/devices/"+url.PathEscape(serial)+"/faults", fault, &out)
	return out, err
}

// Faults returns the ground truth of a device: every fault injected into
// it, active and past.
func (c *Client) Faults(ctx context.Context, serial string) ([]FaultRecord, error) {
	var out []FaultRecord
	err := c.call(ctx, http.MethodGet, "/api/devices/"+url.PathEscape(serial)+"/faults", nil, &out)
	return out, err
}

// EndFault ends an active fault of a device.
func (c *Client) EndFault(ctx context.Context, serial string, id int) (FaultRecord, error) {
	var out FaultRecord
	err := c.call(ctx, http.MethodDelete, "/api/devices/"+url.PathEscape(serial)+"/faults/"+strconv.Itoa(id), nil, &out)
	return out, err
}

// Recording describes a recording (see bridge.RecordingState).
type Recording struct {
	Name          string   `json:"name"`
	Device        string   `json:"device"`
	Format        string   `json:"format"`
	Streams       []string `json:"streams"`
	Files         []string `json:"files"`
	Downloads     []string `json:"downloads"` // the files on the bridge, relative to its URL
	Notifications int64    `json:"notifications"`
	Error         string   `json:"error"`
}

// StartRecording records streams of a device ("" for the connected one) to
// files in format csv or jsonl.
func (c *Client) StartRecording(ctx context.Context, device, format string, paths ...string) (Recording, error) {
	var out Recording
	body := map[string]any{"device": device, "format": format, "paths": paths}
	err := c.call(ctx, http.MethodPost, "/api/recordings", body, &out)
	return out, err
}

// StopRecording stops a recording and returns the files it wrote.
func (c *Client) StopRecording(ctx context.Context, name string) (Recording, error) {
	var out Recording
	err := c.call(ctx, http.MethodPost, "/api/recordings/"+url.PathEscape(name)+"/stop", nil, &out)
	return out, err
}
