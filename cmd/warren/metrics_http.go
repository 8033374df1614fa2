//go:build !client

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// readyCheck is one named readiness condition; nil means ready.
type readyCheck struct {
	name  string
	check func() error
}

// obsServer serves /metrics (Prometheus), /healthz (the process answers)
// and /readyz (every readiness check passes) on one address. New starts
// nothing; Start listens and serves in one owned goroutine; Stop is
// idempotent and waits for it.
type obsServer struct {
	addr   string
	reg    *prometheus.Registry
	checks []readyCheck
	log    zerolog.Logger

	srv      *http.Server
	ln       net.Listener
	served   sync.WaitGroup
	stopOnce sync.Once
}

// newObsServer makes a server with a registry holding the Go runtime and
// process collectors; components register their own on Registry().
func newObsServer(addr string, log zerolog.Logger) *obsServer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &obsServer{addr: addr, reg: reg, log: log.With().Str("component", "metrics").Logger()}
}

// Registry is where components register their collectors.
func (s *obsServer) Registry() prometheus.Registerer { return s.reg }

// AddReadyCheck adds a condition /readyz requires; call before Start.
func (s *obsServer) AddReadyCheck(name string, check func() error) {
	s.checks = append(s.checks, readyCheck{name, check})
}

func (s *obsServer) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("--metrics-listen %s: %w", s.addr, err)
	}
	s.ln = ln
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", s.ready)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("metrics server stopped")
		}
	}()
	s.log.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics, /healthz, /readyz")
	return nil
}

// Addr is the address listened on (after Start).
func (s *obsServer) Addr() string { return s.ln.Addr().String() }

// ready answers 200 with one "ok NAME" line per check, or 503 naming the
// first failing checks and why.
func (s *obsServer) ready(w http.ResponseWriter, _ *http.Request) {
	status, body := http.StatusOK, ""
	for _, c := range s.checks {
		if err := c.check(); err != nil {
			status = http.StatusServiceUnavailable
			body += fmt.Sprintf("fail %s: %v\n", c.name, err)
		} else {
			body += fmt.Sprintf("ok %s\n", c.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func (s *obsServer) Stop() {
	s.stopOnce.Do(func() {
		if s.srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
		s.served.Wait()
	})
}
