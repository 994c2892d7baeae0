package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"triad/internal/newsd"
	"triad/internal/usenet/nntpd"
)

const nntpAbout = `
Runs a news server (NNTP: RFC 3977 reading and posting, RFC 4644 streaming
feeds, RFC 4643 AUTHINFO) on --listen.

Articles are kept whole, each as one content-hash object: standalone in a
local storage engine under --data (one site, like INN), or in the DHT through
the node at --node. Newsgroups, their article numbers, the overview and the
history of message-ids live in an embedded database under --data.

Out of the box, clients on 127.0.0.1 may read, post and feed without a
password, and nobody else may do anything. --users FILE lets others in with
AUTHINFO USER/PASS; make its lines with 'triad nntp passwd NAME'.

Groups named by --groups are created at start (existing ones keep their
articles). A name may end in :y (posting allowed, the default), :n (no
posting; feeds still arrive) or :m (moderated: only articles with an
Approved header), as in INN's active file. Expiry keeps binaries (groups matching *.binaries.*) 15 days and
everything else 90 days unless --expire says otherwise.

Sites of one ring (UsenetDHT): with --node, several news servers share the
articles in the DHT, each storing about k/n of them, and pass each other only
headers. --peers FILE names the other sites, a [[peer]] table each (the
keys of a configuration file's [[nntp.peer]]; a feed may have no secret):

  [[peer]]
  name = "siteb"
  addr = "10.0.0.2:119"
  mode = "announce"
  secret = "s3cret"

  [[peer]]
  name = "upstream"
  addr = "news.example:119"
  mode = "feed"
  groups = "comp.*,!comp.binaries.*"

A site announces every article listed here (posted, fed, or announced by
another peer) to its announce peers with CHECK and TAKEDHT (headers and the
article's key), except to sites already in its Path; a mesh peer (every site
peers with every other) gets only the articles that entered the ring here;
a feed peer (INN, say) gets whole articles with CHECK and TAKETHIS. An announce peer logs in here as
its name with the secret of the link. With the secret 'tls' the link is
mutual TLS with the deployment's certificates (--tls, from 'triad ca issue
NAME' where NAME is the site's --pathhost): the peer is dialled at the
address given, its --peer-listen, and must present a certificate issued to
its name; it announces to this site's --peer-listen, known by its own. What a peer has not taken waits in
news.db (--max-backlog) and goes when it is back; each peer's state is in
DATA/feeds.status. Articles read from the DHT are kept in a memory cache
(--cache-mb, --cache-policy).

Point a newsreader at it, or try:
  python3 -c "import nntplib; s = nntplib.NNTP('127.0.0.1', 1119); print(s.list()[1][:5])"

'triad nntp passwd NAME [--perm read,post,feed]' reads a password on stdin and
prints a --users line.`

func runNNTP(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "passwd" {
		return runNNTPPasswd(args[1:], stdout, stderr)
	}
	o := newsd.DefaultOptions()
	fs := newFlags("nntp", "nntp [--listen ADDR] [--data DIR] [--groups a.b,c.d] [--node ADDR]", nntpAbout, stderr)
	o.RegisterFlags(fs)
	profile := addProfileFlag(fs, "the server until it stops")
	if _, err := parseCommand(fs, args, "nntp", &o); err != nil {
		return err
	}
	stopProfile, err := profile.startDaemon(o.GoMemoryLimitMB())
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	site, err := newsd.Start(ctx, o, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "triad nntp: serving %s on %s (%s), data in %s\n", site.Where, site.Addr, strings.Join(site.Groups, ", "), o.Data)
	if site.HTTPAddr != "" {
		fmt.Fprintf(stdout, "status page on http://%s/, metrics on http://%s/metrics\n", site.HTTPAddr, site.HTTPAddr)
	}
	<-ctx.Done()
	return site.Close()
}

func runNNTPPasswd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("nntp passwd", "nntp passwd NAME [--perm read,post,feed]", "Reads a password on stdin and prints a line for the --users file of 'triad nntp'.", stderr)
	perm := fs.String("perm", "read,post", "what the user may do: any of `read,post,feed`")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.ContainsAny(pos[0], ": \t") {
		return usageErr(fs, "want one user NAME without ':' or spaces")
	}
	if _, err := nntpd.ParsePerm(*perm); err != nil {
		return usageErr(fs, "--perm: %v", err)
	}
	var pw []byte
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprint(stderr, "password: ")
		pw, err = term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(stderr)
	} else {
		pw, err = io.ReadAll(io.LimitReader(os.Stdin, 1024))
	}
	if err != nil {
		return err
	}
	password := strings.TrimRight(string(pw), "\r\n")
	if password == "" {
		return errors.New("nntp passwd: empty password")
	}
	h, err := nntpd.HashPassword(password)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s:%s:%s\n", pos[0], h, *perm)
	return nil
}
