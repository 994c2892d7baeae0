package tapestry

import (
	"fmt"

	"triad/internal/host"
)

// Settings is Tapestry's configuration table (host.Setting), bound to c:
// what a daemon offers its operator as --tapestry-* flags and keys of a
// configuration file.
func (c *Config) Settings() []host.Setting {
	return []host.Setting{
		{Key: "tapestry-republish", Value: &c.Republish, Check: host.Positive(&c.Republish),
			Usage: "with --tapestry: how often the objects this node serves are republished; a location pointer lives twice that unless refreshed"},
		{Key: "tapestry-beacon", Value: &c.Beacon, Check: host.Positive(&c.Beacon),
			Usage: "with --tapestry: how often every link of the routing table is probed"},
		{Key: "tapestry-extra", Value: extraPointers{c},
			Usage: "with --tapestry: extra pointers `k,l,m`: on the first m hops of a publish path, pointers also go to k backups of the next hop (0-2) and its l nearest neighbours (0-16)"},
	}
}

// extraPointers is the setting of §V-B3's extra pointers, written k,l,m.
type extraPointers struct{ c *Config }

func (e extraPointers) String() string {
	return fmt.Sprintf("%d,%d,%d", e.c.ExtraBackups, e.c.ExtraNearest, e.c.ExtraHops)
}

// Set parses k,l,m and checks the bounds Validate holds them to.
func (e extraPointers) Set(s string) error {
	c := *e.c
	if _, err := fmt.Sscanf(s, "%d,%d,%d", &c.ExtraBackups, &c.ExtraNearest, &c.ExtraHops); err != nil || fmt.Sprintf("%d,%d,%d", c.ExtraBackups, c.ExtraNearest, c.ExtraHops) != s {
		return fmt.Errorf("want k,l,m, like 1,1,1")
	}
	if err := c.Validate(); err != nil {
		return err
	}
	*e.c = c
	return nil
}
