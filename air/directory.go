package air

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Directory keeps the devices of other programs on the air as their
// adverts tell: a device is present from its first advert until it says
// goodbye or its adverts stop for Missed of its intervals. Its program
// asks every device to advertise when it starts and whenever its
// connection comes back. The devices of its own link (Listen) are not in
// it: their program reaches them without the air.
type Directory struct {
	l   *Link
	nc  *nats.Conn // the adverts' connection (advertConn)
	sub *nats.Subscription

	mu      sync.Mutex
	present map[string]*entry // by serial
	left    map[string]string // why a device left, by serial
}

type entry struct {
	advert Advert
	raw    []byte // the advert as it came; its Scan is a part of it
	heard  time.Time
}

// Peripheral is a device on the air, as a central's directory lists it.
type Peripheral struct {
	Serial  string
	Program string // the id of the program that serves it
	// Scan is what a scan of the device saw at its latest advert (see
	// Advert.Scan), nil when its program did not say.
	Scan []byte
}

// Watch starts a directory of the devices of other programs on the air.
// The first one opens the link's connection for adverts (advertConn).
func (l *Link) Watch() (*Directory, error) {
	d := &Directory{l: l, present: map[string]*entry{}, left: map[string]string{}}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("air: %w", ErrClosed)
	}
	l.dirs[d] = struct{}{}
	l.mu.Unlock()
	nc, err := l.advertConn(true)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("air: %w", err)
	}
	d.nc = nc
	sub, err := nc.Subscribe(AdvertSubjects, d.advert)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("air: %w", err)
	}
	sub.SetPendingLimits(l.opts.PendingMessages, -1)
	d.sub = sub
	nc.Publish(ScanSubject, nil)
	return d, nil
}

// advert takes one advert. A device repeats its advert byte for byte
// while what a scan sees stays, every second: such an advert is only
// heard again, with nothing parsed and nothing allocated.
func (d *Directory) advert(msg *nats.Msg) {
	if d.l.ownAdvert(msg) || d.again(msg) {
		return
	}
	a, err := ParseAdvert(msg.Subject, msg.Data)
	if err != nil {
		d.l.log.Warn("advert", "err", err)
		return
	}
	if a.Program == d.l.id {
		return // one of its own program's, an advert before its latest
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.present[a.Serial]
	if a.Gone != "" {
		if e == nil || e.advert.Program == a.Program {
			delete(d.present, a.Serial)
			d.left[a.Serial] = "it went off the air: " + a.Gone
		}
		return
	}
	if e == nil {
		e = &entry{}
		d.present[a.Serial] = e
		delete(d.left, a.Serial)
	}
	// The scan's bytes are in the advert as they came: keep them once.
	// The advert is the message's own; nothing writes to it.
	if a.Scan != nil {
		if i := bytes.Index(msg.Data, a.Scan); i >= 0 {
			a.Scan = msg.Data[i : i+len(a.Scan) : i+len(a.Scan)]
		}
	}
	e.advert, e.raw, e.heard = a, msg.Data, time.Now()
}

// ownAdvert reports whether an advert is the latest one a device of this
// link sent, without parsing it.
func (l *Link) ownAdvert(msg *nats.Msg) bool {
	serial, ok := advertSerial(msg.Subject)
	if !ok {
		return false
	}
	l.mu.Lock()
	ln := l.listeners[serial]
	l.mu.Unlock()
	if ln == nil {
		return false
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return bytes.Equal(ln.advert, msg.Data)
}

// again hears a device again whose advert repeats its last one, and
// reports whether it did.
func (d *Directory) again(msg *nats.Msg) bool {
	serial, ok := advertSerial(msg.Subject)
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.present[serial] // a serial it lists came on this subject before
	if e == nil || !bytes.Equal(e.raw, msg.Data) {
		return false
	}
	e.heard = time.Now()
	return true
}

// Peripherals returns the devices on the air now, by serial number. Those
// whose adverts stopped leave the directory here, and Why tells why.
func (d *Directory) Peripherals() []Peripheral {
	now := time.Now()
	connected := d.l.Connected() && d.nc.IsConnected() // both the link's connections: the adverts come on the second
	backlog, _, _ := d.sub.Pending()                   // adverts that wait to be taken: expire nothing yet
	d.mu.Lock()
	out := make([]Peripheral, 0, len(d.present))
	for serial, e := range d.present {
		limit := time.Duration(d.l.opts.Missed) * e.advert.interval()
		if silent := now.Sub(e.heard); silent > limit && backlog == 0 {
			delete(d.present, serial)
			if connected {
				d.left[serial] = fmt.Sprintf("its adverts stopped (none for %v; it advertises every %v): its program or computer went away, or lost its NATS server", silent.Round(time.Millisecond), e.advert.interval())
			} else {
				d.left[serial] = "the NATS connection of this program is down (it reconnects on its own); the device is out of reach until then"
			}
			continue
		}
		out = append(out, Peripheral{Serial: serial, Program: e.advert.Program, Scan: e.advert.Scan})
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Serial < out[j].Serial })
	return out
}

// Scan returns what a scan of a device on the air saw at its latest
// advert, and false when the directory does not list it or its program
// did not say.
func (d *Directory) Scan(serial string) ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.present[serial]
	if e == nil || e.advert.Scan == nil {
		return nil, false
	}
	return e.advert.Scan, true
}

// Why says why a device left the directory, "" when it did not.
func (d *Directory) Why(serial string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.left[serial]
}

// Close stops the directory.
func (d *Directory) Close() error {
	if d.sub != nil {
		d.sub.Unsubscribe()
	}
	d.l.mu.Lock()
	delete(d.l.dirs, d)
	d.l.mu.Unlock()
	return nil
}
