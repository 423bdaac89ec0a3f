// Package air carries the radio link between senseboard programs over
// NATS, on one computer or many. A device is on the air while its program
// advertises it and takes streams on its subjects (see subject.go and
// docs/protocol.md); each stream is one central in range of the device, a
// net.Conn that carries the framed radio link protocol (package link,
// which serves and speaks it), where the central scans, connects and pairs
// as over BLE. A central, such as the phone bridge of any program on the
// same NATS network, finds the devices by their adverts (Directory) and
// opens streams to them (Link.Dial).
//
// A Link is a program's connection to NATS: Join connects to a server or
// cluster given by URL, with its credentials; Local shares the computer's
// own server on a loopback port, and starts one inside the program when
// none runs, taking over when the program that ran it stops. That server
// lets in only the programs that show the token in the user's token file
// (secret.go); no secret ever shows in an error or a log line.
package air

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// Options tune a Link; the zero value is the product's defaults.
type Options struct {
	// Name names the program's NATS connection ("senseboard" when empty).
	Name string
	// ID is the program's id on the air, which names its inbox
	// (InboxSubject): 1 to 64 letters, digits, '-' or '_', unique on the
	// NATS network; a random one when empty. A fixed one lets a NATS
	// user's permissions name the program's inbox.
	ID string
	// Creds is a NATS credentials file (user JWT and NKey seed) for a
	// server elsewhere (Join); the URL may carry user:password@ or token@
	// instead. The computer's own server (Local) takes none: it asks for
	// the token in TokenFile.
	Creds string
	// TokenFile keeps the secret token of the computer's own NATS server
	// (Local): the server a program starts asks for it, and the programs
	// that join it send it. It is made, readable by its owner alone, when
	// missing (DefaultTokenFile when empty).
	TokenFile string
	// Interval is how often devices advertise and streams send keepalives
	// (DefaultInterval when zero).
	Interval time.Duration
	// Missed is how many intervals of silence end a stream or make a
	// device's advert expire (DefaultMissed when zero).
	Missed int
	// ReadBuffer bounds the bytes a stream holds that its reader has not
	// read; over it the stream closes with ErrFellBehind (DefaultReadBuffer
	// when zero).
	ReadBuffer int
	// PendingMessages bounds the messages that wait in the link's inbox
	// to reach its streams, all streams together, and the adverts that
	// wait to reach a Directory (DefaultPendingMessages when zero); over
	// it NATS drops them, and a stream that loses one closes with ErrLost.
	// PendingFor gives a bound for a number of streams.
	PendingMessages int
	// ReconnectWait is how long the link waits between attempts to reach
	// a lost server (DefaultReconnectWait when zero).
	ReconnectWait time.Duration
	// WriteDelay, when positive, is how long what the link sends may
	// wait, so that what it sends meanwhile, for any of its streams, goes
	// to the server in the same write; zero, the default, sends at once.
	// It saves system calls, but on a machine short of CPU it held
	// deliveries back (docs/performance.md).
	WriteDelay time.Duration
	// Log receives what happens; nil discards it.
	Log *slog.Logger

	hooks *testHooks // the tests'; nil: none
}

// testHooks are what tests change of a link's connection to the server.
type testHooks struct {
	wrapConn func(net.Conn) net.Conn // wraps each connection to the server as dialed
}

// Defaults of Options.
const (
	DefaultInterval        = time.Second
	DefaultMissed          = 3
	DefaultReadBuffer      = 4 << 20
	DefaultPendingMessages = 65536
	DefaultReconnectWait   = 250 * time.Millisecond
)

// PendingFor is a bound of Options.PendingMessages for a link of streams
// streams: DefaultPendingMessages, or room for a second of 64 messages of
// each when that is more.
func PendingFor(streams int) int { return max(DefaultPendingMessages, 64*streams) }

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "senseboard"
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Missed <= 0 {
		o.Missed = DefaultMissed
	}
	if o.ReadBuffer <= 0 {
		o.ReadBuffer = DefaultReadBuffer
	}
	if o.PendingMessages <= 0 {
		o.PendingMessages = DefaultPendingMessages
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = DefaultReconnectWait
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Link is a program's connection to the radio link.
type Link struct {
	opts  Options
	log   *slog.Logger
	nc    *nats.Conn
	where string // the URL nc connected to, credentials and all: the adverts' connection takes it too
	id    string // the program's id on the air, in adverts and dials
	inbox string // InboxSubject(id)
	url   string // as given, without credentials

	send *sender // publishes what the streams send, and the marks

	token string // of the computer's own server; "" when joined elsewhere
	creds string // what the program shows the server, for messages

	local *localServer // nil unless Local

	dials chan *nats.Msg // the dial requests of every device on the air here
	msgs  chan *nats.Msg // the inbox: the messages of every stream of the link, and its marks

	mu        sync.Mutex
	listeners map[string]*Listener // by serial
	streams   map[uint64]*Stream   // by this side's id
	nstreams  atomic.Int64         // len(streams), for the sender's bound (sender.limit)
	lastID    uint64               // the id of the stream added last
	dirs      map[*Directory]struct{}
	adv       *nats.Conn // the adverts' connection (advertConn), once a directory needs it; nil before
	closed    bool
	marks     map[uint64]time.Time // the marks sent and not yet taken back, with when they went
	markSeq   uint64               // names the next mark
	caught    time.Time            // when the mark taken back last went; when the link was made, before
	moved     chan struct{}        // closed and replaced when caught moves on (deliveredPast)

	taskMu    sync.Mutex
	tasks     []func()      // what the streams leave to the delivery goroutine (later)
	taskCh    chan struct{} // wakes it for them
	tasksDone bool          // the delivery goroutine is gone: later runs what it is given at once

	stop chan struct{}
	wg   sync.WaitGroup // the sender, tick, the two serve loops, and the local server's keeper
}

// ErrNoServer is a NATS server that cannot be reached.
var ErrNoServer = errors.New("cannot reach the NATS server")

// ErrURL is a NATS URL that does not parse.
var ErrURL = errors.New("does not parse; give nats://[user:password@]host:port or tls://...")

// Join connects to the NATS server or cluster at url: nats://host:port,
// several separated by commas, with user:password@ or token@ when the
// server asks for them (or Options.Creds). It reconnects on its own when
// the connection is lost. A server that refuses the credentials gives
// ErrDenied; a credentials file that cannot serve, ErrCredentials.
func Join(where string, o Options) (*Link, error) {
	for _, u := range strings.Split(where, ",") {
		if _, err := url.Parse(strings.TrimSpace(u)); err != nil {
			return nil, fmt.Errorf("air: NATS URL %s: %w", Redact(u), ErrURL)
		}
	}
	l, err := newLink(where, o)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Creds != "":
		if err := checkCredentials(o.Creds, time.Now()); err != nil {
			return nil, err
		}
		l.creds = "the user in " + o.Creds
	case strings.Contains(where, "@"):
		l.creds = "the credentials in the URL"
	default:
		l.creds = "it showed none"
	}
	if err := l.connect(where, 1); err != nil {
		return nil, err
	}
	if err := l.start(); err != nil {
		l.nc.Close()
		return nil, err
	}
	return l, nil
}

func newLink(url string, o Options) (*Link, error) {
	o = o.withDefaults()
	id := o.ID
	if id == "" {
		id = nuid.Next()
	} else if !token(id) {
		return nil, fmt.Errorf("air: program id %q: %w", id, ErrProgram)
	}
	l := &Link{opts: o, log: o.Log, id: id, inbox: InboxSubject(id), url: Redact(url), listeners: map[string]*Listener{},
		streams: map[uint64]*Stream{}, dirs: map[*Directory]struct{}{}, stop: make(chan struct{}),
		dials: make(chan *nats.Msg, dialQueue), msgs: make(chan *nats.Msg, o.PendingMessages),
		taskCh: make(chan struct{}, 1), marks: map[uint64]time.Time{}, markSeq: uint64(rand.Int64()),
		caught: time.Now(), moved: make(chan struct{})}
	l.send = newSender(l)
	return l, nil
}

// connect makes the NATS connection; tries says how often to try.
func (l *Link) connect(url string, tries int) error {
	opts := append(l.natsOptions(), nats.DisconnectErrHandler(l.disconnected), nats.ReconnectHandler(l.reconnected))
	var err error
	for range tries {
		if l.nc, err = nats.Connect(url, opts...); err == nil {
			l.where = url
			return nil
		}
	}
	return fmt.Errorf("air: %w", l.connectErr(err))
}

// connectErr names why a connection to the server failed: ErrDenied or
// ErrNoServer.
func (l *Link) connectErr(err error) error {
	if denied(err) {
		return fmt.Errorf("NATS server %s: %w (%s): %w", l.url, ErrDenied, l.creds, err)
	}
	return fmt.Errorf("%w at %s: %w", ErrNoServer, l.url, err)
}

// natsOptions are the options of the link's connections to NATS.
func (l *Link) natsOptions() []nats.Option {
	opts := []nats.Option{
		nats.Name(l.opts.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(l.opts.ReconnectWait),
		nats.ReconnectJitter(l.opts.ReconnectWait/4, l.opts.ReconnectWait/4),
		nats.RetryOnFailedConnect(false),
		// Nothing waits in the connection while it reconnects: every
		// stream ends when it is lost (disconnected), so what they sent
		// would reach peers that forgot them, and the 8 MiB NATS keeps by
		// default would add to the link's bound (sender). A publish then
		// fails at once: a dial or a probe says the server cannot be
		// reached (unreachable) instead of waiting for it.
		nats.ReconnectBufSize(-1),
		nats.SetCustomDialer(l.dialer()),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			l.log.Warn("nats", "subject", subject, "err", err)
		}),
	}
	if l.opts.Creds != "" {
		opts = append(opts, nats.UserCredentials(l.opts.Creds))
	}
	if l.token != "" {
		opts = append(opts, nats.Token(l.token))
	}
	return opts
}

// advertConn returns the connection of the adverts: a program that watches
// the air (Watch) publishes its devices' adverts and takes the adverts of
// others on a connection of their own, which NATS does not echo: the
// adverts of its own devices, once a second each, do not come back to it.
// It is made at the first Watch; until then advertConn(false) returns nc.
func (l *Link) advertConn(create bool) (*nats.Conn, error) {
	l.mu.Lock()
	switch {
	case l.adv != nil:
		defer l.mu.Unlock()
		return l.adv, nil
	case !create:
		defer l.mu.Unlock()
		return l.nc, nil
	case l.closed:
		defer l.mu.Unlock()
		return nil, ErrClosed
	}
	l.mu.Unlock()
	// Connected without l.mu: the link's deliveries do not wait for it.
	opts := append(l.natsOptions(), nats.NoEcho(), nats.ReconnectHandler(func(nc *nats.Conn) {
		nc.Publish(ScanSubject, nil) // the directories hear every device again
	}))
	nc, err := nats.Connect(l.where, opts...)
	if err != nil {
		return nil, fmt.Errorf("the adverts' connection: %w", l.connectErr(err))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		nc.Close()
		return nil, ErrClosed
	case l.adv != nil: // another directory's, made meanwhile
		nc.Close()
		return l.adv, nil
	}
	l.adv = nc
	return nc, nil
}

// closeAdverts sends what the adverts' connection holds, and closes it.
func (l *Link) closeAdverts() {
	l.mu.Lock()
	nc := l.adv
	l.mu.Unlock()
	if nc == nil {
		return
	}
	if nc.IsConnected() {
		nc.FlushTimeout(flushTimeout)
	}
	nc.Close()
}

// dialer returns the dialer of the link's connections to the server.
func (l *Link) dialer() *batchDialer {
	d := &batchDialer{delay: l.opts.WriteDelay, d: net.Dialer{Timeout: nats.DefaultTimeout}}
	if l.opts.hooks != nil {
		d.wrap = l.opts.hooks.wrapConn
	}
	return d
}

// start takes the inbox, answers scans and starts the link's ticker, once
// the server holds its subscriptions.
func (l *Link) start() error {
	if _, err := l.nc.ChanSubscribe(l.inbox, l.msgs); err != nil {
		return fmt.Errorf("air: the inbox %s: %w", l.inbox, err)
	}
	l.nc.Subscribe(ScanSubject, func(*nats.Msg) { l.advertiseAll() })
	// The server holds the subscriptions before the link is used: a
	// message to the inbox from another connection is not lost.
	if err := l.nc.FlushTimeout(flushTimeout); err != nil {
		return fmt.Errorf("air: the inbox %s: %w", l.inbox, err)
	}
	l.wg.Go(l.send.run)
	l.wg.Go(l.tick)
	l.wg.Go(func() { l.serve(l.dials, l.answerDial, nil) })
	l.wg.Go(func() { l.serve(l.msgs, l.deliver, l.taskCh) })
	return nil
}

// serve hands the messages of a queue to handle, one at a time, until the
// link closes: one goroutine for the messages of all the devices or
// streams of the program, instead of one for each. The goroutine of the
// streams' messages also runs what they leave to it (later) when tasks
// wakes it; nil for the other.
func (l *Link) serve(queue <-chan *nats.Msg, handle func(*nats.Msg), tasks <-chan struct{}) {
	for {
		select {
		case <-l.stop:
			return
		case msg := <-queue:
			handle(msg)
		case <-tasks:
			l.runTasks()
		}
	}
}

// later has the goroutine that delivers the streams' messages run f, after
// the messages it is handing out; once the link has closed, f runs at once.
func (l *Link) later(f func()) {
	l.taskMu.Lock()
	if l.tasksDone {
		l.taskMu.Unlock()
		f()
		return
	}
	l.tasks = append(l.tasks, f)
	l.taskMu.Unlock()
	select {
	case l.taskCh <- struct{}{}:
	default:
	}
}

// runTasks runs what later was given.
func (l *Link) runTasks() {
	l.taskMu.Lock()
	tasks := l.tasks
	l.tasks = nil
	l.taskMu.Unlock()
	for _, f := range tasks {
		f()
	}
}

// deliver hands a message of the inbox to its stream, or takes back a
// mark.
func (l *Link) deliver(msg *nats.Msg) {
	m, err := parseMessage(msg.Data)
	if err != nil {
		l.log.Warn("inbox", "err", err)
		return
	}
	l.mu.Lock()
	if m.kind == msgMark {
		if at, ok := l.marks[m.seq]; ok { // not a mark of this link's: ignored
			delete(l.marks, m.seq)
			l.caught = at
			close(l.moved)
			l.moved = make(chan struct{})
		}
		l.mu.Unlock()
		return
	}
	s := l.streams[m.stream]
	l.mu.Unlock()
	if s != nil { // nil: a stream that ended meanwhile
		s.receive(m)
	}
}

// mark sends a mark to the link's own inbox. What reached the inbox
// before it is taken before it, so when it is taken back, the messages
// the peers of the streams sent until it went have been taken: a peer not
// heard since was silent since then at least, however many messages of
// other streams wait behind (keepalive).
func (l *Link) mark(now time.Time) {
	l.mu.Lock()
	l.markSeq++
	seq := l.markSeq
	if len(l.marks) >= maxMarks { // marks lost with a lost connection
		clear(l.marks)
	}
	l.marks[seq] = now
	l.mu.Unlock()
	l.send.mark(message{kind: msgMark, seq: seq}) // after what the streams sent before it
}

// maxMarks bounds the marks that wait to be taken back.
const maxMarks = 64

// caughtUp returns when the mark taken back last went.
func (l *Link) caughtUp() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.caught
}

// deliveredPast returns nil when the delivery has caught up past t: what
// the peers sent until t has been taken. Otherwise it returns a channel
// that is closed when the delivery moves on, to ask again then.
func (l *Link) deliveredPast(t time.Time) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.caught.Before(t) {
		return nil
	}
	return l.moved
}

// dialQueue bounds the dial requests that wait to be answered; NATS drops
// more, and their centrals time out.
const dialQueue = 4096

// answerDial hands a dial request to its device's listener.
func (l *Link) answerDial(msg *nats.Msg) {
	subject, err := ParseSubject(msg.Subject)
	if err != nil || subject.Kind != KindDial {
		return
	}
	l.mu.Lock()
	ln := l.listeners[subject.Serial]
	l.mu.Unlock()
	if ln != nil {
		ln.dial(msg)
		return
	}
	// a device that left meanwhile; a probe is not answered, so
	// that the serial is free
	var m dialMsg
	if json.Unmarshal(msg.Data, &m) == nil && !m.Probe {
		b, _ := json.Marshal(dialReply{Program: l.id, Error: "the device is off the air"})
		msg.Respond(b)
	}
}

// URL is the server the link was given, without credentials.
func (l *Link) URL() string { return l.url }

// Embedded reports whether the NATS server the link uses runs in this
// program.
func (l *Link) Embedded() bool { return l.local != nil && l.local.running() }

// Connected reports whether the link is connected to a NATS server now.
func (l *Link) Connected() bool { return l.nc.IsConnected() }

// unreachable returns err, or ErrNoServer when err is a publish that the
// connection refused while it reconnects (it keeps nothing for then).
func (l *Link) unreachable(err error) error {
	if errors.Is(err, nats.ErrReconnectBufExceeded) {
		return fmt.Errorf("%w at %s: the connection was lost, and the link reconnects on its own", ErrNoServer, l.url)
	}
	return err
}

// refused is why a stream ends whose message the connection did not
// take. While the link reconnects that is the loss of the connection, as
// disconnected tells the streams: a stream that sends meanwhile may hear
// of the loss first, and says the same.
func (l *Link) refused(err error) error {
	if errors.Is(err, nats.ErrReconnectBufExceeded) {
		return lost("%s (%v)", connectionLost, l.unreachable(err))
	}
	return lost("the NATS connection did not take the message: %v", err)
}

// connectionLost is why the streams end when the link loses its
// connection to the NATS server.
const connectionLost = "the connection to the NATS server was lost"

// disconnected is called by NATS when the connection is lost: the streams
// cannot survive it.
func (l *Link) disconnected(_ *nats.Conn, err error) {
	if l.isClosed() {
		return
	}
	why := connectionLost
	if err != nil {
		why += " (" + err.Error() + ")"
	}
	l.log.Warn("nats: disconnected; reconnecting", "url", l.url, "err", err)
	for _, s := range l.allStreams() {
		s.fail(lost("%s", why), false)
	}
	if l.local != nil {
		l.local.lost()
	}
}

// reconnected is called by NATS when the connection is back: the devices
// advertise at once and the directories ask for adverts.
func (l *Link) reconnected(nc *nats.Conn) {
	l.log.Info("nats: reconnected", "url", nc.ConnectedUrlRedacted())
	l.advertiseAll()
	l.nc.Publish(ScanSubject, nil)
}

func (l *Link) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *Link) allStreams() []*Stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Stream, 0, len(l.streams))
	for _, s := range l.streams {
		out = append(out, s)
	}
	return out
}

// tick advertises the devices and keeps the streams alive every interval,
// deciding of each stream by its own peer's messages: a mark sent to the
// link's own inbox at each tick tells how far the delivery of the inbox
// has come, however long it is behind. It exits when the link closes.
func (l *Link) tick() {
	t := time.NewTicker(l.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			l.advertiseAll()
			caught := l.caughtUp()
			l.mark(now)
			for _, s := range l.allStreams() {
				s.keepalive(now, caught)
			}
		}
	}
}

// advertiseAll publishes the advert of every device on the air.
func (l *Link) advertiseAll() {
	l.mu.Lock()
	lns := make([]*Listener, 0, len(l.listeners))
	for _, ln := range l.listeners {
		lns = append(lns, ln)
	}
	l.mu.Unlock()
	for _, ln := range lns {
		ln.advertise("")
	}
}

// forget drops a stream that ended.
func (l *Link) forget(s *Stream) {
	l.mu.Lock()
	if l.streams[s.id] == s {
		delete(l.streams, s.id)
		l.nstreams.Store(int64(len(l.streams)))
	}
	l.mu.Unlock()
}

// ErrNotOnAir is a device no program serves on the air.
var ErrNotOnAir = errors.New("is not on the air")

// ErrRefused is a stream a device's program refused.
var ErrRefused = errors.New("the device's program refused the stream")

// dialMsg asks a device for a stream, or (Probe) only whether it is served.
type dialMsg struct {
	Program string `json:"program,omitempty"` // the central's: its inbox takes the stream's messages
	Stream  uint64 `json:"stream,omitempty"`  // the central's id of the stream
	Every   int64  `json:"every,omitempty"`   // the central's keepalive interval, ms
	Probe   bool   `json:"probe,omitempty"`
}

// dialReply answers a dialMsg.
type dialReply struct {
	Program string `json:"program"`          // the device's: its inbox takes the stream's messages
	Stream  uint64 `json:"stream,omitempty"` // the device's id of the stream
	Every   int64  `json:"every,omitempty"`  // the device's keepalive interval, ms
	Host    string `json:"host,omitempty"`   // the computer and process of the device's program
	PID     int    `json:"pid,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Process names the process of a program: its computer's host name and
// its process id.
type Process struct {
	Host string
	PID  int
}

// Dial opens a stream to the device with a serial number, as a central in
// range of it. ctx bounds the dialing only.
func (l *Link) Dial(ctx context.Context, serial string) (*Stream, error) {
	if err := CheckSerial(serial); err != nil {
		return nil, fmt.Errorf("air: %w", err)
	}
	s := newStream(l, serial, false, l.opts.Interval)
	if err := l.add(s); err != nil {
		return nil, err
	}
	req, _ := json.Marshal(dialMsg{Program: l.id, Stream: s.id, Every: l.opts.Interval.Milliseconds()})
	msg, err := l.nc.RequestWithContext(ctx, DialSubject(serial), req)
	var rep dialReply
	if err == nil {
		if jerr := json.Unmarshal(msg.Data, &rep); jerr != nil {
			err = fmt.Errorf("a malformed answer: %v", jerr)
		} else if rep.Error != "" {
			err = fmt.Errorf("%w: %s", ErrRefused, rep.Error)
		} else if !token(rep.Program) || rep.Stream == 0 {
			err = fmt.Errorf("an answer with program %q and stream %d", rep.Program, rep.Stream)
		} else if rep.Every < 1 || rep.Every > maxEvery.Milliseconds() {
			err = fmt.Errorf("an answer with keepalives every %d ms", rep.Every)
		}
	}
	if errors.Is(err, nats.ErrNoResponders) {
		err = ErrNotOnAir
	}
	if err != nil {
		err = l.unreachable(err)
		s.end()
		if errors.Is(err, ErrNotOnAir) { // its words follow the device's name, as ErrOnAir's do
			return nil, fmt.Errorf("air: device %s %w", serial, err)
		}
		return nil, fmt.Errorf("air: device %s: %w", serial, err)
	}
	s.connect(rep.Program, rep.Stream)
	s.mu.Lock()
	s.every, s.heard = time.Duration(rep.Every)*time.Millisecond, time.Now()
	s.process = Process{Host: rep.Host, PID: rep.PID}
	s.mu.Unlock()
	return s, nil
}

// add registers a stream with the link, and gives it its id.
func (l *Link) add(s *Stream) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("air: %w", ErrClosed)
	}
	l.lastID++
	s.id = l.lastID
	l.streams[s.id] = s
	l.nstreams.Store(int64(len(l.streams)))
	l.mu.Unlock()
	l.send.grant() // the link's bound may have grown
	return nil
}

// ErrClosed is a link that was closed.
var ErrClosed = errors.New("the radio link is closed")

// Close takes the program's devices off the air (their adverts say
// goodbye), ends its streams and directories, and closes the NATS
// connection; a server embedded here stops, and the other programs on the
// computer take over.
func (l *Link) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	lns := make([]*Listener, 0, len(l.listeners))
	for _, ln := range l.listeners {
		lns = append(lns, ln)
	}
	dirs := make([]*Directory, 0, len(l.dirs))
	for d := range l.dirs {
		dirs = append(dirs, d)
	}
	l.mu.Unlock()
	close(l.stop)
	for _, ln := range lns {
		ln.Leave("its program stopped")
	}
	for _, d := range dirs {
		d.Close()
	}
	for _, s := range l.allStreams() {
		s.Close()
	}
	l.send.close()
	l.flush()
	l.closeAdverts()
	l.nc.Close()
	l.wg.Wait()
	l.taskMu.Lock()
	l.tasksDone = true
	l.taskMu.Unlock()
	l.runTasks() // what the streams left when they closed
	if l.local != nil {
		l.local.shutdown()
	}
	return nil
}

// flush waits, for a bounded time, until the server has what was sent; a
// link that is not connected does not wait.
func (l *Link) flush() {
	if l.nc.IsConnected() {
		l.nc.FlushTimeout(flushTimeout)
	}
}

// flushTimeout bounds a flush.
const flushTimeout = 5 * time.Second

// Redact replaces the credentials in a list of URLs with ***, for
// messages and help texts: whatever comes before an @ back to the scheme's :// (or the
// comma before), whether the URLs parse or not.
func Redact(urls string) string {
	var b strings.Builder
	for {
		at := strings.Index(urls, "@")
		if at < 0 {
			b.WriteString(urls)
			return b.String()
		}
		head := urls[:at]
		start := strings.LastIndex(head, ",") + 1
		if i := strings.LastIndex(head, "://"); i >= 0 {
			start = i + 3
		}
		b.WriteString(head[:start])
		b.WriteString("***@")
		urls = urls[at+1:]
	}
}

// Stats returns the messages and bytes the link has sent and received
// over NATS, of every kind: stream data and keepalives, adverts, dials,
// on both its connections when it has the adverts' one (advertConn);
// Reconnects counts those of the first.
func (l *Link) Stats() nats.Statistics {
	s := l.nc.Stats()
	if adv, _ := l.advertConn(false); adv != l.nc {
		a := adv.Stats()
		s.InMsgs, s.OutMsgs, s.InBytes, s.OutBytes = s.InMsgs+a.InMsgs, s.OutMsgs+a.OutMsgs, s.InBytes+a.InBytes, s.OutBytes+a.OutBytes
	}
	return s
}
