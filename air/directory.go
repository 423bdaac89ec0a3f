package air

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Directory keeps the devices on the air as their adverts tell: a device
// is present from its first advert until it says goodbye or its adverts
// stop for Missed of its intervals. Its program asks every device to
// advertise when it starts and whenever its connection comes back.
type Directory struct {
	l   *Link
	sub *nats.Subscription

	mu      sync.Mutex
	present map[string]*entry // by serial
	left    map[string]string // why a device left, by serial
}

type entry struct {
	advert Advert
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

// Watch starts a directory of the devices on the air.
func (l *Link) Watch() (*Directory, error) {
	d := &Directory{l: l, present: map[string]*entry{}, left: map[string]string{}}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("air: %w", ErrClosed)
	}
	l.dirs[d] = struct{}{}
	l.mu.Unlock()
	sub, err := l.nc.Subscribe(AdvertSubjects, d.advert)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("air: %w", err)
	}
	sub.SetPendingLimits(l.opts.PendingMessages, -1)
	d.sub = sub
	l.nc.Publish(ScanSubject, nil)
	return d, nil
}

// advert takes one advert.
func (d *Directory) advert(msg *nats.Msg) {
	a, err := ParseAdvert(msg.Subject, msg.Data)
	if err != nil {
		d.l.log.Warn("advert", "err", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.Gone != "" {
		if e := d.present[a.Serial]; e == nil || e.advert.Program == a.Program {
			delete(d.present, a.Serial)
			d.left[a.Serial] = "it went off the air: " + a.Gone
		}
		return
	}
	d.present[a.Serial] = &entry{advert: a, heard: time.Now()}
	delete(d.left, a.Serial)
}

// Peripherals returns the devices on the air now, by serial number. Those
// whose adverts stopped leave the directory here, and Why tells why.
func (d *Directory) Peripherals() []Peripheral {
	now := time.Now()
	connected := d.l.Connected()
	backlog, _, _ := d.sub.Pending() // adverts that wait to be taken: expire nothing yet
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
