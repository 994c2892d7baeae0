package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry is a daemon's registry: the Go runtime's and the process's
// collectors, and cs.
func NewRegistry(cs ...prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range cs {
		r.MustRegister(c)
	}
	return r
}

// Limits of the HTTP server: it serves operators and Prometheus, a few
// clients at a time, and must not become a way to exhaust the daemon.
const (
	maxHTTPConns      = 64
	httpHeaderTimeout = 5 * time.Second
	httpReadTimeout   = 10 * time.Second // a request's body too: one that never comes cannot hold a slot
	httpWriteTimeout  = 30 * time.Second
	httpIdleTimeout   = 10 * time.Second
	maxHeaderBytes    = 16 << 10
)

// Server is a daemon's HTTP server: /metrics and whatever else is
// registered on Mux (the status page).
type Server struct {
	Mux      *http.ServeMux
	Registry *prometheus.Registry // more collectors may be registered while it runs
	Addr     string               // where it listens, once Listen returned
	srv      *http.Server
	done     chan error
}

// Listen starts serving r's metrics at /metrics on addr (host:port).
func Listen(addr string, r *prometheus.Registry) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	s := &Server{Mux: mux, Registry: r, Addr: ln.Addr().String(), done: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: httpHeaderTimeout, ReadTimeout: httpReadTimeout, WriteTimeout: httpWriteTimeout,
			IdleTimeout: httpIdleTimeout, MaxHeaderBytes: maxHeaderBytes}}
	go func() {
		err := s.srv.Serve(&limitedListener{Listener: ln, slots: make(chan struct{}, maxHTTPConns)})
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Close stops the server, waiting a little for requests being answered.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	return errors.Join(err, <-s.done)
}

// limitedListener holds at most cap(slots) connections open: one more is
// closed as it arrives (Accept never blocks on the limit, so the server
// keeps answering as soon as a slot frees).
type limitedListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			c.Close()
		}
	}
}

type limitedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
