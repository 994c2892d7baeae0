package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"triad/internal/client"
	"triad/internal/noded"
	"triad/internal/pki"
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
	fmt.Fprintf(stdout, "issued %s of %s (%s); bundle in %s\n", pos[0], *site, b.Self.Describe(), *out)
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

// target is the node --addr names, talked to with the bundle --tls names.
func (n nodeFlags) target() client.Target { return client.Target{Addr: *n.addr, TLSDir: *n.tls} }

// options are the client's: TLS with the bundle --tls names, if any.
func (n nodeFlags) options() (client.Options, error) { return n.target().Options() }

// tlsHint explains a failure to talk to a node without TLS when the node
// speaks TLS (client.TLSHint).
var tlsHint = client.TLSHint
