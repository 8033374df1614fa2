package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
)

// session is a client command's connection to the broker, wherever it is.
type session struct {
	NC       *nats.Conn
	Creds    *broker.Creds // nil without --creds
	JS       jetstream.JetStream
	Embedded bool // an embedded broker was started for this command
	closers  []func()
}

// Close releases the connection and anything started for it, last first.
func (s *session) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// open connects a client command to the broker the user named (see
// target); with none, it starts an embedded broker on --data-dir for the
// command's duration. With needWorker, an embedded broker also gets an
// in-process worker, so work submitted to it runs.
func (g *globals) open(ctx context.Context, name string, needWorker bool) (*session, error) {
	s, err := g.connect(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if needWorker && s.Embedded {
		if err := g.startLocalWorker(ctx, s); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// connect finds the broker as open does, without setting anything up
// (`warren setup` must reach streams that Setup would refuse).
func (g *globals) connect(ctx context.Context, name string) (*session, error) {
	url, rec, err := g.target()
	if err != nil {
		return nil, err
	}
	if url != "" {
		return g.dialRecorded(ctx, url, name, rec)
	}
	if g.Creds != "" {
		return nil, fmt.Errorf("--creds is for an authenticated broker, and none was named: pass --nats (or WARREN_NATS_URL)")
	}
	s := &session{}
	srv, err := embedded.New(embedded.Config{DataDir: g.DataDir, DontListen: true, Logger: g.Log.Level(max(g.Log.GetLevel(), zerolog.WarnLevel))})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, srv.Stop)
	nc, err := srv.Connect(nats.Name(name))
	if err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, nc.Close)
	s.NC, s.Embedded = nc, true
	g.Log.Debug().Str("data_dir", g.DataDir).Msg("no broker reachable: using an embedded one")
	return s, nil
}

// dialChecked connects to the broker at url, which must be the server of
// rec when one is given, and sets up the streams.
func (g *globals) dialChecked(ctx context.Context, url, name string, rec *brokerRecord) (*session, error) {
	s, err := g.dialRecorded(ctx, url, name, rec)
	if err != nil {
		return nil, err
	}
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// dialRecorded connects to the broker at url, which must be the server of
// rec when one is given.
func (g *globals) dialRecorded(ctx context.Context, url, name string, rec *brokerRecord) (*session, error) {
	opts, creds, err := g.clientAuth()
	if err != nil {
		return nil, err
	}
	nc, err := broker.Connect(ctx, url, name, opts...)
	if err != nil {
		return nil, err
	}
	s := &session{NC: nc, Creds: creds, closers: []func(){nc.Close}}
	if err := checkRecorded(nc, rec, g.DataDir); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *session) init(ctx context.Context) error {
	if s.tenant() != "" {
		// A tenant reaches the fleet's streams through its account's
		// imports; setting them up is the admin's job.
		js, err := jetstream.NewWithAPIPrefix(s.NC, broker.TenantAPIPrefix)
		s.JS = js
		return err
	}
	js, err := jetstream.New(s.NC)
	if err != nil {
		return err
	}
	s.JS = js
	if err := broker.CheckJetStream(ctx, js, s.NC); err != nil {
		return err
	}
	return setupStreams(ctx, s.NC)
}

// setupStreams creates the streams and buckets that are missing and checks
// the others are compatible; it changes nothing an operator set (that is
// `warren setup`'s job).
func setupStreams(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return broker.Setup(ctx, js, broker.StreamConfig{})
}

// startLocalWorker runs an in-process worker on an embedded broker, with
// the default (fail-closed) isolation, stopped when the session closes.
func (g *globals) startLocalWorker(ctx context.Context, s *session) error {
	// A key of its own for secrets: the broker does not listen, so the key
	// it publishes in the registry can only be this worker's.
	key, err := nkeys.CreateCurveKeys()
	if err != nil {
		return err
	}
	f := workerFlags{Pool: messages.DefaultPool, Profiles: []string{messages.DefaultProfile}, Isolation: "auto", pullWait: 250 * time.Millisecond, sealKey: key}
	quiet := *g
	quiet.Log = g.Log.Level(max(g.Log.GetLevel(), zerolog.WarnLevel))
	h, err := newHost(&quiet, f, sessionLink{s})
	if err == nil {
		err = h.Start(ctx)
	}
	if err != nil {
		return fmt.Errorf("no broker is running, and an in-process worker could not start: %w", err)
	}
	s.closers = append(s.closers, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Stop(stopCtx)
	})
	return nil
}

// sessionLink is the link of a client's in-process worker: the client's
// session owns the embedded broker and the connection, and closes them
// after the host has stopped.
type sessionLink struct{ s *session }

func (l sessionLink) open(context.Context) (*nats.Conn, error) { return l.s.NC, nil }
func (sessionLink) close()                                     {}

func splitHostPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("--listen %q: %w (want host:port)", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("--listen %q: bad port", addr)
	}
	return host, port, nil
}
