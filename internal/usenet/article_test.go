package usenet

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// addPath edits the parsed article in place of parsing it again: the
// result must be what parsing the new bytes gives.
func TestAddPathMatchesReparse(t *testing.T) {
	s := &Site{cfg: SiteConfig{PathHost: "here.example"}}
	for _, raw := range []string{
		article("<p1@x>", "local.test", "body\r\n"),
		"From: a@b\r\npath:  up.example!not-for-mail\r\nSubject: s\r\n\r\n..dot line\r\n",
		"Path: a!b\r\n\tc\r\nFrom: a@b\r\n\r\n",
	} {
		a, err := ParseArticle([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		s.addPath(a)
		want, err := ParseArticle(slices.Clone(a.Raw))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.headers, want.headers) || a.body != want.body || !bytes.Equal(a.Body(), want.Body()) {
			t.Fatalf("after addPath %q:\nedited %+v body %d\nparsed %+v body %d", a.Raw, a.headers, a.body, want.headers, want.body)
		}
		if p, _ := a.Header("Path"); !strings.HasPrefix(p, "here.example!") {
			t.Fatalf("Path %q does not start with this site", p)
		}
	}
}
