package newsadmin

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"triad/internal/nntp"
	"triad/internal/pki"
)

// Timeout bounds the dial and each command.
const Timeout = 10 * time.Second

// Conn is the operator's connection to one site.
type Conn struct {
	c    *nntp.Client
	Name string // the site's name, from its certificate ("" without TLS)
}

// Dial connects to the site at addr: with the operator's bundle b over
// TLS, the site's certificate checked against b's CA (and issued to name,
// unless name is ""); with b nil, in plain text.
func Dial(addr, name string, b *pki.Bundle) (*Conn, error) {
	deadline := time.Now().Add(Timeout)
	var c *nntp.Client
	var err error
	if b == nil {
		c, err = nntp.Dial(addr, deadline)
	} else {
		cfg := b.ClientConfig("")
		if name != "" {
			cfg = b.NamedClientConfig(name)
		}
		c, err = nntp.DialTLS(addr, cfg, deadline)
		if err != nil && strings.Contains(err.Error(), "does not look like a TLS handshake") {
			err = fmt.Errorf("%s speaks no TLS: with --tls, give the site's TLS listener (the one its peers feed; triad up prints it): %w", addr, err)
		}
	}
	if err != nil {
		return nil, err
	}
	conn := &Conn{c: c}
	if tc, ok := c.Conn().(*tls.Conn); ok {
		if id, err := pki.PeerIdentity(tc.ConnectionState()); err == nil {
			conn.Name = id.Name
		}
	}
	if g := c.Greeting(); !strings.HasPrefix(g, "200") && !strings.HasPrefix(g, "201") {
		c.Close()
		if strings.HasPrefix(g, "502") {
			return nil, fmt.Errorf("%s refused the connection (%q): it takes the operator's certificate (--tls)", addr, g)
		}
		return nil, fmt.Errorf("%s greets %q", addr, g)
	}
	return conn, nil
}

// Close ends the connection.
func (c *Conn) Close() error {
	c.c.Send("QUIT")
	return c.c.Close()
}

// Do runs a command whose answer is one line (288), and returns it.
func (c *Conn) Do(cmd string) (string, error) {
	c.c.Conn().SetDeadline(time.Now().Add(Timeout))
	line, err := c.c.Cmd(cmd)
	if err != nil {
		return "", err
	}
	if code, _ := nntp.ParseStatus(line); code != nntp.CodeAdminDone {
		return "", refused(cmd, string(line))
	}
	return strings.TrimSpace(string(line[3:])), nil
}

// Lines runs a command whose answer is a list (289, or LIST's 215) and
// returns its lines.
func (c *Conn) Lines(cmd string) ([]string, error) {
	c.c.Conn().SetDeadline(time.Now().Add(Timeout))
	line, err := c.c.Cmd(cmd)
	if err != nil {
		return nil, err
	}
	switch code, _ := nntp.ParseStatus(line); code {
	case nntp.CodeAdminFollows, nntp.CodeListFollows:
	case nntp.CodeFeatureNotSupported:
		return nil, fmt.Errorf("%w: %s", ErrNoFeeds, strings.TrimSpace(string(line)))
	default:
		return nil, refused(cmd, string(line))
	}
	block, _, err := c.c.ReadBlock(nil, 16<<20)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(nntp.Unstuff(block)), "\r\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// refused is a site's refusal of cmd, said plainly.
func refused(cmd, line string) error {
	line = strings.TrimSpace(line)
	if code, _ := nntp.ParseStatus([]byte(line)); code == nntp.CodeAccessDenied || code == nntp.CodeAuthRequired {
		return fmt.Errorf("%s: refused (%s): it needs the operator's certificate (--tls), on the site's TLS listener", verbOf(cmd), line)
	}
	return fmt.Errorf("%s: %s", verbOf(cmd), line)
}

func verbOf(cmd string) string {
	verb, _, _ := strings.Cut(cmd, " ")
	return verb
}

// Peer is a site a site feeds: its name and the address its feed goes to.
type Peer struct{ Name, Addr string }

// Peers lists the sites c's site feeds.
func (c *Conn) Peers() ([]Peer, error) {
	lines, err := c.Lines("XPEERS")
	if err != nil {
		return nil, err
	}
	var out []Peer
	for _, l := range lines {
		name, addr, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("XPEERS: a line %q", l)
		}
		out = append(out, Peer{name, addr})
	}
	return out, nil
}

// Result is what one site answered.
type Result struct {
	Site  string // its name ("" when unknown), or its address
	Addr  string
	Reply string
	Err   error
}

// Everywhere runs cmd (a one-line command) at the site at addr, then at
// each site it feeds, each over the operator's own connection. The first
// site's failure is the error; each peer's is in its Result, so that the
// operator sees which sites have the change and which must be told again.
func Everywhere(addr string, b *pki.Bundle, cmd string) ([]Result, error) {
	first, err := Dial(addr, "", b)
	if err != nil {
		return nil, err
	}
	defer first.Close()
	reply, err := first.Do(cmd)
	if err != nil {
		return nil, err
	}
	results := []Result{{Site: SiteLabel(first.Name, addr), Addr: addr, Reply: reply}}
	peers, err := first.Peers()
	if errors.Is(err, ErrNoFeeds) {
		return results, nil // a site alone
	}
	if err != nil {
		return results, err
	}
	for _, p := range peers {
		r := Result{Site: p.Name, Addr: p.Addr}
		name := p.Name
		if b == nil {
			name = ""
		}
		c, err := Dial(p.Addr, name, b)
		if err == nil {
			r.Reply, err = c.Do(cmd)
			c.Close()
		}
		r.Err = err
		results = append(results, r)
	}
	return results, nil
}

// ErrNoFeeds is a site's answer that it feeds nobody (XPEERS, XFEEDS,
// XPAUSE, XRESUME).
var ErrNoFeeds = errors.New("the site feeds no peers")

// SiteLabel names a site by its name, or its address when it gave none.
func SiteLabel(name, addr string) string {
	if name == "" {
		return addr
	}
	return name
}
