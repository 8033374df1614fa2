package main

import (
	"fmt"

	"github.com/warrenhq/warren/broker"
)

// brokerFlags configure the embedded broker; shared by `broker` and `up`.
type brokerFlags struct {
	Listen string `help:"Address the broker listens on (host:port). Use 0.0.0.0:4222 to let other hosts join." default:"127.0.0.1:4222"`
}

// start runs the broker, sets up the streams and records the broker's
// address in the data dir (see target); stop undoes all of it.
func (f *brokerFlags) start(g *globals, cmd string) (srv *broker.Server, stop func(), err error) {
	if err := g.refuseNATS(cmd); err != nil {
		return nil, nil, err
	}
	srv, err = f.startServer(g)
	if err != nil {
		return nil, nil, err
	}
	forget, err := writeBrokerRecord(g.DataDir, srv)
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	return srv, func() { forget(); srv.Stop() }, nil
}

func (f *brokerFlags) startServer(g *globals) (*broker.Server, error) {
	host, port, err := splitHostPort(f.Listen)
	if err != nil {
		return nil, err
	}
	srv, err := broker.NewServer(broker.Config{DataDir: g.DataDir, Host: host, Port: port, Logger: g.Log})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(g.Ctx); err != nil {
		return nil, err
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Stop()
		return nil, err
	}
	defer nc.Close()
	if err := setupStreams(g.Ctx, nc); err != nil {
		srv.Stop()
		return nil, err
	}
	return srv, nil
}

type brokerCmd struct {
	brokerFlags
}

func (c *brokerCmd) Run(g *globals) error {
	srv, stop, err := c.start(g, "broker")
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(g.IO.Err, "warren broker listening on %s (store %s); stop with Ctrl-C\n", srv.ClientURL(), g.DataDir)
	<-g.Ctx.Done()
	return nil
}

type upCmd struct {
	brokerFlags
	workerFlags
}

func (c *upCmd) Run(g *globals) error {
	srv, stop, err := c.start(g, "up")
	if err != nil {
		return err
	}
	defer stop()
	nc, err := srv.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	w, err := c.buildWorker(g.Ctx, g, nc)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Err, "warren up: broker on %s, worker ready; submit with `warren submit FILE` or `warren exec -- CMD`\n", srv.ClientURL())
	return c.serve(g, w)
}
