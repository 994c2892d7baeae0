package wire

import (
	"errors"
	"fmt"
)

// ErrCode classifies an Error reply. It is the one error vocabulary of the
// protocols: every code has a name (String), a fixed number that is never
// reused (testdata/errcodes.txt is the append-only registry, schema.proto
// states the same numbers) and a sentinel error (Err), so that a caller
// tests errors.Is(err, wire.ErrNotFound) alike for an error made locally
// and for an error reply from another node. Zero means no error.
type ErrCode uint32

// Error codes.
const (
	ErrCodeInternal    ErrCode = 1  // anything without a better code
	ErrCodeNoVnode     ErrCode = 2  // the destination ID is not hosted here
	ErrCodeBadRequest  ErrCode = 3  // a field failed validation
	ErrCodeNoRoute     ErrCode = 4  // a lookup ran out of live next hops
	ErrCodeBusy        ErrCode = 5  // a bounded queue is full; try later ("deferred")
	ErrCodeNotFound    ErrCode = 6  // no such block
	ErrCodeTooLarge    ErrCode = 7  // the block exceeds the size limit
	ErrCodeFull        ErrCode = 8  // the node's disk is full
	ErrCodeCorrupt     ErrCode = 9  // the stored copy is damaged (and now quarantined)
	ErrCodeUnavailable ErrCode = 10 // too few live hosts to store or fetch the block
)

// Sentinel errors, one per code. errors.Is matches each against an error
// that wraps it and against an *Error reply of its code.
var (
	ErrInternal    error = &codeError{ErrCodeInternal, "wire: internal error"}
	ErrNoVnode     error = &codeError{ErrCodeNoVnode, "wire: no such vnode"}
	ErrBadRequest  error = &codeError{ErrCodeBadRequest, "wire: bad request"}
	ErrNoRoute     error = &codeError{ErrCodeNoRoute, "wire: no route"}
	ErrBusy        error = &codeError{ErrCodeBusy, "wire: busy, try later"}
	ErrNotFound    error = &codeError{ErrCodeNotFound, "wire: not found"}
	ErrTooLarge    error = &codeError{ErrCodeTooLarge, "wire: too large"} // also a frame over its limit
	ErrFull        error = &codeError{ErrCodeFull, "wire: disk full"}
	ErrCorrupt     error = &codeError{ErrCodeCorrupt, "wire: stored copy damaged"}
	ErrUnavailable error = &codeError{ErrCodeUnavailable, "wire: too few live hosts"}
)

// errCodes lists every code with its name and sentinel, in number order.
var errCodes = [...]struct {
	code ErrCode
	name string
	err  error
}{
	{ErrCodeInternal, "internal", ErrInternal},
	{ErrCodeNoVnode, "no-vnode", ErrNoVnode},
	{ErrCodeBadRequest, "bad-request", ErrBadRequest},
	{ErrCodeNoRoute, "no-route", ErrNoRoute},
	{ErrCodeBusy, "busy", ErrBusy},
	{ErrCodeNotFound, "not-found", ErrNotFound},
	{ErrCodeTooLarge, "too-large", ErrTooLarge},
	{ErrCodeFull, "full", ErrFull},
	{ErrCodeCorrupt, "corrupt", ErrCorrupt},
	{ErrCodeUnavailable, "unavailable", ErrUnavailable},
}

// String names the code ("not-found", "busy", ...), for logs and errors.
func (c ErrCode) String() string {
	for _, e := range errCodes {
		if e.code == c {
			return e.name
		}
	}
	return fmt.Sprintf("ErrCode(%d)", uint32(c))
}

// Err is the sentinel error of c, or nil for a code this build does not
// know (a newer peer's).
func (c ErrCode) Err() error {
	for _, e := range errCodes {
		if e.code == c {
			return e.err
		}
	}
	return nil
}

// CodeOf is the code that describes err: that of the first sentinel or
// *Error found walking err's tree of wrapped errors, ErrCodeInternal if
// there is none, and zero for a nil err.
func CodeOf(err error) ErrCode {
	if err == nil {
		return 0
	}
	var c coded
	if errors.As(err, &c) {
		return c.errCode()
	}
	return ErrCodeInternal
}

// coded is an error that carries a code: a sentinel or an *Error.
type coded interface {
	error
	errCode() ErrCode
}

// codeError is a code's sentinel; a distinct type so that no caller can
// change one.
type codeError struct {
	code ErrCode
	text string
}

func (e *codeError) Error() string    { return e.text }
func (e *codeError) errCode() ErrCode { return e.code }

// Error is a failure reply to a request. Text is the replying node's
// description; Code is what a caller acts on.
type Error struct {
	Code ErrCode
	Text string
}

// Error makes *Error usable as a Go error.
func (e *Error) Error() string { return e.Text }

// Is makes errors.Is(reply, wire.ErrNotFound) hold for a reply of code
// ErrCodeNotFound, and likewise for every code.
func (e *Error) Is(target error) bool {
	c, ok := target.(*codeError)
	return ok && c.code == e.Code
}

func (e *Error) errCode() ErrCode { return e.Code }
