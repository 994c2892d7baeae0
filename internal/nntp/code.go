package nntp

import (
	"fmt"
	"strconv"
)

// Code is the three-digit code that starts a status line (RFC 3977
// section 3.2): the first digit says success (2), continue (3), try again
// or fix the command (4), or failure (5).
type Code int

// The codes triad's server sends or its clients expect, named by their
// meaning in RFC 3977 unless another RFC is given. Some codes mean
// different things after different commands (223 after STAT, NEXT and
// LAST; 221 after HEAD and XHDR); they have one name each.
const (
	CodeHelpFollows         Code = 100 // HELP: help text follows
	CodeCapabilitiesFollow  Code = 101 // CAPABILITIES: list follows
	CodeDate                Code = 111 // DATE: server date and time
	CodePostingAllowed      Code = 200 // greeting, MODE READER: posting allowed
	CodePostingProhibited   Code = 201 // greeting, MODE READER: posting prohibited
	CodeStreamingPermitted  Code = 203 // MODE STREAM (RFC 4644 section 2.3)
	CodeClosing             Code = 205 // QUIT: connection closing
	CodeGroupSelected       Code = 211 // GROUP, LISTGROUP
	CodeListFollows         Code = 215 // LIST
	CodeArticleFollows      Code = 220 // ARTICLE
	CodeHeadFollows         Code = 221 // HEAD (and XHDR's headers follow)
	CodeBodyFollows         Code = 222 // BODY
	CodeArticleExists       Code = 223 // STAT, NEXT, LAST: article exists and is selected
	CodeOverviewFollows     Code = 224 // OVER
	CodeHeadersFollow       Code = 225 // HDR
	CodeNewArticlesFollow   Code = 230 // NEWNEWS
	CodeNewGroupsFollow     Code = 231 // NEWGROUPS
	CodeTransferred         Code = 235 // IHAVE: article transferred OK
	CodeCheckSend           Code = 238 // CHECK: send the article (RFC 4644 section 2.4)
	CodeTakeThisOK          Code = 239 // TAKETHIS: article transferred OK (RFC 4644 section 2.5)
	CodePosted              Code = 240 // POST: article received OK
	CodeAuthAccepted        Code = 281 // AUTHINFO: accepted (RFC 4643)
	CodeAdminDone           Code = 288 // an operator's X command (triad news) done
	CodeAdminFollows        Code = 289 // an operator's X command: a list follows
	CodeSendTransfer        Code = 335 // IHAVE: send the article
	CodeSendPost            Code = 340 // POST: send the article
	CodePasswordRequired    Code = 381 // AUTHINFO USER: password required (RFC 4643)
	CodeUnavailable         Code = 400 // service not available or no longer available: closing
	CodeInternalFault       Code = 403 // internal fault
	CodeNoSuchGroup         Code = 411 // no such newsgroup
	CodeNoGroupSelected     Code = 412 // no newsgroup selected
	CodeNoCurrentArticle    Code = 420 // current article number is invalid
	CodeNoNextArticle       Code = 421 // NEXT: no next article
	CodeNoPrevArticle       Code = 422 // LAST: no previous article
	CodeNoArticleNumber     Code = 423 // no article with that number (or in that range)
	CodeNoArticleID         Code = 430 // no article with that message-id
	CodeCheckLater          Code = 431 // CHECK: try again later (RFC 4644 section 2.4)
	CodeNotWanted           Code = 435 // IHAVE: article not wanted
	CodeTransferLater       Code = 436 // IHAVE: transfer not possible, try again later
	CodeTransferRejected    Code = 437 // IHAVE: transfer rejected, do not retry
	CodeCheckNotWanted      Code = 438 // CHECK: article not wanted (RFC 4644 section 2.4)
	CodeTakeThisRejected    Code = 439 // TAKETHIS: transfer rejected, do not retry (RFC 4644 section 2.5)
	CodePostingFailed       Code = 441 // POST: posting failed
	CodeAuthRequired        Code = 480 // authentication required (RFC 4643)
	CodeAuthFailed          Code = 481 // AUTHINFO: authentication failed (RFC 4643)
	CodeAuthOutOfSequence   Code = 482 // AUTHINFO: commands out of sequence (RFC 4643)
	CodeUnknownCommand      Code = 500 // unknown command
	CodeSyntaxError         Code = 501 // syntax error in the arguments
	CodeAccessDenied        Code = 502 // permission denied; as a greeting, no service for you
	CodeFeatureNotSupported Code = 503 // feature not supported
)

// ParseStatus returns the code that starts a status line: three digits,
// from 100 to 599, alone or followed by a space.
func ParseStatus(line []byte) (Code, error) {
	if len(line) < 3 || len(line) > 3 && line[3] != ' ' {
		return 0, fmt.Errorf("nntp: not a status line: %q", line)
	}
	code, err := strconv.Atoi(string(line[:3]))
	if err != nil || code < 100 || code > 599 {
		return 0, fmt.Errorf("nntp: not a status line: %q", line)
	}
	return Code(code), nil
}
