package air

import (
	"path/filepath"
	"sync"
	"testing"
)

// TestProgramsStartingAtOnceAgreeOnToken: programs that find no token
// file at once all end up with the one token that the file holds.
func TestProgramsStartingAtOnceAgreeOnToken(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "state", "nats.token")
	tokens := make([]string, 8)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Go(func() {
			var err error
			if tokens[i], err = loadToken(file); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	want, err := loadToken(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range tokens {
		if tok != want {
			t.Errorf("program %d has token %q; the file holds %q", i, tok, want)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".nats.token-*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}
