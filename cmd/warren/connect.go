package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// localURL is where `warren up` and `warren broker` listen by default.
var localURL = fmt.Sprintf("nats://127.0.0.1:%d", broker.DefaultPort)

// session is a client command's connection to the broker, wherever it is.
type session struct {
	NC       *nats.Conn
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

// open connects a client command: to --nats when given; else to a local
// broker on 127.0.0.1:4222 when one runs; else it starts an embedded broker
// on --data-dir for the command's duration. With needWorker, an embedded
// broker also gets an in-process worker, so work submitted to it runs.
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

// connect finds the broker as open does, without setting anything up.
func (g *globals) connect(ctx context.Context, name string) (*session, error) {
	url := g.NATS
	if url == "" && broker.Reachable(ctx, localURL) {
		url = localURL
	}
	if url != "" {
		nc, err := broker.Connect(ctx, url, name)
		if err != nil {
			return nil, err
		}
		return &session{NC: nc, closers: []func(){nc.Close}}, nil
	}
	s := &session{}
	srv, err := broker.NewServer(broker.Config{DataDir: g.DataDir, DontListen: true, Logger: g.Log.Level(max(g.Log.GetLevel(), zerolog.WarnLevel))})
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

// dial connects to the broker at url.
func (g *globals) dial(ctx context.Context, url, name string) (*session, error) {
	nc, err := broker.Connect(ctx, url, name)
	if err != nil {
		return nil, err
	}
	s := &session{NC: nc, closers: []func(){nc.Close}}
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *session) init(ctx context.Context) error {
	js, err := jetstream.New(s.NC)
	if err != nil {
		return err
	}
	s.JS = js
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
	f := workerFlags{Pool: messages.DefaultPool, Profiles: []string{messages.DefaultProfile}, Isolation: "auto", pullWait: 250 * time.Millisecond}
	quiet := *g
	quiet.Log = g.Log.Level(max(g.Log.GetLevel(), zerolog.WarnLevel))
	w, err := f.buildWorker(ctx, &quiet, s.NC)
	if err != nil {
		return fmt.Errorf("no broker is running, and an in-process worker could not start: %w", err)
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	s.closers = append(s.closers, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(stopCtx)
		_ = f.runner.Close() // warm sandboxes must not outlive the worker
	})
	return nil
}

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
