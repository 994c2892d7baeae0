package nntpd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// Users is a password file for AUTHINFO USER/PASS (RFC 4643). Each line is
//
//	name:bcrypt-hash:read,post,feed
//
// Blank lines and lines starting with '#' are ignored. `triad nntp
// passwd` writes lines of this form.
type Users struct {
	users map[string]user
}

type user struct {
	hash []byte
	perm Perm
}

// LoadUsers reads a password file.
func LoadUsers(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u, err := ParseUsers(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// ParseUsers reads password-file lines.
func ParseUsers(r io.Reader) (*Users, error) {
	u := &Users{users: map[string]user{}}
	sc := bufio.NewScanner(io.LimitReader(r, 16<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("line %d: want name:bcrypt-hash:permissions", n)
		}
		if _, err := bcrypt.Cost([]byte(f[1])); err != nil {
			return nil, fmt.Errorf("line %d: %q is not a bcrypt hash", n, f[0])
		}
		perm, err := ParsePerm(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		u.users[f[0]] = user{hash: []byte(f[1]), perm: perm}
	}
	return u, sc.Err()
}

// ParsePerm parses "read,post,feed" (any subset; "none" for nothing).
func ParsePerm(s string) (Perm, error) {
	var p Perm
	for _, w := range strings.Split(s, ",") {
		switch strings.TrimSpace(w) {
		case "read":
			p |= PermRead
		case "post":
			p |= PermPost
		case "feed":
			p |= PermFeed
		case "announce":
			p |= PermAnnounce
		case "none", "":
		default:
			return 0, fmt.Errorf("unknown permission %q: want read, post, feed, announce or none", w)
		}
	}
	return p, nil
}

// NewUsers is an empty password file.
func NewUsers() *Users { return &Users{users: map[string]user{}} }

// Add lets name in with password and perm (a peer site's link, say).
func (u *Users) Add(name, password string, perm Perm) error {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost+4)
	if err != nil {
		return err
	}
	u.users[name] = user{hash: h, perm: perm}
	return nil
}

// Check returns the user's permissions if the password is right.
func (u *Users) Check(name, password string) (Perm, bool) {
	e, ok := u.users[name]
	if !ok {
		// Spend the same time as a wrong password.
		bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return 0, false
	}
	if bcrypt.CompareHashAndPassword(e.hash, []byte(password)) != nil {
		return 0, false
	}
	return e.perm, true
}

var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("dummy"), bcrypt.DefaultCost)
	return h
})

// HashPassword makes a password-file hash.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}
