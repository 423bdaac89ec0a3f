package radio

import "senseboard/resource"

// RunEvent runs the connection events due now, as the event timer does.
func (c *Conn) RunEvent() { c.event() }

// AdmitContent offers a subscription's notification to the throughput
// model, as the connection's sink does.
func (c *Conn) AdmitContent(n resource.Notification) bool { return c.admitContent(n) }
