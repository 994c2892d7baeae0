package wire

import "triad/internal/fault"

// Error is a failure reply to a request, carrying a code of
// internal/fault's vocabulary (testdata/errcodes.txt is its append-only
// registry, schema.proto states the same numbers). Text is the replying node's
// description; Code is what a caller acts on: errors.Is(reply,
// fault.ErrNotFound) holds for a reply of code fault.CodeNotFound, and
// likewise for every code.
//
//wire:msg 3 node
type Error struct {
	Code fault.Code `wire:"1"`
	Text string     `wire:"2"`
}

// Error makes *Error usable as a Go error.
func (e *Error) Error() string { return e.Text }

// Is matches the sentinel of the reply's code.
func (e *Error) Is(target error) bool { return e.Code.Matches(target) }

// FaultCode makes a reply a fault.Coded error.
func (e *Error) FaultCode() fault.Code { return e.Code }
