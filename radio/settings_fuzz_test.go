package radio_test

import (
	"testing"

	"senseboard/nvm/nvmtest"
	"senseboard/radio"
)

// FuzzSettings: ble.json with any contents (under a valid checksum) either
// loads settings that obey the interface's rules, and that are read back
// the same after they are written, or fails with a *nvm.CorruptError
// naming the file.
func FuzzSettings(f *testing.F) {
	nvmtest.FuzzVar(f, radio.StateFile, radio.OpenSettings, func(s radio.Settings) error { return s.Validate() },
		[]byte(`{"Adv":{"AdvPacket":null,"ScanRespPacket":null,"Interval":800,"Timeout":0},"PassKey":"123456","Policy":2,"RecoveryTime":0,"Bond":{"Address":"C0:53:42:00:00:01","Key":"00112233445566778899aabbccddeeff"}}`),
		[]byte(`{"Adv":{"Interval":1}}`),
		[]byte(`{"Adv":{"Interval":160,"AdvPacket":[2,1,6]}}`),
		[]byte(`{"PassKey":"12"}`),
		[]byte(`{"Bond":{"Address":"x","Key":"y"}}`))
}
