//go:build !client

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
)

// embeddedConn is a client command's connection when no broker runs: an
// embedded broker on --data-dir that does not listen, for the command's
// duration, which can start an in-process worker (the client build execs
// warren-host instead: host_exec.go).
func (g *globals) embeddedConn(ctx context.Context, name string) (*brokerConn, error) {
	s := &brokerConn{}
	srv, err := embedded.New(embedded.Config{DataDir: g.DataDir, DontListen: true, Logger: g.Log.Level(max(g.Log.GetLevel(), zerolog.WarnLevel))})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		if errors.Is(err, embedded.ErrDataDirInUse) {
			// Another command with no broker to dial started its own
			// embedded one on this store, and they cannot share it.
			return nil, fmt.Errorf("no broker is running for --data-dir %s, and another command's embedded broker holds it: run `warren up` (commands then share its broker), or give each command its own --data-dir (%w)", g.DataDir, err)
		}
		return nil, err
	}
	s.closers = append(s.closers, srv.Stop)
	nc, err := srv.Connect(nats.Name(name))
	if err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, nc.Close)
	fit, err := fitTo(g, srv, zerolog.DebugLevel)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.NC, s.Embedded, s.fit = nc, true, fit
	s.localWorker = func(ctx context.Context) error { return g.startLocalWorker(ctx, s) }
	g.Log.Debug().Str("data_dir", g.DataDir).Msg("no broker reachable: using an embedded one")
	return s, nil
}

// startLocalWorker runs an in-process worker on an embedded broker, with
// the default (fail-closed) isolation, stopped when the connection closes.
func (g *globals) startLocalWorker(ctx context.Context, s *brokerConn) error {
	// A key of its own for secrets: the broker does not listen, so the key
	// it publishes in the registry can only be this worker's.
	key, err := nkeys.CreateCurveKeys()
	if err != nil {
		return err
	}
	f := workerFlags{Pool: messages.DefaultPool, Profiles: []string{messages.DefaultProfile}, Isolation: "auto", pullWait: 250 * time.Millisecond, sealKey: key}
	quiet := *g
	quiet.Log = g.Log.Level(max(g.Log.GetLevel(), zerolog.WarnLevel))
	h, err := newHost(&quiet, f, clientLink{s})
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

// clientLink is the link of a client's in-process worker: the client's
// connection owns the embedded broker and the NATS connection, and closes them
// after the host has stopped.
type clientLink struct{ s *brokerConn }

func (l clientLink) open(context.Context) (*nats.Conn, error) { return l.s.NC, nil }
func (clientLink) close()                                     {}

// hostIfNoBroker runs before a command that reaches a broker. This build
// has the embedded broker, so there is nothing to do: the command starts
// one when it connects and finds none (embeddedConn).
func (g *globals) hostIfNoBroker() error { return nil }

// fitTo sizes the fleet's streams to an embedded broker's storage, saying
// so at level when the defaults do not fit (`warren up` warns; a one-off
// command's broker, started for each command, only logs it at debug).
func fitTo(g *globals, srv *embedded.Server, level zerolog.Level) (*broker.Fit, error) {
	f := broker.FitStorage(srv.StoreLimit())
	if why := f.TooSmall(); why != "" {
		return nil, fmt.Errorf("--data-dir %s: %s", g.DataDir, why)
	}
	if f.Scaled {
		g.Log.WithLevel(level).Str("data_dir", g.DataDir).Msg(f.String())
	}
	return &f, nil
}
