package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"triad/internal/pki"
	"triad/internal/usenet/newsadmin"
)

var newsAbout = help("news")

func runNews(args []string, stdout, stderr io.Writer) error {
	sub := func(name, usage string, run func(fs *flag.FlagSet, a newsFlags, pos []string) error, npos ...int) func([]string, io.Writer, io.Writer) error {
		return func(args []string, stdout, stderr io.Writer) error {
			fs := newFlags("news "+name, "news "+name+" "+usage+" [--addr SITE] [--tls BUNDLE]", newsAbout, stderr)
			a := addNewsFlags(fs)
			status := fs.String("status", "y", "newgroup: y (posting allowed), n (not) or m (moderated)")
			desc := fs.String("desc", "", "newgroup: the group's description")
			pos, err := parseMixed(fs, args)
			if err != nil {
				return err
			}
			if len(pos) < npos[0] || len(pos) > npos[len(npos)-1] {
				return usageErr(fs, "want %s", usage)
			}
			a.status, a.desc, a.out = *status, *desc, stdout
			return run(fs, a, pos)
		}
	}
	return runGroup("news", newsAbout, map[string]func([]string, io.Writer, io.Writer) error{
		"newgroup": sub("newgroup", "GROUP", newsNewgroup, 1),
		"rmgroup":  sub("rmgroup", "GROUP", newsRmgroup, 1),
		"list":     sub("list", "[WILDMAT]", newsList, 0, 1),
		"feeds":    sub("feeds", "", newsFeeds, 0),
		"pause":    sub("pause", "[PEER]", newsPause("XPAUSE"), 0, 1),
		"resume":   sub("resume", "[PEER]", newsPause("XRESUME"), 0, 1),
	}, args, stdout, stderr)
}

// newsFlags are what every news command takes.
type newsFlags struct {
	addr, tls    *string
	status, desc string
	out          io.Writer
}

func addNewsFlags(fs *flag.FlagSet) newsFlags {
	n := addNodeFlags(fs, "the news site: with TLS its TLS listener (the one its peers feed), without TLS its news port")
	fs.Lookup("addr").DefValue, *n.addr = "127.0.0.1:1119", "127.0.0.1:1119"
	return newsFlags{addr: n.addr, tls: n.tls}
}

// bundle is the operator's bundle, nil without --tls.
func (a newsFlags) bundle() (*pki.Bundle, error) {
	if *a.tls == "" {
		return nil, nil
	}
	return pki.LoadBundle(*a.tls)
}

// dial connects to the site --addr names.
func (a newsFlags) dial() (*newsadmin.Conn, error) {
	b, err := a.bundle()
	if err != nil {
		return nil, err
	}
	return newsadmin.Dial(*a.addr, "", b)
}

func newsNewgroup(fs *flag.FlagSet, a newsFlags, pos []string) error {
	cmd := fmt.Sprintf("XNEWGROUP %s %s", pos[0], a.status)
	if a.desc != "" {
		cmd += " " + strings.Join(strings.Fields(a.desc), " ")
	}
	return a.everywhere(cmd)
}

func newsRmgroup(fs *flag.FlagSet, a newsFlags, pos []string) error {
	return a.everywhere("XRMGROUP " + pos[0])
}

// everywhere runs cmd at the site and every site it feeds, a line each.
func (a newsFlags) everywhere(cmd string) error {
	b, err := a.bundle()
	if err != nil {
		return err
	}
	results, err := newsadmin.Everywhere(*a.addr, b, cmd)
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(a.out, "%s (%s): not done: %s\n", printable(r.Site), r.Addr, printable(r.Err.Error()))
			continue
		}
		fmt.Fprintf(a.out, "%s: %s\n", printable(r.Site), printable(r.Reply))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d sites not reached: run it again when they are back", failed, len(results))
	}
	return nil
}

func newsList(fs *flag.FlagSet, a newsFlags, pos []string) error {
	cmd := "LIST ACTIVE"
	if len(pos) == 1 {
		cmd += " " + pos[0]
	}
	return a.printLines(cmd)
}

func newsFeeds(fs *flag.FlagSet, a newsFlags, pos []string) error { return a.printLines("XFEEDS") }

// printLines prints the lines of a list command's answer.
func (a newsFlags) printLines(cmd string) error {
	c, err := a.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	lines, err := c.Lines(cmd)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(a.out, printable(l))
	}
	return nil
}

// printable is what a site said, with any control character (a terminal's
// escape sequences) shown as '?': sites are not trusted with the terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return '?'
		}
		return r
	}, s)
}

func newsPause(verb string) func(fs *flag.FlagSet, a newsFlags, pos []string) error {
	return func(fs *flag.FlagSet, a newsFlags, pos []string) error {
		c, err := a.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		reply, err := c.Do(strings.TrimSpace(verb + " " + strings.Join(pos, " ")))
		if err != nil {
			return err
		}
		fmt.Fprintln(a.out, printable(reply))
		return nil
	}
}
