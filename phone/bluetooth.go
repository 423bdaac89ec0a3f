package phone

import (
	"errors"
	"fmt"
	"time"

	"senseboard/client"
)

// ErrBluetoothOff is what the phone answers while its Bluetooth is off.
var ErrBluetoothOff = errors.New("the phone's Bluetooth is off")

// BluetoothOff turns the phone's Bluetooth off for d (the phoneoff fault,
// docs/faults.md): every connection it holds drops at once, its clients'
// subscriptions end, and it neither scans nor connects; then it turns
// Bluetooth back on, tells the devices it meets of the power cycle (a
// device stuck with it is reachable again), and connects as it does when
// a device advertises. on, when not nil, runs once Bluetooth is on again,
// or when the phone closes first. It fails while Bluetooth is off
// already.
func (ph *Phone) BluetoothOff(d time.Duration, on func()) error {
	ph.mu.Lock()
	if ph.closed {
		ph.mu.Unlock()
		return ErrClosed
	}
	if ph.btOff != nil {
		ph.mu.Unlock()
		return fmt.Errorf("%w already", ErrBluetoothOff)
	}
	done := make(chan struct{})
	ph.btOff = done
	devs := ph.devices()
	ph.wg.Go(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ph.stopBT:
		}
		ph.central.PowerCycle()
		ph.mu.Lock()
		ph.btOff = nil
		ph.mu.Unlock()
		close(done)
		ph.cfg.Log.Info("Bluetooth on")
		for _, dev := range ph.Devices() {
			if p, err := ph.device(dev.Serial); err == nil {
				p.setNote("Bluetooth is on again")
			}
		}
		if on != nil {
			on()
		}
	})
	ph.mu.Unlock()
	ph.cfg.Log.Info("Bluetooth off", "for", d)
	for _, dev := range devs {
		dev.mu.Lock()
		dev.adv.Advertising = false // seen again once Bluetooth is on
		dev.note = "the phone's Bluetooth is off"
		dev.mu.Unlock()
		if l := dev.current(); l != nil {
			l.CloseFor(fmt.Errorf("%w: the connection dropped: %w", ErrBluetoothOff, client.ErrClosed)) // the link names the device
		}
		dev.publish()
	}
	return nil
}

// bluetoothOff reports whether the phone's Bluetooth is off; ph.mu is not
// held.
func (ph *Phone) bluetoothOff() bool {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.btOff != nil
}
