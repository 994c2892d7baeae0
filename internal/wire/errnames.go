package wire

import "triad/internal/fault"

// The vocabulary's old names in this package, while callers move to
// internal/fault (issue 28); each is the same value, not a second sentinel.
const (
	ErrCodeInternal    = fault.CodeInternal
	ErrCodeNoVnode     = fault.CodeNoVnode
	ErrCodeBadRequest  = fault.CodeBadRequest
	ErrCodeNoRoute     = fault.CodeNoRoute
	ErrCodeBusy        = fault.CodeBusy
	ErrCodeNotFound    = fault.CodeNotFound
	ErrCodeTooLarge    = fault.CodeTooLarge
	ErrCodeFull        = fault.CodeFull
	ErrCodeCorrupt     = fault.CodeCorrupt
	ErrCodeUnavailable = fault.CodeUnavailable
)

var (
	ErrInternal    = fault.ErrInternal
	ErrNoVnode     = fault.ErrNoVnode
	ErrBadRequest  = fault.ErrBadRequest
	ErrNoRoute     = fault.ErrNoRoute
	ErrBusy        = fault.ErrBusy
	ErrNotFound    = fault.ErrNotFound
	ErrTooLarge    = fault.ErrTooLarge
	ErrFull        = fault.ErrFull
	ErrCorrupt     = fault.ErrCorrupt
	ErrUnavailable = fault.ErrUnavailable
	CodeOf         = fault.CodeOf
)
