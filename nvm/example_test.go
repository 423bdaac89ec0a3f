package nvm_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"senseboard/nvm"
)

// Settings are what a provider keeps in a JSON state file.
type Settings struct {
	Interval int `json:"Interval"`
}

// check holds the rules of the settings, the same for values loaded from
// the file and for values a client writes.
func (s *Settings) check() error {
	if s.Interval < 32 || s.Interval > 16384 {
		return fmt.Errorf("Interval %d: 32 to 16384", s.Interval)
	}
	return nil
}

func ExampleVar_Update() {
	dir, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(dir)
	store, err := nvm.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	v, err := nvm.OpenVar(store, "settings.json", Settings{Interval: 800}, (*Settings).check)
	if err != nil {
		log.Fatal(err) // names the file, says what is wrong and what to do
	}
	// A change is written durably, or not at all.
	err = v.Update(func(s *Settings) error {
		s.Interval = 160
		return nil
	})
	fmt.Println(v.Get().Interval, err)
	err = v.Update(func(s *Settings) error {
		s.Interval = 1
		return nil
	})
	fmt.Println(v.Get().Interval, err)
	err = v.Update(func(s *Settings) error {
		return errors.New("changed my mind")
	})
	fmt.Println(v.Get().Interval, err)
	// Output:
	// 160 <nil>
	// 160 Interval 1: 32 to 16384
	// 160 changed my mind
}
