package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"triad/internal/bench"
)

const benchNNTPAbout = `
Loads any running NNTP server on this machine (triad's, or INN through
../shared/anchors/inn2) and prints what it sustains, in the shapes of that
anchor's nntpbench.py so the figures compare. Only loopback addresses
(127.0.0.0/8, ::1) are accepted. The phases, in order (--phases picks some):

  takethis  feeds --articles articles with TAKETHIS after MODE STREAM
            (RFC 4644) over --conns connections, 64 in flight on each: a
            writer sends, a reader collects the 239/439 replies in order.
  post      POSTs a fifth as many (the anchor's 2,000 next to 10,000) on
            one connection after MODE READER, one at a time.
  article   ARTICLE of the articles just fed, then
  body      BODY, each with 1, 4 and 16 lockstep connections (one command
            in flight on each), by number after GROUP (the group's newest
            --articles) or with --read-by id by message-id. Every article
            this run sent is checked: its body must come back byte for byte.
  over      OVER of the whole group after GROUP, 5 times; the median.
  plain     ARTICLE from one connection that does not re-arm TCP_QUICKACK,
            for at most 5 s: what a plain newsreader sees. All other phases
            re-arm it before every read, as the anchor does, so a server
            that writes a reply in two pieces under Nagle's algorithm (INN's
            nnrpd) is not measured by the client's 40 ms delayed ACK.

Articles are exactly --size bytes of wire text (headers, dot-stuffed body,
final "."), with Path, From, Newsgroups, Subject, Message-ID (unique to the
run) and Date; bodies are lines of words up to 78 characters, some starting
with a dot, or above 16 KiB base64 lines as binaries are posted. The group
must exist on the server (INN: ctlinnd newgroup triad.bench). They are all
made before the clock starts.

Rates are articles per second and MB/s (10^6 bytes of article wire text);
latencies run from a command to its whole reply. Each phase is bounded by
--max-seconds; a phase in which nothing succeeds stops the run with the
command and the server's reply. The table goes to stdout, progress to
stderr, and with --json a final JSON line.`

func runBenchNNTP(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench nntp", "bench nntp --addr HOST:PORT [--size BYTES] [--conns C] [--articles N] [--phases LIST] [--json]", benchNNTPAbout, stderr)
	cfg := bench.DefaultNNTPConfig()
	cfg.RegisterFlags(fs)
	syncDir := fs.String("sync-probe", "", "also measure this `directory`'s disk: the median time of a 4 KB write and fdatasync (what one durable post must wait for at least)")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	profile := addProfileFlag(fs, "the load generator")
	if err := parse(fs, args); err != nil {
		return err
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if cfg.Addr == "" {
		return usageErr(fs, "--addr is required")
	}
	if cfg.Articles == 0 {
		cfg.Articles = 10000
		if cfg.SizeBytes > 16<<10 {
			cfg.Articles = 1000
		}
	}
	cfg.Seed, cfg.Log, cfg.Progress = uint64(time.Now().UnixNano()), logTo(stderr), progressTo(stderr)
	if err := cfg.Validate(); err != nil {
		return usageErr(fs, "%v", strings.TrimPrefix(err.Error(), "bench: "))
	}
	relaxGC()
	res, err := bench.NNTP(cfg)
	if len(res.Phases) > 0 || res.Over != nil {
		res.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	out := struct {
		bench.NNTPResult
		SyncP50Ms float64 `json:"sync_p50_ms,omitempty"`
	}{NNTPResult: res}
	if *syncDir != "" {
		d, err := bench.SyncLatency(*syncDir, 200)
		if err != nil {
			return err
		}
		out.SyncP50Ms = float64(d) / 1e6
		fmt.Fprintf(stdout, "disk under %s: a 4 KB write and fdatasync take %.3f ms (median of 200)\n", *syncDir, out.SyncP50Ms)
	}
	return maybeJSON(stdout, *asJSON, out)
}
