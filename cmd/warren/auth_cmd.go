package main

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// authCmd manages an auth directory: keys, creds files and the broker's
// server configuration (see docs/security.md, "The bus").
type authCmd struct {
	Init         authInitCmd   `cmd:"" help:"Create keys, admin.creds, worker.creds and server.conf in --dir (and, with --tls, a private CA and server certificate)."`
	AddTenant    authAddCmd    `cmd:"" name:"add-tenant" help:"Add a tenant: its own account and its own streams and buckets, bounded by --quota; writes DIR/NAME.creds."`
	AddSubmitter authAddCmd    `cmd:"" name:"add-submitter" help:"Same as add-tenant."`
	Quota        authQuotaCmd  `cmd:"" help:"Show a tenant's quota, or change it: warren auth quota NAME key=value,..."`
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
	Name  string `arg:"" help:"Tenant name: 1-32 of a-z 0-9 _ -; its batches are named NAME.<batch>."`
	Quota string `help:"Limits, key=value,...: task_bytes, task_msgs, result_bytes, manifest_bytes, cancel_bytes, output_bytes, input_bytes, verdict_bytes, dead_bytes, consumers (the server's), running, sessions, session_ttl, weight (the workers', per host). Unset keys take the defaults (docs/security.md, Quotas)."`
}

func (c *authAddCmd) Run(g *globals) error {
	q, err := messages.ParseQuota(c.Quota, messages.TenantQuota{})
	if err != nil {
		return err
	}
	d, err := broker.OpenAuthDir(c.Dir)
	if err != nil {
		return err
	}
	path, err := d.AddSubmitter(c.Name)
	if err != nil {
		return err
	}
	if err := d.SetQuota(c.Name, q); err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Out, "%s\n", path)
	fmt.Fprintf(g.IO.Err, "tenant %s: quota %s\n%s\n", c.Name, q.WithDefaults(), tenantSetupHint(c.Dir))
	return nil
}

// tenantSetupHint says who creates a tenant's streams on the broker.
func tenantSetupHint(dir string) string {
	return fmt.Sprintf("a broker running with --auth-dir %s creates its streams and applies its quota within a second; on another broker: warren setup --auth-dir %s --creds %s/admin.creds", dir, dir, dir)
}

type authQuotaCmd struct {
	authDirFlag
	Name string `arg:"" help:"Tenant (see warren auth ls)."`
	Set  string `arg:"" optional:"" help:"Limits to change, key=value,... (as add-tenant --quota); the others keep their values."`
}

func (c *authQuotaCmd) Run(g *globals) error {
	d, err := broker.OpenAuthDir(c.Dir)
	if err != nil {
		return err
	}
	var have messages.TenantQuota
	for _, t := range d.Tenants() {
		if t.Name == c.Name {
			have = t.Quota
		}
	}
	if c.Set == "" {
		fmt.Fprintf(g.IO.Out, "%s\n", have.WithDefaults())
		return nil
	}
	q, err := messages.ParseQuota(c.Set, have)
	if err != nil {
		return err
	}
	if err := d.SetQuota(c.Name, q); err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Out, "%s\n", q.WithDefaults())
	fmt.Fprintln(g.IO.Err, tenantSetupHint(c.Dir))
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
