package wire

import (
	"errors"
	"fmt"
	"testing"
)

// TestErrCodes: every code survives encode and decode as an *Error that
// errors.Is matches against its own sentinel and no other, and CodeOf
// reads the code back from the reply and from a wrapped sentinel.
func TestErrCodes(t *testing.T) {
	for _, c := range errCodes {
		if c.code.String() != c.name || c.code.Err() != c.err {
			t.Errorf("code %d: String %q, Err %v", c.code, c.code.String(), c.code.Err())
		}
		in := Envelope{Kind: Reply, ReqID: 1, Msg: &Error{Code: c.code, Text: "node says " + c.name}}
		out, err := Decode(Encode(nil, in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		reply, ok := out.Msg.(*Error)
		if !ok || reply.Code != c.code || reply.Error() != "node says "+c.name {
			t.Fatalf("%s: decoded %+v", c.name, out.Msg)
		}
		remote := fmt.Errorf("calling 127.0.0.1:4000: %w", reply)
		local := fmt.Errorf("context: %w", c.err)
		for _, o := range errCodes {
			want := o.code == c.code
			if got := errors.Is(remote, o.err); got != want {
				t.Errorf("errors.Is(reply %s, %s) = %v", c.name, o.name, got)
			}
			if got := errors.Is(local, o.err); got != want {
				t.Errorf("errors.Is(local %s, %s) = %v", c.name, o.name, got)
			}
		}
		if got := CodeOf(remote); got != c.code {
			t.Errorf("CodeOf(reply %s) = %s", c.name, got)
		}
		if got := CodeOf(local); got != c.code {
			t.Errorf("CodeOf(local %s) = %s", c.name, got)
		}
	}
}

func TestCodeOf(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want ErrCode
	}{
		{"nil", nil, 0},
		{"plain", errors.New("boom"), ErrCodeInternal},
		{"codec", ErrMalformed, ErrCodeInternal},
		{"frame", fmt.Errorf("%w: 5 MiB", ErrTooLarge), ErrCodeTooLarge},
		{"joined", errors.Join(errors.New("spool"), fmt.Errorf("x: %w", ErrBusy)), ErrCodeBusy},
		{"first wins", fmt.Errorf("%w: %w", ErrNotFound, &Error{Code: ErrCodeCorrupt}), ErrCodeNotFound},
		{"newer peer", &Error{Code: 999}, 999},
	} {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("%s: CodeOf = %s, want %s", c.name, got, c.want)
		}
	}
	if s := ErrCode(999).String(); s != "ErrCode(999)" {
		t.Errorf("unknown code prints %q", s)
	}
	if ErrCode(999).Err() != nil || errors.Is(&Error{Code: 999}, ErrInternal) {
		t.Error("an unknown code matches a sentinel")
	}
}
