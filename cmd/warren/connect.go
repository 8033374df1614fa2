package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
)

// brokerConn is a client command's connection to the broker, wherever it is.
type brokerConn struct {
	NC       *nats.Conn
	URL      string        // the broker's URL as dialed; "" for an embedded one
	Creds    *broker.Creds // nil without --creds
	JS       jetstream.JetStream
	Embedded bool // an embedded broker was started for this command
	// localWorker starts an in-process worker on the embedded broker,
	// stopped when the connection closes; nil on a dialed broker.
	localWorker func(context.Context) error
	// local: localWorker runs, and is the only worker this command's
	// embedded broker can have.
	local bool
	// stampDir is the data dir of the recorded broker this connection dialed
	// ("" for any other): where its setup is stamped (setup_stamp.go).
	stampDir string
	// fit sizes the streams an embedded broker's setup creates to its
	// storage; nil on a dialed broker.
	fit     *broker.Fit
	closers []func()
}

// Close releases the connection and anything started for it, last first.
func (s *brokerConn) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// open connects a client command to the broker the user named (see
// target); with none, it starts an embedded broker on --data-dir for the
// command's duration. With needWorker, an embedded broker also gets an
// in-process worker, so work submitted to it runs.
func (g *globals) open(ctx context.Context, name string, needWorker bool) (*brokerConn, error) {
	s, err := g.connect(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if needWorker && s.localWorker != nil {
		if err := s.localWorker(ctx); err != nil {
			s.Close()
			return nil, err
		}
		s.local = true
	}
	return s, nil
}

// connect finds the broker as open does, without setting anything up
// (`warren setup` must reach streams that Setup would refuse).
func (g *globals) connect(ctx context.Context, name string) (*brokerConn, error) {
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
	return g.embeddedConn(ctx, name)
}

// dialRecorded connects to the broker at url, which must be the server of
// rec when one is given.
func (g *globals) dialRecorded(ctx context.Context, url, name string, rec *brokerRecord) (*brokerConn, error) {
	opts, creds, err := g.clientAuth()
	if err != nil {
		return nil, err
	}
	nc, err := g.dial(ctx, url, name, opts)
	if err != nil {
		return nil, err
	}
	s := &brokerConn{NC: nc, URL: url, Creds: creds, closers: []func(){nc.Close}}
	if err := checkRecorded(nc, rec, g.DataDir); err != nil {
		s.Close()
		return nil, err
	}
	if rec != nil {
		s.stampDir = g.DataDir
	}
	return s, nil
}

func (s *brokerConn) init(ctx context.Context) error {
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
	id := s.NC.ConnectedServerId()
	if s.stampDir != "" && stampedSetup(s.stampDir, id) {
		return nil // set up by an earlier command against this very server
	}
	if err := broker.CheckJetStream(ctx, js, s.NC); err != nil {
		return err
	}
	if err := setupStreams(ctx, s.NC, s.fit); err != nil {
		return err
	}
	if s.stampDir != "" {
		_ = stampSetup(s.stampDir, id) // on failure the next command sets up again
	}
	return nil
}

// setupStreams creates the streams and buckets that are missing and checks
// the others are compatible; it changes nothing an operator set (that is
// `warren setup`'s job).
// An embedded broker's streams are sized to its storage (fit, nil for a
// broker of its own).
func setupStreams(ctx context.Context, nc *nats.Conn, fit *broker.Fit) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var sc broker.StreamConfig
	if fit != nil {
		sc.MaxBytes = fit.MaxBytes
	}
	return broker.Setup(ctx, js, sc)
}
