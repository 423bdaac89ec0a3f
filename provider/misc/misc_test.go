package misc_test

import (
	"testing"

	"senseboard"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func TestManufacturingIsForbidden(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	for _, op := range []resource.Op{resource.Get, resource.Put, resource.Post, resource.Delete} {
		for _, p := range []string{"/Misc/Manufacturing", "/misc/manufacturing/Calibration/Data"} {
			d.Expect(403, op, p)
		}
	}
	if s := d.Subscribe("/Misc/Manufacturing"); s.Env.Status != 403 {
		t.Errorf("SUBSCRIBE: %d", s.Env.Status)
	}
	if s := d.Subscribe("/Misc/Manufacturing/Subscription"); s.Env.Status != 403 {
		t.Errorf("POST .../Subscription: %d", s.Env.Status)
	}
}
