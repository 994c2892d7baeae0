package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"triad/internal/id"
	"triad/internal/pki"
	"triad/internal/wire"
)

// Target is the node a command talks to: its address, and the directory
// of the certificate bundle (from triad ca issue) to talk to it over
// mutual TLS with; empty for plain TCP.
type Target struct {
	Addr   string
	TLSDir string
}

// Options are the client's options for t: TLS with the bundle TLSDir
// names, if any.
func (t Target) Options() (Options, error) {
	if t.TLSDir == "" {
		return Options{}, nil
	}
	b, err := pki.LoadBundle(t.TLSDir)
	return Options{TLS: b}, err
}

// Cluster connects to the ring through t (DialClusterOptions).
func (t Target) Cluster(ctx context.Context) (*Cluster, error) {
	opt, err := t.Options()
	if err != nil {
		return nil, err
	}
	c, err := DialClusterOptions(ctx, opt, t.Addr)
	return c, TLSHint(t.Addr, t.TLSDir, err)
}

// Dial connects to the node t (DialOptions).
func (t Target) Dial(ctx context.Context) (*Client, error) {
	opt, err := t.Options()
	if err != nil {
		return nil, err
	}
	c, err := DialOptions(ctx, t.Addr, opt)
	return c, TLSHint(t.Addr, t.TLSDir, err)
}

// Call sends one request to the node t (Call).
func (t Target) Call(ctx context.Context, m wire.Msg) (wire.Msg, error) {
	opt, err := t.Options()
	if err != nil {
		return nil, err
	}
	resp, err := Call(ctx, t.Addr, m, opt)
	return resp, TLSHint(t.Addr, t.TLSDir, err)
}

// Ask sends one request to the node t and returns its reply as an R, or
// an error that says what the node answered instead.
func Ask[R wire.Msg](ctx context.Context, t Target, m wire.Msg) (R, error) {
	var r R
	reply, err := t.Call(ctx, m)
	if err != nil {
		return r, err
	}
	return As[R](t.Addr, reply)
}

// As is reply as an R, or an error that says what the node at addr
// answered instead.
func As[R wire.Msg](addr string, reply wire.Msg) (R, error) {
	r, ok := reply.(R)
	if !ok {
		return r, fmt.Errorf("%s answered %T", addr, reply)
	}
	return r, nil
}

// TLSHint explains a failure to talk to the node at addr without TLS
// (tlsDir empty) when the node speaks TLS: plain frames sent to a TLS
// listener end in a closed connection ("EOF"), which says nothing of the
// cause. It offers a TLS handshake (trusting no certificate, sending
// none) and, if the node answers it, says what to set.
func TLSHint(addr, tlsDir string, err error) error {
	if err == nil || tlsDir != "" || !speaksTLS(addr) {
		return err
	}
	return fmt.Errorf("%w\n  the node at %s speaks TLS: set TRIAD_TLS or --tls to a certificate bundle from 'triad ca issue' (triad up prints the one it made)", err, addr)
}

// speaksTLS reports whether the listener at addr answers a TLS handshake.
func speaksTLS(addr string) bool {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	tc := tls.Client(nc, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) // a probe: nothing is sent over it
	err = tc.Handshake()
	var alert tls.AlertError
	return err == nil || errors.As(err, &alert)
}

// ParseKey reads a block's key: all its hex digits, with or without 0x. A
// block's key is a content hash, so every digit matters: id.Parse would
// take a short string as the leading digits of a ring position and pad it
// with zeros, which names another key (and answers "not found").
func ParseKey(s string) (id.ID, error) {
	digits := strings.TrimPrefix(strings.ToLower(s), "0x")
	if len(digits) != 2*id.Bytes {
		return id.ID{}, fmt.Errorf("bad key %q: want all %d hex digits of the key (triad put prints it; a short form such as stat's 8-digit one names no block)", s, 2*id.Bytes)
	}
	key, err := id.Parse(digits, id.Bytes)
	if err != nil {
		return id.ID{}, fmt.Errorf("bad key %q: want %d hex digits", s, 2*id.Bytes)
	}
	return key, nil
}
