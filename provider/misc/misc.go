// Package misc provides /Misc/Manufacturing, the internal manufacturing
// interface, which refuses every operation on it and below it.
package misc

import (
	"senseboard/device"
	"senseboard/resource"
)

// Provider serves /Misc/Manufacturing.
type Provider struct{}

// Register installs the refusal for every operation, subscriptions included.
func (Provider) Register(d *device.Core) error {
	refuse := resource.HandlerFunc(func(*resource.Request) resource.Response {
		return resource.Errorf(resource.StatusForbidden, "/Misc/Manufacturing is the internal manufacturing interface; it is not open to clients")
	})
	for _, op := range []resource.Op{resource.Get, resource.Put, resource.Post, resource.Delete, resource.Subscribe} {
		d.Handle("/Misc/Manufacturing", op, refuse)
	}
	return nil
}
