// Package status serves a daemon's status page: one HTML page, drawn on
// the server with html/template and embedded static files (no JavaScript
// and no build step), that tells an operator whether the node and its
// ring are healthy.
//
// It implements no paper; it is operations (issue 17). It shows what the
// papers' mechanisms are doing on this node: the Chord ring around it
// (predecessors, successors and fingers, Chord §4), the Vivaldi
// coordinates of the nodes it knows (DHash++ §4, which picks replicas and
// proximity neighbours by them), the storage engine's usage by expiry
// window, Passing Tone's maintenance (UsenetDHT §5), the news site's
// figures, and the last warnings and errors it logged. The page reads the
// same snapshot as the metrics (metrics.NodeSnapshot), taken on the
// node's event loop.
package status
