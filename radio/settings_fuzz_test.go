package radio_test

import (
	"errors"
	"os"
	"reflect"
	"testing"

	"senseboard/nvm"
	"senseboard/radio"
)

// FuzzSettings: ble.json with any contents (under a valid checksum) either
// loads settings that obey the interface's rules, and that are read back
// the same after they are written, or fails with a *nvm.CorruptError
// naming the file.
func FuzzSettings(f *testing.F) {
	f.Add([]byte(`{"Adv":{"AdvPacket":null,"ScanRespPacket":null,"Interval":800,"Timeout":0},"PassKey":"123456","Policy":2,"RecoveryTime":0,"Bond":{"Address":"C0:53:42:00:00:01","Key":"00112233445566778899aabbccddeeff"}}`))
	f.Add([]byte(`{"Adv":{"Interval":1}}`))
	f.Add([]byte(`{"Adv":{"Interval":160,"AdvPacket":[2,1,6]}}`))
	f.Add([]byte(`{"PassKey":"12"}`))
	f.Add([]byte(`{"Bond":{"Address":"x","Key":"y"}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		store, err := nvm.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		path := store.Path(radio.StateFile)
		if err := os.WriteFile(path, nvm.Encode(body), nvm.Perm); err != nil {
			t.Fatal(err)
		}
		st, err := radio.OpenSettings(store)
		if err != nil {
			var ce *nvm.CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("error %v is not a CorruptError naming %s", err, path)
			}
			return
		}
		got := st.Get()
		if err := got.Validate(); err != nil {
			t.Fatalf("loaded settings a client could not write: %+v: %v", got, err)
		}
		if err := st.Update(func(*radio.Settings) error { return nil }); err != nil {
			t.Fatal(err)
		}
		again, err := radio.OpenSettings(store)
		if err != nil || !reflect.DeepEqual(again.Get(), got) {
			t.Fatalf("written back and loaded again: %+v %v, want %+v", again.Get(), err, got)
		}
	})
}
