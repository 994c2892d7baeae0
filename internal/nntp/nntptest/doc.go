// Package nntptest holds the helpers of tests that talk NNTP to a server:
// a client that fails the test on a broken connection, and a check of a
// reply's status code. The news server's and the feeds' tests share it.
//
// Layer: test helpers, above internal/nntp (RFC 3977 section 3 framing);
// only tests use it.
package nntptest
