// Package nntp is the NNTP protocol's framing, shared by the news server
// (internal/usenet), the load generator (internal/bench, `triad bench
// nntp`) and the tests: RFC 3977 section 3.1 (command and status lines,
// multi-line data blocks with dot-stuffing), the status codes of RFC 3977
// and of RFC 4643 (AUTHINFO), and those of RFC 4644 (streaming: CHECK and
// TAKETHIS).
//
// net/textproto's ReadLine and DotReader put no bound on a line or a block
// and its DotReader goes a byte at a time, so this package has its own
// readers, one per side, each shaped by what it carries:
//
//   - ReadLine reads a bounded line; a longer one is read to its end and
//     reported, so the stream stays in step (a server refuses a command
//     line past MaxCommandLine and goes on).
//   - ReadArticle is a server reading an article after POST, IHAVE or
//     TAKETHIS: it appends the block to a caller's (pooled) buffer in wire
//     form, dot-stuffing kept, so that the article can be stored and later
//     sent back as it is, with no scan and no copy.
//   - Client.ReadBlock is a client reading a multi-line reply: it checks
//     and copies a whole buffer of lines at a time, so that a load
//     generator reading large articles costs less than the server sending
//     them.
//
// AppendBlock and Unstuff are dot-stuffing and its inverse. A Client is a
// small blocking client (dial, greeting, commands, blocks, articles) for
// the load generator and the tests; Expect checks a reply's code (a
// *ReplyError names the command and the line otherwise), and Auth and
// ModeStream are the sessions' usual openings.
//
//	c, err := nntp.Dial("127.0.0.1:119", time.Now().Add(10*time.Second))
//	status, err := c.Cmd("ARTICLE <a@example.com>")
//	if code, _ := nntp.ParseStatus(status); code == nntp.CodeArticleFollows {
//		block, lines, err := c.ReadBlock(nil, 1<<20)
//	}
//
// The package imports only the standard library: nothing of triad above it
// (no usenet, bench, store or node package) may be imported here.
package nntp
