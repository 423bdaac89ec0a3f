package radio

import (
	"senseboard/clock"
	"senseboard/resource"
)

// Clock returns the peripheral's clock.
func (p *Peripheral) Clock() clock.Clock { return p.clk }

// RunEvent runs the connection events due now, as the event timer does.
func (c *Conn) RunEvent() { c.event() }

// AdmitContent offers a subscription's notification to the throughput
// model, as the connection's sink does.
func (c *Conn) AdmitContent(n resource.Notification) bool { return c.admitContent(n) }

// SlabUsed returns the bytes of notification data in the current slab.
func (c *Conn) SlabUsed() int {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return len(c.slab)
}
