package wire

import (
	"errors"
	"fmt"
	"testing"

	"triad/internal/fault"
)

// TestErrCodes: every code survives encode and decode as an *Error that
// errors.Is matches against its own sentinel and no other, and CodeOf
// reads the code back from the reply and from a wrapped sentinel.
func TestErrCodes(t *testing.T) {
	for _, code := range fault.Codes() {
		c := struct {
			code fault.Code
			name string
			err  error
		}{code, code.String(), code.Err()}
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
		for _, o := range fault.Codes() {
			want := o == c.code
			if got := errors.Is(remote, o.Err()); got != want {
				t.Errorf("errors.Is(reply %s, %s) = %v", c.name, o, got)
			}
			if got := errors.Is(local, o.Err()); got != want {
				t.Errorf("errors.Is(local %s, %s) = %v", c.name, o, got)
			}
		}
		if got := fault.CodeOf(remote); got != c.code {
			t.Errorf("CodeOf(reply %s) = %s", c.name, got)
		}
		if got := fault.CodeOf(local); got != c.code {
			t.Errorf("CodeOf(local %s) = %s", c.name, got)
		}
	}
}

// TestCodeOfCodecErrors: the codec's own errors carry no code of their
// own, and a frame over its limit is too large.
func TestCodeOfCodecErrors(t *testing.T) {
	if got := fault.CodeOf(ErrMalformed); got != fault.CodeInternal {
		t.Errorf("CodeOf(ErrMalformed) = %s", got)
	}
	if got := fault.CodeOf(fmt.Errorf("%w: 5 MiB", fault.ErrTooLarge)); got != fault.CodeTooLarge {
		t.Errorf("CodeOf(frame too large) = %s", got)
	}
}
