package gsp_test

import (
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/api"
	"senseboard/content"
	"senseboard/gsp/gspwire"
	"senseboard/internal/deforder"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// TestGetLayoutsFollowDefinitions holds the binary form of every record
// the device answers a GET with, or notifies on a subscription to a path
// without parameters, against its definition: content.Append encodes such
// records field by field in the order of their Go types, which must be the
// order the definition lists its properties (a field may be left out, as
// optional properties are), down to the records they hold. The streams of
// paths with parameters, whose layouts are the firmware's own, are
// content's TestLayoutsFollowDefinitions.
func TestGetLayoutsFollowDefinitions(t *testing.T) {
	p := profile.Default()
	p.Modules = profile.Modules{HRS: true, NUS: true, Heap: true, GSP: true, Logbook: true}
	p.Debug.Log.Enabled = true
	d := senseboardtest.New(t, senseboard.Config{Profile: p})
	set, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range set.Resources() {
		if strings.Contains(r.Path, "{") {
			continue
		}
		for _, notification := range []bool{false, true} {
			var c any
			if !notification && r.Ops[resource.Get] != nil {
				if env := d.Do(resource.Get, r.Path); env.Status.OK() {
					c = env.Content
				}
			}
			if notification && r.Ops[resource.Subscribe] != nil {
				sub := d.Subscribe(r.Path)
				if !sub.Env.Status.OK() {
					continue
				}
				got := sub.Contents()
				if len(got) == 0 {
					d.Advance(3 * time.Second)
					got = sub.Contents()
				}
				if len(got) > 0 {
					c = got[0]
				}
			}
			if _, scalar := c.(resource.Value); scalar {
				continue
			}
			v := reflect.ValueOf(c)
			for v.Kind() == reflect.Pointer && !v.IsNil() {
				v = v.Elem()
			}
			if v.Kind() != reflect.Struct {
				continue // no content, or a scalar
			}
			def, err := deforder.Response(r.Path, notification)
			if err != nil || def == "" {
				t.Errorf("%s (notification %v): a %T, and no definition of a record: %v", r.Path, notification, c, err)
				continue
			}
			checkOrder(t, r.Path, def, v)
			checked++
		}
	}
	if checked < 25 {
		t.Errorf("%d records checked; the device answers more than 25", checked)
	}
}

// checkOrder checks that the fields of the struct v, in their order, are
// properties of the definition def in its order, and so on for the
// records they hold.
func checkOrder(t *testing.T, where, def string, v reflect.Value) {
	t.Helper()
	props, file, err := deforder.Of(def)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if len(props) == 0 {
		return // not a record: an array of its own form, such as EnumPair's [value, name]
	}
	names := deforder.Names(props)
	last := -1
	for i := range v.NumField() {
		f := v.Type().Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		at := slices.Index(names, tag)
		switch {
		case at < 0:
			t.Errorf("%s: %s has a field %s that %s's %s does not define (%v)", where, v.Type(), tag, file, def, names)
			continue
		case at < last:
			t.Errorf("%s: %s has %s after %s; %s's %s lists %v", where, v.Type(), tag, names[last], file, def, names)
		}
		last = at
		if ref := props[at].Ref; ref != "" {
			fv := v.Field(i)
			for fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface {
				if fv.IsNil() {
					break
				}
				fv = fv.Elem()
			}
			if (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Array) && fv.Len() > 0 {
				fv = fv.Index(0)
			}
			if fv.Kind() == reflect.Struct {
				checkOrder(t, where+"."+tag, ref, fv)
			}
		}
	}
}

// TestInfoCaptures: the device's capability and configuration records go
// over GSP as the bytes a current sensor sent Movesense Commander for the
// same values (src/lib/gsp/layouts.hardware.test.ts). The sensor's
// gyroscope offers a 125 dps range beside the four its family's reference
// lists, which senseboard's does not: the Gyro and IMU captures are
// compared without it (a count of 4, not 5, and no 7d 00).
func TestInfoCaptures(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	p := connect(t, d, gspwire.DefaultMTU)
	for i, tc := range []struct{ path, hex string }{
		{"/Meas/Acc/Info", "08 0d 00 1a 00 34 00 68 00 d0 00 a0 01 41 03 82 06 04 02 04 08 10"},
		{"/Meas/Gyro/Info", "08 0d 00 1a 00 34 00 68 00 d0 00 a0 01 41 03 82 06 04 f5 00 f4 01 e8 03 d0 07"},
		{"/Meas/Magn/Info", "08 0d 00 1a 00 34 00 68 00 d0 00 a0 01 41 03 82 06 01 88 13"},
		{"/Meas/IMU/Info", "08 0d 00 1a 00 34 00 68 00 d0 00 a0 01 41 03 82 06 04 02 04 08 10 04 f5 00 f4 01 e8 03 d0 07 01 88 13"},
		{"/Meas/ECG/Info", "07 7d 00 80 00 c8 00 fa 00 00 01 f4 01 00 02 10 00 03 28 00 64 00 96 00 01 00 00 00 3f"},
		{"/Meas/ECG/Config", "28 00 00 00 00 3f"},
		{"/Meas/Temp/Info", "e9 00 00 00 8e 01 00 00 00 00 80 3f"},
		{"/Meas/HR/Info", "c8 00 d0 07 00 00 a0 40"},
	} {
		n := p.command(gspwire.Command{Code: gspwire.Get, Ref: uint8(i + 1), Path: tc.path})
		want, _ := hex.DecodeString(strings.ReplaceAll(tc.hex, " ", ""))
		if u16(n[2:]) != 200 || !slices.Equal(n[4:], want) {
			t.Errorf("GET %s: %d % x, the sensor sent %s", tc.path, u16(n[2:]), n[4:], tc.hex)
		}
	}
}

// TestTempOrderSetting: binary.tempOrder puts /Meas/Temp's Timestamp first
// (the default, the definition's order) or its Measurement first, over GSP
// and in the data logger's logs alike; the values are the device's either
// way.
func TestTempOrderSetting(t *testing.T) {
	var got [2][]byte
	for i, order := range []string{profile.TempTimestampFirst, profile.TempMeasurementFirst} {
		p := profile.Default()
		p.Binary.TempOrder = order
		d := senseboardtest.New(t, senseboard.Config{Profile: p})
		d.Advance(2 * time.Second)
		temp := d.Expect(200, resource.Get, "/Meas/Temp").Content.(*content.TempData)
		n := connect(t, d, gspwire.DefaultMTU).command(gspwire.Command{Code: gspwire.Get, Ref: 1, Path: "/Meas/Temp"})
		got[i] = n[4:]
		if len(got[i]) != 8 || u16(n[2:]) != 200 {
			t.Fatalf("%s: GET /Meas/Temp % x", order, n)
		}
		ts, k := u32(got[i]), f32(got[i][4:])
		if i == 1 {
			ts, k = u32(got[i][4:]), f32(got[i])
		}
		if ts != temp.Timestamp || k != temp.Measurement {
			t.Errorf("%s: % x reads %d ms, %v K; the device says %+v", order, got[i], ts, k, *temp)
		}
	}
	if !slices.Equal(got[0][:4], got[1][4:]) || !slices.Equal(got[0][4:], got[1][:4]) {
		t.Errorf("timestampFirst % x, measurementFirst % x: not the same fields swapped", got[0], got[1])
	}
}
