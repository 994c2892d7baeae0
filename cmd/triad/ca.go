package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"triad/internal/client"
	"triad/internal/noded"
	"triad/internal/pki"
	"triad/internal/wire"
)

var caAbout = help("ca")

func runCA(args []string, stdout, stderr io.Writer) error {
	return runGroup("ca", caAbout, map[string]func([]string, io.Writer, io.Writer) error{
		"init": runCAInit, "issue": runCAIssue, "revoke": runCARevoke,
	}, args, stdout, stderr)
}

func runCAInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ca init", "ca init DIR [--name NAME] [--days 3650]", "Makes a deployment CA in DIR.", stderr)
	name := fs.String("name", "triad", "the CA's `name`")
	days := fs.Int("days", 3650, "validity in `days`")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one DIR")
	}
	if *days < 1 {
		return usageErr(fs, "--days %d: want at least 1", *days)
	}
	if err := pki.InitCA(pos[0], *name, time.Duration(*days)*24*time.Hour); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "made CA %q in %s; keep %s secret\n", *name, pos[0], filepath.Join(pos[0], pki.CAKey))
	return nil
}

func runCAIssue(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ca issue", "ca issue NAME --site SITE [--role ROLE] [--addr HOST:PORT] [--vnodes N] [--machine NAME] [--ca DIR] [--out DIR] [--days 365]", "Issues a certificate and writes its bundle.", stderr)
	site := fs.String("site", "", "the holder's `site` (required)")
	role := fs.String("role", "", "what the holder may do: node, site (a news front-end), operator or client (default: node with --addr, else client)")
	addr := fs.String("addr", "", "for a node: the `address` it listens on, its identity on the ring")
	vnodes := fs.Int("vnodes", 0, "for a node: the ring positions derived from its address it may use (default 1): it runs at most this many vnodes, and a new node takes those of them that even out the ring (triad node --positions)")
	machine := fs.String("machine", "", "for a node: the machine `name` it stores on, as its --machine (default: a machine of its own)")
	caDir := fs.String("ca", "ca", "the CA's `directory`")
	out := fs.String("out", "", "the bundle's `directory` (default CA/bundles/NAME)")
	days := fs.Int("days", 365, "validity in `days`")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usageErr(fs, "want one NAME")
	case *site == "":
		return usageErr(fs, "--site is required")
	case *days < 1:
		return usageErr(fs, "--days %d: want at least 1", *days)
	}
	if *out == "" {
		*out = filepath.Join(*caDir, "bundles", pos[0])
	}
	ca, err := pki.LoadCA(*caDir)
	if err != nil {
		return err
	}
	who := pki.Identity{Name: pos[0], Site: *site, Addr: *addr, Vnodes: *vnodes, Machine: noded.MachineID(*machine)}
	if *role != "" {
		if who.Role, err = pki.ParseRole(*role); err != nil {
			return usageErr(fs, "--role: %v", err)
		}
	}
	if err := ca.Issue(who, time.Duration(*days)*24*time.Hour, *out); err != nil {
		return err
	}
	b, err := pki.LoadBundle(*out)
	if err != nil {
		return err
	}
	what := "a " + string(b.Self.Role)
	if b.Self.Role == pki.RoleNode {
		what = fmt.Sprintf("the node at %s, %d vnode(s)", *addr, b.Self.Vnodes)
	}
	fmt.Fprintf(stdout, "issued %s of %s (%s); bundle in %s\n", pos[0], *site, what, *out)
	return nil
}

func runCARevoke(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ca revoke", "ca revoke NAME [--ca DIR]", "Revokes a certificate: the CA's crl.pem lists it.", stderr)
	caDir := fs.String("ca", "ca", "the CA's `directory`")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one NAME")
	}
	ca, err := pki.LoadCA(*caDir)
	if err != nil {
		return err
	}
	if err := ca.Revoke(pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked %s; copy %s into every bundle\n", pos[0], filepath.Join(*caDir, pki.CRL))
	return nil
}

// nodeFlags are --addr and --tls of a command that talks to nodes.
type nodeFlags struct{ addr, tls *string }

// addNodeFlags adds --addr, described by addrUsage, and --tls to fs.
func addNodeFlags(fs *flag.FlagSet, addrUsage string) nodeFlags {
	return nodeFlags{fs.String("addr", "127.0.0.1:4001", addrUsage),
		fs.String("tls", os.Getenv("TRIAD_TLS"), "talk to the nodes over mutual TLS with the bundle in this `directory` (from 'triad ca issue'; needed when they run with --tls; default $TRIAD_TLS)")}
}

// options are the client's: TLS with the bundle --tls names, if any.
func (n nodeFlags) options() (client.Options, error) {
	if *n.tls == "" {
		return client.Options{}, nil
	}
	b, err := pki.LoadBundle(*n.tls)
	return client.Options{TLS: b}, err
}

// cluster connects to the ring through --addr.
func (n nodeFlags) cluster(ctx context.Context) (*client.Cluster, error) {
	opt, err := n.options()
	if err != nil {
		return nil, err
	}
	c, err := client.DialClusterOptions(ctx, opt, *n.addr)
	return c, tlsHint(*n.addr, *n.tls, err)
}

// node connects to the node at --addr.
func (n nodeFlags) node(ctx context.Context) (*client.Client, error) {
	opt, err := n.options()
	if err != nil {
		return nil, err
	}
	c, err := client.DialOptions(ctx, *n.addr, opt)
	return c, tlsHint(*n.addr, *n.tls, err)
}

// call sends one request to the node at --addr.
func (n nodeFlags) call(ctx context.Context, m wire.Msg) (wire.Msg, error) {
	opt, err := n.options()
	if err != nil {
		return nil, err
	}
	resp, err := client.Call(ctx, *n.addr, m, opt)
	return resp, tlsHint(*n.addr, *n.tls, err)
}

// tlsHint explains a failure to talk to a node without TLS when the node
// speaks TLS: plain frames sent to a TLS listener end in a closed
// connection ("EOF"), which says nothing of the cause. It offers a TLS
// handshake (trusting no certificate, sending none) and, if the node
// answers it, says what to set.
func tlsHint(addr, tlsDir string, err error) error {
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
