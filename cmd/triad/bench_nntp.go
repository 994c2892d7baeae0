package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"triad/internal/bench"
)

func runBenchNNTP(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench nntp", "bench nntp --addr HOST:PORT [--size BYTES] [--conns C] [--articles N] [--phases LIST] [--json]", bench.NNTPHelp+bench.NNTPSpreadHelp, stderr)
	cfg := bench.DefaultNNTPConfig()
	cfg.RegisterFlags(fs)
	spread := fs.String("spread-addrs", "", "comma-separated news `addresses` of every site of one deployment: adds the takethis-spread phase, a feed offered at all of them at once (see below)")
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
	for _, a := range strings.Split(*spread, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.SpreadAddrs = append(cfg.SpreadAddrs, a)
		}
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
	if res.Spread != nil {
		res.Spread.WriteText(stdout)
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
