package fault

import (
	"errors"
	"fmt"
)

// Code classifies an error. Zero means no error; a code this build does
// not know (a newer peer's) is kept as a number.
type Code uint32

// The codes. Numbers are never reused.
const (
	CodeInternal    Code = 1  // anything without a better code
	CodeNoVnode     Code = 2  // the destination ID is not hosted here
	CodeBadRequest  Code = 3  // a field failed validation
	CodeNoRoute     Code = 4  // a lookup ran out of live next hops
	CodeBusy        Code = 5  // a bounded queue or window is full; try later
	CodeNotFound    Code = 6  // no such block
	CodeTooLarge    Code = 7  // the block exceeds the size limit
	CodeFull        Code = 8  // the node's disk is full
	CodeCorrupt     Code = 9  // the stored copy is damaged (and now quarantined)
	CodeUnavailable Code = 10 // too few live hosts to store or fetch the block
	CodeNoProtocol  Code = 11 // the node runs no protocol for the message (started without it)
	CodeJoining     Code = 12 // the protocol there is still joining its ring; ask another node or later
)

// The sentinels, one per code. errors.Is matches each against an error
// that wraps it, a refinement of it (New) and a reply of its code.
var (
	ErrInternal    = sentinel(CodeInternal, "internal error")
	ErrNoVnode     = sentinel(CodeNoVnode, "no such vnode")
	ErrBadRequest  = sentinel(CodeBadRequest, "bad request")
	ErrNoRoute     = sentinel(CodeNoRoute, "no route")
	ErrBusy        = sentinel(CodeBusy, "busy, try later")
	ErrNotFound    = sentinel(CodeNotFound, "not found")
	ErrTooLarge    = sentinel(CodeTooLarge, "too large")
	ErrFull        = sentinel(CodeFull, "disk full")
	ErrCorrupt     = sentinel(CodeCorrupt, "stored copy damaged")
	ErrUnavailable = sentinel(CodeUnavailable, "too few live hosts")
	ErrNoProtocol  = sentinel(CodeNoProtocol, "no such protocol here")
	ErrJoining     = sentinel(CodeJoining, "not on the ring yet")
)

// codes lists every code with its name and sentinel, in number order.
var codes = [...]struct {
	code Code
	name string
	err  error
}{
	{CodeInternal, "internal", ErrInternal},
	{CodeNoVnode, "no-vnode", ErrNoVnode},
	{CodeBadRequest, "bad-request", ErrBadRequest},
	{CodeNoRoute, "no-route", ErrNoRoute},
	{CodeBusy, "busy", ErrBusy},
	{CodeNotFound, "not-found", ErrNotFound},
	{CodeTooLarge, "too-large", ErrTooLarge},
	{CodeFull, "full", ErrFull},
	{CodeCorrupt, "corrupt", ErrCorrupt},
	{CodeUnavailable, "unavailable", ErrUnavailable},
	{CodeNoProtocol, "no-protocol", ErrNoProtocol},
	{CodeJoining, "joining", ErrJoining},
}

// Codes lists every code this build knows, in number order.
func Codes() []Code {
	out := make([]Code, len(codes))
	for i, c := range codes {
		out[i] = c.code
	}
	return out
}

// String names the code ("not-found", "busy", ...), for logs and errors.
func (c Code) String() string {
	for _, e := range codes {
		if e.code == c {
			return e.name
		}
	}
	return fmt.Sprintf("Code(%d)", uint32(c))
}

// Err is the sentinel of c, or nil for a code this build does not know.
func (c Code) Err() error {
	for _, e := range codes {
		if e.code == c {
			return e.err
		}
	}
	return nil
}

// Matches reports whether target is c's sentinel: how an error reply of
// code c answers errors.Is.
func (c Code) Matches(target error) bool {
	s, ok := target.(*codeError)
	return ok && s.code == c
}

// Coded is an error that carries a code: a sentinel, a refinement of one,
// or a reply from another node.
type Coded interface {
	error
	FaultCode() Code
}

// CodeOf is the code that describes err: that of the first Coded error
// found walking err's tree of wrapped errors, CodeInternal if there is
// none, and zero for a nil err.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var c Coded
	if errors.As(err, &c) {
		return c.FaultCode()
	}
	return CodeInternal
}

// New makes a sentinel that refines parent (one of this package's
// sentinels): errors.Is holds for both, and it carries parent's code, so
// another node sees only the parent. text is its whole message.
func New(parent error, text string) error {
	p, ok := parent.(*codeError)
	if !ok {
		panic(fmt.Sprintf("fault.New: %v is not a fault sentinel", parent))
	}
	return &refined{parent: p, text: text}
}

// codeError is a code's sentinel; a distinct type so that no caller can
// change one.
type codeError struct {
	code Code
	text string
}

func sentinel(c Code, text string) error { return &codeError{c, text} }

func (e *codeError) Error() string   { return e.text }
func (e *codeError) FaultCode() Code { return e.code }

// refined is a sentinel made by New.
type refined struct {
	parent *codeError
	text   string
}

func (e *refined) Error() string   { return e.text }
func (e *refined) FaultCode() Code { return e.parent.code }
func (e *refined) Unwrap() error   { return e.parent }
