//go:build !client

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
)

// cluster is the cluster configuration the flags ask for, or nil.
func (f *brokerFlags) cluster() (*embedded.ClusterConfig, error) {
	if f.Cluster == "" {
		if len(f.Routes) > 0 {
			return nil, fmt.Errorf("--routes needs --cluster NAME")
		}
		return nil, nil
	}
	if f.Name == "" {
		return nil, fmt.Errorf("--cluster needs --name: every node of a cluster has its own")
	}
	if len(f.Routes) == 0 {
		return nil, fmt.Errorf("--cluster needs --routes: the other nodes' nats-route://host:port")
	}
	host, port, err := splitHostPort(f.ClusterListen)
	if err != nil {
		return nil, fmt.Errorf("--cluster-listen: %w", err)
	}
	return &embedded.ClusterConfig{Name: f.Cluster, Host: host, Port: port, Routes: f.Routes}, nil
}

// start runs the broker, sets up the streams and records the broker's
// address in the data dir (see target); stop undoes all of it.
func (f *brokerFlags) start(g *globals, cmd string) (srv *embedded.Server, stop func(), err error) {
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

func (f *brokerFlags) startServer(g *globals) (*embedded.Server, error) {
	host, port, err := splitHostPort(f.Listen)
	if err != nil {
		return nil, err
	}
	cl, err := f.cluster()
	if err != nil {
		return nil, err
	}
	cfg := embedded.Config{DataDir: g.DataDir, Host: host, Port: port, Name: f.Name, Cluster: cl, Logger: g.Log, TLS: broker.TLSFiles{Cert: f.TLSCert, Key: f.TLSKey}}
	var auth *broker.AuthDir
	if f.AuthDir != "" {
		if auth, err = broker.OpenAuthDir(f.AuthDir); err != nil {
			return nil, err
		}
		cfg.ConfigFile = auth.ServerConf()
	}
	if err := checkExposure(f, host, auth); err != nil {
		return nil, err
	}
	var srv *embedded.Server
	cfg.AfterRestart = func() { rerecord(g, srv) }
	if auth != nil {
		// A tenant added or changed reaches the server as a reload, a
		// quota changed as a new auth.json; its streams and quota follow
		// at once.
		cfg.AfterReload = func() { f.setupTenants(g, srv) }
		cfg.AlsoWatch = []string{filepath.Join(f.AuthDir, broker.AuthStateFile)}
	}
	srv, err = embedded.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(g.Ctx); err != nil {
		if errors.Is(err, embedded.ErrDataDirInUse) {
			return nil, fmt.Errorf("stop the broker that holds --data-dir %s (or let it finish), or give this one its own --data-dir (%w)", g.DataDir, err)
		}
		return nil, err
	}
	if cl != nil {
		// A node alone has no JetStream meta leader until its peers are
		// up: workers, clients and `warren setup` create the streams.
		return srv, nil
	}
	nc, err := f.connect(srv, broker.AdminCreds)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	defer nc.Close()
	fit, err := fitTo(g, srv, zerolog.WarnLevel)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	if err := setupStreams(g.Ctx, nc, fit); err != nil {
		// Incompatible streams: serve anyway, so `warren setup --nats`
		// can fix them; workers and clients refuse until then.
		var inc *broker.IncompatibleError
		if errors.As(err, &inc) {
			g.Log.Warn().Err(err).Msg("serving, but workers and clients will refuse these streams until `warren setup`")
			return srv, nil
		}
		srv.Stop()
		return nil, err
	}
	if auth != nil {
		f.setupTenants(g, srv)
	}
	return srv, nil
}

// setupTenants gives every tenant of the auth directory its streams and
// buckets with its quota's limits (broker.SetupTenants), as the admin;
// what fails is logged, and tried again at the next change.
func (f *brokerFlags) setupTenants(g *globals, srv *embedded.Server) {
	d, err := broker.OpenAuthDir(f.AuthDir)
	if err != nil {
		g.Log.Error().Err(err).Msg("tenants not set up")
		return
	}
	nc, err := f.connect(srv, broker.AdminCreds)
	if err != nil {
		g.Log.Error().Err(err).Msg("tenants not set up")
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		g.Log.Error().Err(err).Msg("tenants not set up")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changes, err := broker.SetupTenants(ctx, js, broker.StreamConfig{}, d.Tenants(), false)
	for _, c := range changes {
		g.Log.Info().Str("change", c.String()).Msg("tenant setup")
	}
	if err != nil {
		g.Log.Error().Err(err).Msg("tenants not set up; fix the cause and change the auth directory, or run `warren setup --auth-dir`")
	}
}

// connect opens an in-process connection, with the auth directory's creds
// file when there is one.
func (f *brokerFlags) connect(srv *embedded.Server, creds string) (*nats.Conn, error) {
	if f.AuthDir == "" {
		return srv.Connect()
	}
	opt, err := nats.NkeyOptionFromSeed(f.AuthDir + "/" + creds)
	if err != nil {
		return nil, fmt.Errorf("--auth-dir: %w", err)
	}
	return srv.Connect(opt)
}

func (c *brokerCmd) Run(g *globals) error {
	srv, stop, err := c.start(g, "broker")
	if err != nil {
		if g.Ctx.Err() != nil {
			return nil // stopped while starting: a stop, not a failure
		}
		return err
	}
	defer stop()
	fmt.Fprintf(g.IO.Err, "warren broker listening on %s (store %s); stop with Ctrl-C\n", srv.ClientURL(), g.DataDir)
	<-g.Ctx.Done()
	return nil
}

// refuseNATS is for commands that run their own broker, which --nats would
// otherwise be silently ignored by.
func (g *globals) refuseNATS(cmd string) error {
	if g.NATS == "" {
		return nil
	}
	return fmt.Errorf("`warren %s` runs its own broker, so --nats (or WARREN_NATS_URL) %q would be ignored: drop it, or run `warren worker --nats %s` to serve that broker", cmd, g.NATS, g.NATS)
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
