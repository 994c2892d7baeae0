package main

import (
	"errors"
	"io"
	"os"

	"triad/internal/bench"
)

var benchPinAbout = help("bench-pin")

func runBenchPin(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench pin", "bench pin [--frames 80] [--readers 20] [--gets 500] [--hold 15s] [--max-anon-mb 576] [--json]", benchPinAbout, stderr)
	cfg := bench.DefaultPinConfig()
	fs.IntVar(&cfg.Frames, "frames", cfg.Frames, "connections that each stall a 4 MiB frame one byte short")
	fs.IntVar(&cfg.Readers, "readers", cfg.Readers, "connections that each ask --gets times for the block and read nothing")
	fs.IntVar(&cfg.Gets, "gets", cfg.Gets, "gets each reader sends")
	fs.IntVar(&cfg.BlockBytes, "block-bytes", cfg.BlockBytes, "the block's size")
	fs.DurationVar(&cfg.Hold, "hold", cfg.Hold, "how long each attack holds")
	fs.Float64Var(&cfg.MaxAnonMB, "max-anon-mb", cfg.MaxAnonMB, "the anonymous resident memory (heap and stacks) the node must stay under, in MiB")
	fs.DurationVar(&cfg.RingLimit, "ring-limit", cfg.RingLimit, "the slowest an operator's triad ring may answer")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	var err error
	if cfg.Binary, err = os.Executable(); err != nil {
		return err
	}
	cfg.Dir = os.TempDir()
	cfg.Log = logTo(stderr)
	res, err := bench.Pin(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	if !res.Pass {
		return errors.New("bench pin: the node's memory or the operator's ring missed its bound")
	}
	return nil
}
