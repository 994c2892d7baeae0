package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"triad/internal/client"
	"triad/internal/usenet"
	"triad/internal/usenet/nntpd"
	"triad/internal/usenet/peering"
)

// News collects one news server's metrics: its replies, connections,
// cache and feeds. Site, Cache and Feeds may be nil (no DHT, no peers).
type News struct {
	Server *nntpd.Server
	Site   *usenet.Site
	Cache  *usenet.CachedSpool
	Feeds  *peering.Feeds
	// DHT, if set, is the client the site reads the DHT with.
	DHT *client.Cluster
}

// Describe implements prometheus.Collector (unchecked metrics).
func (c *News) Describe(chan<- *prometheus.Desc) {}

// replyKinds name what some status codes mean, for the derived counters.
var (
	ingested = map[int]string{235: "ihave", 239: "takethis", 240: "post"}
	reads    = map[int]string{220: "article", 221: "head", 222: "body"}
)

// Collect implements prometheus.Collector.
func (c *News) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch}
	st := c.Server.Stats()
	var deferred uint64
	for code, n := range st.Replies {
		e.counter("triad_nntp_replies_total", "Replies sent, by status code.", n, "code", strconv.Itoa(code))
		if verb, ok := ingested[code]; ok {
			e.counter("triad_nntp_articles_ingested_total", "Articles taken (and durable and listed), by how they came.", n, "verb", verb)
		}
		if part, ok := reads[code]; ok {
			e.counter("triad_nntp_articles_read_total", "Articles served, by what was asked for.", n, "part", part)
		}
		if code == 431 || code == 436 {
			deferred += n
		}
	}
	e.counter("triad_nntp_deferrals_total", "Articles deferred (431, 436): the spool was busy; the sender tries again.", deferred)
	e.gauge("triad_nntp_connections", "Connections open.", float64(st.Connections))
	e.counter("triad_nntp_connections_accepted_total", "Connections taken.", st.Accepted)
	e.counter("triad_nntp_connections_refused_total", "Connections closed on arrival: too many, in all or from one address.", st.Refused)
	e.counter("triad_nntp_tls_refused_total", "Clients of the peers' TLS listener refused: a failed handshake (no certificate, another CA's, expired, revoked) or a certificate that names no peer.", st.TLSRefused)
	if c.Cache != nil {
		cs := c.Cache.Stats()
		e.counter("triad_nntp_cache_hits_total", "Article reads answered from the cache.", cs.Hits)
		e.counter("triad_nntp_cache_misses_total", "Article reads that went to the DHT.", cs.Misses)
		e.counter("triad_nntp_cache_evictions_total", "Articles evicted to make room.", cs.Evictions)
		e.gauge("triad_nntp_cache_bytes", "Bytes of articles in the cache.", float64(cs.Bytes))
		e.gauge("triad_nntp_cache_articles", "Articles in the cache.", float64(cs.Articles))
	}
	if c.DHT != nil {
		gs := c.DHT.GetStats()
		const help = "Articles read from the DHT (cache misses), by where: the engine of the site's own node, read in place, or a node (a holder, one round trip)."
		e.counter("triad_nntp_dht_gets_total", help, gs.LocalReads, "from", "local")
		e.counter("triad_nntp_dht_gets_total", help, gs.NodeGets, "from", "node")
		e.metric(prometheus.CounterValue, "triad_nntp_dht_node_get_seconds_total", "Time of the reads a node answered, from the request to the block.", gs.NodeGetSeconds)
	}
	if c.Site != nil {
		e.counter("triad_nntp_forged_announcements_total", "Peers' announcements refused: their headers are not those the block's key holds, or name another message-id.", c.Site.Forgeries())
	}
	if c.Feeds != nil {
		for _, p := range c.Feeds.Status() {
			connected := 0.0
			if p.Connected {
				connected = 1
			}
			e.gauge("triad_nntp_peer_connected", "1 while the feed to a peer is connected.", connected, "peer", p.Peer, "mode", p.Mode)
			e.gauge("triad_nntp_peer_backlog_articles", "Articles listed here that a peer has not taken yet.", float64(p.Backlog.Records), "peer", p.Peer)
			e.counter("triad_nntp_peer_dropped_articles_total", "Articles dropped for a peer before it took them: its backlog was full.", p.Backlog.Dropped, "peer", p.Peer)
			e.counter("triad_nntp_peer_offered_total", "Articles offered to a peer (CHECK).", p.Offered, "peer", p.Peer)
			e.counter("triad_nntp_peer_sent_total", "Articles or announcements a peer took.", p.Sent, "peer", p.Peer)
			e.counter("triad_nntp_peer_refused_total", "Articles a peer did not want or refused.", p.Refused, "peer", p.Peer)
		}
	}
}
