package d2fs

import (
	"errors"
	"fmt"
	"testing"

	"triad/internal/fault"
)

// TestErrorsAreFaults: D2-FS's block errors are refinements of the one
// error vocabulary (issue 45): wrapped as a Blocks returns them, each is
// still itself and its fault, and carries that fault's code.
func TestErrorsAreFaults(t *testing.T) {
	for _, c := range []struct {
		err, fault error
		code       fault.Code
	}{
		{ErrNotFound, fault.ErrNotFound, fault.CodeNotFound},
		{ErrCorrupt, fault.ErrCorrupt, fault.CodeCorrupt},
		{ErrConflict, fault.ErrBadRequest, fault.CodeBadRequest},
	} {
		wrapped := fmt.Errorf("%w: key k", c.err)
		if !errors.Is(wrapped, c.err) || !errors.Is(wrapped, c.fault) || fault.CodeOf(wrapped) != c.code {
			t.Errorf("%v: is itself %v, is %v %v, code %v; want true, true, %v", c.err, errors.Is(wrapped, c.err), c.fault, errors.Is(wrapped, c.fault), fault.CodeOf(wrapped), c.code)
		}
	}
}
