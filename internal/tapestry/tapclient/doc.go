// Package tapclient is the client side of Tapestry's object location
// (package tapestry; docs/tapestry.md): publish and unpublish an object
// through a node, locate or fetch one by its key, and read a node's
// routing table and counters, each one request to one node
// (client.Target), as triad publish, unpublish, locate, fetch and
// tapestry table|status make them; and the text and JSON forms those
// commands print.
//
//	t := client.Target{Addr: "127.0.0.1:4001"}
//	key, err := tapclient.Publish(ctx, t, "notes.txt", data, 0)
//	l, err := tapclient.Locate(ctx, t, key, false)
//	data, err := tapclient.Fetch(ctx, t, key)
//
// Layer: outside the node, beside client; it speaks the wire format and
// uses package tapestry only for its constants and table printers.
package tapclient
