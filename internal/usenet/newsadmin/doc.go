// Package newsadmin is triad news: the operator's commands to a news
// site, as ctlinnd gives INN's operator (issue 47), and through the
// peers the site feeds, to every site of a deployment. A site knows the
// operator by the operator's certificate on its TLS listener (without TLS,
// by a connection from its own machine), never by a name sent, and each
// site is told by the operator's own connection: no site acts for
// another. The commands are nntpd's private X commands (admin.go there).
//
// Layer: a client, beside internal/client; only commands and tests import
// it.
package newsadmin
