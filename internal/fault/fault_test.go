package fault

import (
	"errors"
	"fmt"
	"testing"
)

// reply stands in for an error reply from another node (wire.Error).
type reply struct{ code Code }

func (r *reply) Error() string        { return "node says " + r.code.String() }
func (r *reply) FaultCode() Code      { return r.code }
func (r *reply) Is(target error) bool { return r.code.Matches(target) }

// TestEachCodeMatchesOnlyItself: a sentinel, wrapped or as a reply,
// matches its own code's sentinel and no other, and CodeOf reads it back.
func TestEachCodeMatchesOnlyItself(t *testing.T) {
	for _, c := range codes {
		if c.code.String() != c.name || c.code.Err() != c.err {
			t.Errorf("code %d: String %q, Err %v", c.code, c.code.String(), c.code.Err())
		}
		local := fmt.Errorf("context: %w", c.err)
		remote := fmt.Errorf("calling 127.0.0.1:4000: %w", &reply{c.code})
		for _, o := range codes {
			want := o.code == c.code
			if got := errors.Is(local, o.err); got != want {
				t.Errorf("errors.Is(local %s, %s) = %v", c.name, o.name, got)
			}
			if got := errors.Is(remote, o.err); got != want {
				t.Errorf("errors.Is(reply %s, %s) = %v", c.name, o.name, got)
			}
		}
		if CodeOf(local) != c.code || CodeOf(remote) != c.code {
			t.Errorf("%s: CodeOf local %s, remote %s", c.name, CodeOf(local), CodeOf(remote))
		}
	}
}

// TestRefinedSentinel: a refinement is its parent here (errors.Is, CodeOf)
// but a reply of the parent's code is not the refinement.
func TestRefinedSentinel(t *testing.T) {
	conflict := New(ErrBadRequest, "store: key holds other data")
	err := fmt.Errorf("put: %w", conflict)
	if !errors.Is(err, conflict) || !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrNotFound) {
		t.Error("a refinement does not match itself and its parent only")
	}
	if CodeOf(err) != CodeBadRequest {
		t.Errorf("CodeOf(refinement) = %s", CodeOf(err))
	}
	if errors.Is(&reply{CodeBadRequest}, conflict) {
		t.Error("a reply of the parent's code matches the refinement")
	}
	defer func() {
		if recover() == nil {
			t.Error("New on a plain error did not panic")
		}
	}()
	New(errors.New("plain"), "x")
}

func TestCodeOf(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, 0},
		{"plain", errors.New("boom"), CodeInternal},
		{"joined", errors.Join(errors.New("spool"), fmt.Errorf("x: %w", ErrBusy)), CodeBusy},
		{"first wins", fmt.Errorf("%w: %w", ErrNotFound, &reply{CodeCorrupt}), CodeNotFound},
		{"newer peer", &reply{999}, 999},
	} {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("%s: CodeOf = %s, want %s", c.name, got, c.want)
		}
	}
	if s := Code(999).String(); s != "Code(999)" {
		t.Errorf("unknown code prints %q", s)
	}
	if Code(999).Err() != nil || errors.Is(&reply{999}, ErrInternal) {
		t.Error("an unknown code matches a sentinel")
	}
}
