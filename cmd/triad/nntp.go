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

var nntpAbout = help("nntp")

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
