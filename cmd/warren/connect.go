package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
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
	url := g.NATS
	if url == "" && broker.Reachable(ctx, localURL) {
		url = localURL
	}
	s := &session{}
	if url != "" {
		nc, err := broker.Connect(ctx, url, name)
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, nc.Close)
		s.NC = nc
	} else {
		srv, err := broker.NewServer(broker.Config{DataDir: g.DataDir, DontListen: true, Logger: g.Log})
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
	}
	js, err := jetstream.New(s.NC)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.JS = js
	setupCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := broker.Setup(setupCtx, js, broker.StreamConfig{}); err != nil {
		s.Close()
		return nil, err
	}
	if s.Embedded && needWorker {
		if err := g.startLocalWorker(ctx, s); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// startLocalWorker runs an in-process worker on an embedded broker.
func (g *globals) startLocalWorker(_ context.Context, _ *session) error {
	return fmt.Errorf("no broker is running and the in-process worker is not available yet; start `warren up` or pass --nats")
}
