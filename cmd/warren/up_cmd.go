//go:build !client

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
)

func (c *upCmd) Run(g *globals) error {
	link := &upLink{g: g, f: &c.brokerFlags}
	h, err := newHost(g, c.withAuthSealKey(), link)
	if err != nil {
		return err
	}
	return h.serve(g, func() {
		fmt.Fprintf(g.IO.Err, "warren up: broker on %s, worker ready; submit with `warren submit FILE` or `warren exec -- CMD`\n", link.srv.ClientURL())
	})
}

// withAuthSealKey is the worker's flags with --seal-key defaulting to the
// auth directory's key of the worker's pool (AUTH_DIR/pool-POOL.xkey, which
// `warren auth init` and `add-worker` write) when that file exists: the
// key the directory's submitters seal to.
func (c *upCmd) withAuthSealKey() workerFlags {
	f := c.workerFlags
	if f.SealKey != "" || c.AuthDir == "" {
		return f
	}
	if p := broker.PoolXKeyPath(c.AuthDir, f.Pool); fileExists(p) {
		f.SealKey = p
	}
	return f
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// upLink is `warren up`'s link: a broker of its own, started at the host's
// Start and stopped after everything else.
type upLink struct {
	g    *globals
	f    *brokerFlags
	srv  *embedded.Server
	stop func()
	nc   *nats.Conn
}

func (l *upLink) open(context.Context) (*nats.Conn, error) {
	srv, stop, err := l.f.start(l.g, "up")
	if err != nil {
		return nil, err
	}
	nc, err := l.f.connect(srv, broker.WorkerCreds)
	if err != nil {
		stop()
		return nil, err
	}
	l.srv, l.stop, l.nc = srv, stop, nc
	return nc, nil
}

func (l *upLink) close() {
	l.nc.Close()
	l.stop()
}
