package d2client

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"triad/internal/d2"
	"triad/internal/fault"
	"triad/internal/wire"
)

// TestSpace: Space asks one node (D2GetSpace) and tells a node without D2
// (ErrNoD2); Room asks the nodes in turn, past one that is down.
func TestSpace(t *testing.T) {
	space := &wire.D2Space{Joined: true, Capacity: 1 << 30, Usage: 1 << 20, Replicas: 3, Distrusted: []string{"127.0.0.1:9"}}
	good := startFake(t, func(m wire.Msg) (wire.Msg, error) {
		if _, ok := m.(*wire.D2GetSpace); !ok {
			return nil, fault.ErrBadRequest
		}
		return space, nil
	})
	noD2 := startFake(t, func(m wire.Msg) (wire.Msg, error) {
		return nil, &wire.Error{Code: fault.CodeNoProtocol, Text: "no protocol for " + m.Type().String() + " at x"}
	})
	dead := startFake(t, nil)
	deadAddr := dead.addr()
	dead.stop()
	b := newBlocks(t, deadAddr, noD2.addr(), good.addr())
	ctx := context.Background()
	if s, err := b.Space(ctx, good.addr()); err != nil || !reflect.DeepEqual(s, *space) {
		t.Fatalf("space of a node: %+v, %v", s, err)
	}
	if _, err := b.Space(ctx, noD2.addr()); !errors.Is(err, ErrNoD2) {
		t.Fatalf("space of a node without D2: %v", err)
	}
	if _, err := b.Space(ctx, deadAddr); err == nil {
		t.Fatal("space of a dead node: no error")
	}
	r, err := b.Room(ctx)
	if err != nil || r.Node != good.addr() || r.Capacity != space.Capacity || r.Usage != space.Usage || r.Replicas != 3 {
		t.Fatalf("room: %+v, %v", r, err)
	}
}

// TestJoining: when no node serves a request and some answered that D2
// there is not on the ring yet (d2.ErrNotJoined), the error names them as
// still joining (a *JoiningError, ErrJoining), and is still ErrNoNode.
func TestJoining(t *testing.T) {
	joining := startFake(t, func(wire.Msg) (wire.Msg, error) { return nil, d2.ErrNotJoined })
	dead := startFake(t, nil)
	deadAddr := dead.addr()
	dead.stop()
	b := newBlocks(t, deadAddr, joining.addr())
	_, _, err := b.Latest(context.Background(), testKey("j", 0, 0), testKey("j", 0, 0))
	var je *JoiningError
	switch {
	case !errors.Is(err, ErrJoining) || !errors.Is(err, ErrNoNode) || !errors.As(err, &je):
		t.Fatalf("%v, want ErrJoining and ErrNoNode", err)
	case len(je.Addrs) != 1 || je.Addrs[0] != joining.addr():
		t.Fatalf("joining nodes %v, want [%s]", je.Addrs, joining.addr())
	case !strings.Contains(err.Error(), "D2 on "+joining.addr()+" is still joining the ring"):
		t.Fatalf("error %q does not name the joining node", err)
	}
}
