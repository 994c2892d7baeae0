package host

import (
	"errors"
	"time"
)

// Setting is one entry of a protocol's configuration table: a daemon
// offers it to its operator as the flag --KEY and as KEY in a
// configuration file, so that a protocol declares its knobs once and no
// daemon names them (deploy.Extension carries the table to the daemons).
type Setting struct {
	// Key is the flag's name and the configuration file's key, prefixed
	// with the protocol's name (tapestry-beacon).
	Key string
	// Usage is the flag's help: one sentence on what the value changes.
	Usage string
	// Value points into the protocol's Config: a *bool, *int, *string or
	// *time.Duration, or a value with String and Set (a flag.Value) for
	// a value written in a form of its own.
	Value any
	// Check, if not nil, reports a value that cannot work, in words that
	// follow the flag and its value ("want a positive duration").
	Check func() error
}

// Positive is a Check for a duration that must be above zero.
func Positive(d *time.Duration) func() error {
	return func() error {
		if *d <= 0 {
			return errors.New("want a positive duration")
		}
		return nil
	}
}
