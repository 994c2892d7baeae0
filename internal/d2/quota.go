package d2

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
)

// The name registry takes any client's put if absent of a name record
// (auth.go), and a name, once claimed, never lapses: one client could
// claim every name it likes (issue 44: 20,000 in 15 s, and the flood
// pulled D2's balancing onto the registry's range). So a node counts the
// names each client claims through it (Config.MaxNames, 100 by default),
// by the client's certificate with TLS and its IP address without
// (node.MsgIn.Client, which the driver sets from the connection, never
// from anything the client wrote), and keeps the counts in ClaimsFile
// across restarts. A claim past the quota is refused with ErrQuota before
// anything is looked up. The count is this node's: a client that claims
// through every node of a ring gets MaxNames at each (docs/d2.md); names
// do not lapse (a lapse for volumes with no commit for a configured time
// is not built).

// ClaimsFile keeps the names each client claimed through this node: a
// line "COUNT CLIENT" each.
const ClaimsFile = "d2-names-claimed"

// maxClaimants bounds the clients counted; past it a new client's claim
// is refused as over the quota.
const maxClaimants = 100_000

// ErrQuota refuses a name claim past the client's quota at this node.
var ErrQuota = fmt.Errorf("d2: %w: name quota", fault.ErrBadRequest)

// counted reports whether a client's put of k counts against its quota:
// a name record's, from a client the driver named, with a quota set.
func (n *Node) counted(client string, k id.ID) bool {
	return n.cfg.MaxNames > 0 && client != "" && isRegistryKey(k)
}

// claimAllowed checks a client's put of k against its quota.
func (n *Node) claimAllowed(client string, k id.ID) error {
	if !n.counted(client, k) {
		return nil
	}
	c, known := n.claims[client]
	switch {
	case c >= n.cfg.MaxNames:
		n.Stats.QuotaRefused++
		return fmt.Errorf("%w: %s has claimed %d names through this node, its quota", ErrQuota, client, c)
	case !known && len(n.claims) >= maxClaimants:
		n.Stats.QuotaRefused++
		return fmt.Errorf("%w: %d clients have claimed names through this node", ErrQuota, len(n.claims))
	}
	return nil
}

// claimed counts a name the client claimed, and saves the counts.
func (n *Node) claimed(env node.Env, client string, k id.ID) {
	if !n.counted(client, k) {
		return
	}
	n.claims[client]++
	if n.claimsLoaded {
		env.Offload(&saveClaimsWork{data: encodeClaims(n.claims)})
	}
}

// encodeClaims is ClaimsFile's content for counts.
func encodeClaims(counts map[string]int) []byte {
	var b bytes.Buffer
	for client, c := range counts {
		fmt.Fprintf(&b, "%d %s\n", c, client)
	}
	return b.Bytes()
}

// decodeClaims reads ClaimsFile's content; a line it cannot read is
// skipped (a count lost, never a claim allowed twice over: a client's
// counts add).
func decodeClaims(data []byte) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() && len(out) < maxClaimants {
		c, client, ok := strings.Cut(sc.Text(), " ")
		v, err := strconv.Atoi(c)
		if ok && err == nil && v > 0 && client != "" {
			out[client] += v
		}
	}
	return out
}

// saveClaimsWork writes ClaimsFile off the event loop.
type saveClaimsWork struct{ data []byte }

func (w *saveClaimsWork) Run(s node.Storage) (any, error) {
	return nil, s.WriteFile(ClaimsFile, w.data)
}
func (w *saveClaimsWork) String() string { return "d2-save-claims" }

// loadClaimsWork reads ClaimsFile at start.
type loadClaimsWork struct{}

func (w *loadClaimsWork) Run(s node.Storage) (any, error) {
	b, err := s.ReadFile(ClaimsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeClaims(b), nil
}
func (w *loadClaimsWork) String() string { return "d2-load-claims" }

// tookClaims adds the counts an earlier run saved to those of this run
// (claims made before the file was read, which are saved only now, so
// that no save forgets the earlier run's).
func (n *Node) tookClaims(env node.Env, counts map[string]int) {
	unsaved := len(n.claims) > 0
	for client, c := range counts {
		n.claims[client] += c
	}
	n.claimsLoaded = true
	if unsaved {
		env.Offload(&saveClaimsWork{data: encodeClaims(n.claims)})
	}
}
