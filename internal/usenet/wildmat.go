package usenet

import (
	"path"
	"strings"
)

// Wildmat matches RFC 3977 section 4 patterns: comma-separated globs
// (*, ?, [...]), each optionally negated by '!'; the last glob that
// matches decides. An empty pattern matches everything.
func Wildmat(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	match := false
	for _, el := range strings.Split(pattern, ",") {
		neg := strings.HasPrefix(el, "!")
		if neg {
			el = el[1:]
		}
		if ok, err := path.Match(el, s); err == nil && ok {
			match = !neg
		}
	}
	return match
}

// ValidWildmat reports whether every glob of pattern is well formed.
func ValidWildmat(pattern string) bool {
	for _, el := range strings.Split(pattern, ",") {
		if _, err := path.Match(strings.TrimPrefix(el, "!"), ""); err != nil {
			return false
		}
	}
	return true
}
