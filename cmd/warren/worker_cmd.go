//go:build !client

package main

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/broker"
)

// dialedLink is `warren worker`'s link: a remote broker, dialed at Start.
type dialedLink struct {
	g    *globals
	url  string
	rec  *brokerRecord
	conn *brokerConn
}

func (l *dialedLink) open(ctx context.Context) (*nats.Conn, error) {
	conn, err := l.g.dialChecked(ctx, l.url, "warren-worker", l.rec)
	if err != nil {
		return nil, err
	}
	l.conn = conn
	return conn.NC, nil
}

func (l *dialedLink) close() { l.conn.Close() }

func (c *workerCmd) Run(g *globals) error {
	url, rec, err := g.target()
	if err != nil {
		return err
	}
	if url == "" {
		return fmt.Errorf("no broker to serve: pass --nats URL (or set WARREN_NATS_URL), or start `warren broker` with this --data-dir (%s)", g.DataDir)
	}
	if c, err := g.loadCreds(); err != nil {
		return err
	} else if c != nil && c.Role != broker.RoleWorker && c.Role != broker.RoleAdmin {
		return fmt.Errorf("--creds %s are %s credentials; a worker needs a worker's (AUTH_DIR/%s)", g.Creds, c.Role, broker.WorkerCreds)
	}
	h, err := newHost(g, c.workerFlags, &dialedLink{g: g, url: url, rec: rec})
	if err != nil {
		return err
	}
	return h.serve(g, nil)
}

// dialChecked connects to the broker at url, which must be the server of
// rec when one is given, and sets up the streams.
func (g *globals) dialChecked(ctx context.Context, url, name string, rec *brokerRecord) (*brokerConn, error) {
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
