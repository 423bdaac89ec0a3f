package debug

import (
	"testing"

	"senseboard/nvm"
	"senseboard/nvm/nvmtest"
	"senseboard/profile"
)

// FuzzState: debug.json with any contents (under a valid checksum) either
// loads settings that obey the rules a client's writes obey, and that are
// read back the same after they are written, or fails with a
// *nvm.CorruptError naming the file.
func FuzzState(f *testing.F) {
	p := profile.Default()
	p.Debug.Log.Enabled = false
	open := func(store *nvm.Store) (*nvm.Var[persisted], error) {
		pr, err := New(store, nil, p)
		if err != nil {
			return nil, err
		}
		return pr.cfg, nil
	}
	nvmtest.FuzzVar(f, configFile, open, func(s persisted) error { return s.check() },
		[]byte(`{"SystemMessages":true,"DebugMessages":false,"MinimalLevel":2}`),
		[]byte(`{"MinimalLevel":9}`),
		[]byte(`{"SystemMessages":1}`),
		[]byte(`null`),
		[]byte(`{}{}`))
}
