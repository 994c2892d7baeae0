package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
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
	addr := fs.String("addr", "", "the NNTP server's `HOST:PORT`, on loopback (required)")
	size := fs.Int("size", 2450, "wire size of each article in `bytes`")
	conns := fs.Int("conns", 1, "TAKETHIS connections")
	articles := fs.Int("articles", 0, "articles to feed and read back (default 10,000, or 1,000 when --size is over 16 KiB)")
	group := fs.String("group", "triad.bench", "the newsgroup to feed and read; must exist on the server")
	maxSeconds := fs.Float64("max-seconds", 300, "time bound of every single phase, in seconds")
	phases := fs.String("phases", bench.NNTPPhases, "comma-separated `list` of phases to run")
	readBy := fs.String("read-by", "number", "`how` reads name articles: number (after GROUP) or id (message-id)")
	user := fs.String("user", "", "AUTHINFO USER on every connection")
	pass := fs.String("pass", "", "AUTHINFO PASS, if the server asks for one")
	readAddr := fs.String("read-addr", "", "read phases go to this `HOST:PORT`, another site of the same ring (waits until it lists what --addr took)")
	postConns := fs.String("post-conns", "1", "comma-separated posting connection `counts`; each is a post phase of its own")
	syncDir := fs.String("sync-probe", "", "also measure this `directory`'s disk: the median time of a 4 KB write and fdatasync (what one durable post must wait for at least)")
	cpuPids := fs.String("cpu-pids", "", "comma-separated server process `ids`: print the CPU time they spend (together) per article taken by takethis and post")
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
	if *addr == "" {
		return usageErr(fs, "--addr is required")
	}
	if *articles == 0 {
		*articles = 10000
		if *size > 16<<10 {
			*articles = 1000
		}
	}
	if !(*maxSeconds > 0 && *maxSeconds <= 86400) {
		return usageErr(fs, "--max-seconds must be above 0 and at most a day")
	}
	pc, err := parseInts(*postConns, "a number")
	if err != nil {
		return usageErr(fs, "--post-conns: %v", err)
	}
	pids, err := parseInts(*cpuPids, "a process id")
	if err != nil {
		return usageErr(fs, "--cpu-pids: %v", err)
	}
	cfg := bench.NNTPConfig{
		ReadAddr: *readAddr, PostConns: pc, CPUPids: pids,
		Addr: *addr, SizeBytes: *size, Articles: *articles, Conns: *conns, Group: *group,
		MaxPhase: time.Duration(*maxSeconds * float64(time.Second)), Phases: strings.Split(*phases, ","),
		ReadBy: *readBy, User: *user, Pass: *pass,
		Seed:     uint64(time.Now().UnixNano()),
		Log:      func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) },
		Progress: progressTo(stderr),
	}
	if err := cfg.Validate(); err != nil {
		return usageErr(fs, "%v", strings.TrimPrefix(err.Error(), "bench: "))
	}
	relaxGC()
	res, err := bench.NNTP(cfg)
	if len(res.Phases) > 0 || res.Over != nil {
		printNNTP(stdout, res)
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
	if *asJSON {
		return printJSON(stdout, out)
	}
	return nil
}

// printNNTP prints the table of the phases that ran.
func printNNTP(w io.Writer, res bench.NNTPResult) {
	fmt.Fprintf(w, "NNTP server %s (%s), group %s, %d-byte articles, read by %s\n", res.Addr, res.Greeting, res.Group, res.SizeBytes, res.ReadBy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tconns\tdone\tof\tfailed\tchecked\tart/s\tMB/s\tp50 ms\tp99 ms\t")
	for _, p := range res.Phases {
		name := p.Name
		if !p.QuickAck {
			name += " (no quickack)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.2f\t%.3f\t%.3f\t\n", name, p.Conns, p.Done, p.Offered, p.Failed, p.Checked, p.OpsPerS, p.MBps, p.P50Ms, p.P99Ms)
	}
	tw.Flush()
	if res.ReadAddr != "" {
		fmt.Fprintf(w, "reads from %s, which listed every article %s took %.3f s after the last was acknowledged\n", res.ReadAddr, res.Addr, res.ListedAfterSec)
	}
	if o := res.Over; o != nil {
		fmt.Fprintf(w, "OVER of the group: %d lines, %d bytes in %.4f s (median of %d): %.0f lines/s, %.1f MB/s\n", o.Lines, o.Bytes, o.MedianSeconds, o.Repeats, o.LinesPerS, o.MBps)
	}
	for _, p := range res.Phases {
		if p.FirstError != "" {
			fmt.Fprintf(w, "%s, %d conns: first error: %s\n", p.Name, p.Conns, p.FirstError)
		}
	}
}

// parseInts reads a comma-separated list of integers, each what it names.
func parseInts(list, what string) ([]int, error) {
	var out []int
	for _, f := range splitList(list) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not %s", f, what)
		}
		out = append(out, n)
	}
	return out, nil
}
