package timesvc_test

import (
	"testing"
	"time"

	"senseboard/provider/timesvc"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func TestTime(t *testing.T) {
	d := sbt.New(t, sbt.Config{})
	d.Advance(2500 * time.Millisecond)
	// never set: 1970-01-01 plus the time since reset, before 2015
	if v := d.Expect(200, resource.Get, "/Time").Content.(int64); v != 2_500_000 {
		t.Errorf("unset time %d", v)
	}
	det := d.Expect(200, resource.Get, "/Time/Detailed").Content.(*timesvc.DetailedTime)
	if *det != (timesvc.DetailedTime{UTCTime: 2_500_000, RelativeTime: 2500, TickRate: 1024, Accuracy: 20}) {
		t.Errorf("detailed %+v", det)
	}
	ticks := d.Subscribe("/Time")
	detailed := d.Subscribe("/Time/Detailed")
	if got := detailed.Contents(); len(got) != 1 || got[0].(*timesvc.TimeSync).RelativeTime != 2500 {
		t.Fatalf("detailed at subscription %+v", got)
	}
	const set = 1_700_000_000_000_000
	d.Advance(500 * time.Millisecond)
	d.Expect(200, resource.Put, "/Time", resource.Int64(set))
	d.Expect(400, resource.Put, "/Time", resource.Int64(-1))
	d.Expect(400, resource.Put, "/Time", resource.String("now"))
	if got := detailed.Contents(); len(got) != 1 || *got[0].(*timesvc.TimeSync) != (timesvc.TimeSync{UTCTime: set, RelativeTime: 3000}) {
		t.Fatalf("detailed after PUT %+v", got)
	}
	d.Advance(10 * time.Second)
	got := ticks.Contents()
	if len(got) != 10 {
		t.Fatalf("%d ticks in 10.5 s", len(got))
	}
	if got[0].(int64) != set+500_000 || got[9].(int64) != set+9_500_000 { // ticks at 3.5 s, 4.5 s, ...
		t.Errorf("ticks %v ... %v", got[0], got[9])
	}
	// lost on reset
	d.Reset()
	if v := d.Expect(200, resource.Get, "/Time").Content.(int64); v != 0 {
		t.Errorf("time after reset %d", v)
	}
}
