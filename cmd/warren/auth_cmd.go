package main

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/warrenhq/warren/broker"
)

// authCmd manages an auth directory: keys, creds files and the broker's
// server configuration (see docs/security.md, "The bus").
type authCmd struct {
	Init         authInitCmd   `cmd:"" help:"Create keys, admin.creds, worker.creds and server.conf in --dir (and, with --tls, a private CA and server certificate)."`
	AddSubmitter authAddCmd    `cmd:"" name:"add-submitter" help:"Add a submitter tenant: its own account; writes DIR/NAME.creds."`
	AddWorker    authWorkerCmd `cmd:"" name:"add-worker" help:"Add worker credentials for a pool; writes DIR/NAME.creds (and the pool's curve key if new)."`
	Ls           authLsCmd     `cmd:"" help:"List the principals of --dir."`
	Revoke       authRevokeCmd `cmd:"" help:"Revoke a principal; a broker started with --auth-dir reloads and disconnects it."`
}

type authDirFlag struct {
	Dir string `name:"dir" required:"" env:"WARREN_AUTH_DIR" help:"Auth directory (keys and server.conf; keep it private)." type:"path"`
}

type authInitCmd struct {
	authDirFlag
	Pool     string   `help:"Pool the worker credentials serve." default:"default"`
	TLS      bool     `name:"tls" help:"Also make a private CA and a server certificate (DIR/tls/) for a test fleet; clients pass --tls-ca DIR/tls/ca.pem."`
	TLSHosts []string `name:"tls-host" help:"Extra DNS name or IP address for the server certificate (repeatable; localhost, loopback and this host's name are always in it). Implies --tls."`
}

func (c *authInitCmd) Run(g *globals) error {
	d, err := broker.InitAuthDir(c.Dir, broker.InitOptions{Pool: c.Pool, TLS: c.TLS, TLSHosts: c.TLSHosts})
	if err != nil {
		return err
	}
	w := g.IO.Out
	fmt.Fprintf(w, "auth directory %s\n", d.Dir)
	fmt.Fprintf(w, "  %s  admin: streams and everything else\n", filepath.Join(d.Dir, broker.AdminCreds))
	fmt.Fprintf(w, "  %s  workers of pool %s\n", filepath.Join(d.Dir, broker.WorkerCreds), c.Pool)
	fmt.Fprintf(w, "  %s  public curve key of pool %s (for sealed secrets): %s\n", filepath.Join(d.Dir, "pool-"+c.Pool+".xkey"), c.Pool, d.State.PoolXKeys[c.Pool])
	if d.State.TLS != nil {
		fmt.Fprintf(w, "  %s  the CA clients verify the broker with (--tls-ca)\n", d.State.TLS.CA)
	}
	fmt.Fprintf(w, "  %s  nats-server configuration\n", d.ServerConf())
	if d.State.TLS != nil {
		fmt.Fprintf(w, "next: warren broker --auth-dir %s --listen 0.0.0.0:4222; warren auth add-submitter NAME --dir %s\n", c.Dir, c.Dir)
	} else {
		fmt.Fprintf(w, "next: warren broker --auth-dir %s (loopback; beyond it add --tls-cert/--tls-key, or init with --tls); warren auth add-submitter NAME --dir %s\n", c.Dir, c.Dir)
	}
	return nil
}

type authAddCmd struct {
	authDirFlag
	Name string `arg:"" help:"Tenant name: 1-32 of a-z 0-9 _ -; its batches are named NAME.<batch>."`
}

func (c *authAddCmd) Run(g *globals) error {
	d, err := broker.OpenAuthDir(c.Dir)
	if err != nil {
		return err
	}
	path, err := d.AddSubmitter(c.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Out, "%s\n", path)
	return nil
}

type authWorkerCmd struct {
	authDirFlag
	Name string `arg:"" help:"Name of the credentials (file NAME.creds): 1-32 of a-z 0-9 _ -."`
	Pool string `help:"Pool the workers serve." default:"default"`
}

func (c *authWorkerCmd) Run(g *globals) error {
	d, err := broker.OpenAuthDir(c.Dir)
	if err != nil {
		return err
	}
	path, err := d.AddWorker(c.Name, c.Pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Out, "%s\n", path)
	return nil
}

type authLsCmd struct {
	authDirFlag
}

func (c *authLsCmd) Run(g *globals) error {
	d, err := broker.OpenAuthDir(c.Dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(g.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tPOOL/TENANT\tPUBLIC KEY\tSTATE")
	for _, p := range d.State.Principals {
		scope := p.Pool
		if t := p.Tenant(); t != "" {
			scope = t
		}
		state := "active"
		if p.Revoked() {
			state = "revoked " + p.RevokedAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Role, scope, p.PublicKey, state)
	}
	return tw.Flush()
}

type authRevokeCmd struct {
	authDirFlag
	Name string `arg:"" help:"Principal to revoke (see warren auth ls)."`
}

func (c *authRevokeCmd) Run(g *globals) error {
	d, err := broker.OpenAuthDir(c.Dir)
	if err != nil {
		return err
	}
	if err := d.Revoke(c.Name); err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Err, "revoked %s; a broker running with --auth-dir %s reloads within a second (a stock nats-server: nats-server --signal reload)\n", c.Name, c.Dir)
	return nil
}
