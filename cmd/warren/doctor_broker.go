//go:build !client

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/sandbox"
)

// brokerChecks reports the broker side of a fleet: the connection (TLS,
// authentication), JetStream, the cluster, and every stream, bucket and
// object store Warren owns (present, replicas, compatible), changing
// nothing. The checks use the sandbox report's shape so doctor prints one
// table.
func brokerChecks(ctx context.Context, g *globals, url string) []sandbox.Check {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out []sandbox.Check
	add := func(name string, ok bool, detail, fix string) {
		out = append(out, sandbox.Check{Name: name, OK: ok, Detail: detail, Fix: fix})
	}
	now := *g
	now.RetryFor = 0 // the broker as it is now: a broker away is reported, not waited for
	s, err := now.connect(ctx, "warren-doctor")
	if err != nil {
		add("broker", false, fmt.Sprintf("%s: %v", url, err), "check the URL, --creds and --tls-ca (warren auth init writes both)")
		return out
	}
	defer s.Close()
	nc := s.NC
	conn := fmt.Sprintf("%s, server %s", nc.ConnectedUrlRedacted(), nc.ConnectedServerName())
	if v := nc.ConnectedServerVersion(); v != "" {
		conn += " " + v
	}
	add("broker", true, conn, "")
	tlsOn := strings.HasPrefix(nc.ConnectedUrl(), "tls://") || nc.TLSRequired()
	if _, err := nc.TLSConnectionState(); err == nil {
		tlsOn = true
	}
	add("broker TLS", tlsOn || isLoopbackURL(nc.ConnectedUrl()), onOff(tlsOn, "TLS, server verified", "plaintext"),
		"serve TLS (warren auth init --tls, or --tls-cert/--tls-key) and pass --tls-ca to clients")
	who := "no credentials"
	if s.Creds != nil {
		who = fmt.Sprintf("%s credentials", s.Creds.Role)
		if s.Creds.Tenant != "" {
			who += " of tenant " + s.Creds.Tenant
		}
	}
	add("broker auth", nc.AuthRequired() || isLoopbackURL(nc.ConnectedUrl()), onOff(nc.AuthRequired(), "required; connected with "+who, "not required: anyone who reaches the port can run code on every worker"),
		"run the broker with --auth-dir (warren auth init)")
	if s.tenant() != "" {
		add("streams", true, "not visible to a tenant (the admin's: warren doctor --creds admin.creds)", "")
		return out
	}
	js, err := jetstream.New(nc)
	if err != nil {
		add("JetStream", false, err.Error(), "")
		return out
	}
	if err := broker.CheckJetStream(ctx, js, nc); err != nil {
		add("JetStream", false, err.Error(), "start nats-server with -js (or jetstream: enabled)")
		return out
	}
	size := broker.ClusterSize(js)
	cluster := "a single server"
	if name := nc.ConnectedClusterName(); name != "" {
		cluster = fmt.Sprintf("cluster %s of %d servers", name, size)
	}
	add("JetStream", true, cluster, "")
	add("JetStream storage", true, storageDetail(ctx, js), "")
	sts, err := broker.Check(ctx, js, broker.StreamConfig{})
	if err != nil {
		add("streams", false, err.Error(), "connect with admin credentials (--creds admin.creds)")
		return out
	}
	for _, st := range sts {
		name := st.Kind + " " + st.Name
		switch {
		case st.Missing:
			add(name, true, "missing: the first worker or client creates it", "")
		case len(st.Incompatible) > 0:
			var diffs []string
			for _, c := range st.Incompatible {
				diffs = append(diffs, fmt.Sprintf("%s is %s, Warren needs %s", c.Field, c.Have, c.Want))
			}
			add(name, false, strings.Join(diffs, "; "), "`warren setup --dry-run` shows the change, `warren setup` makes it (workers and clients refuse these streams until then)")
		default:
			detail := fmt.Sprintf("%d replica(s), compatible", st.Replicas)
			if st.Replicas < size && size > 1 {
				detail += fmt.Sprintf("; fewer replicas than servers: `warren setup --replicas %d`", min(size, 3))
			}
			for _, c := range st.Tunables {
				if c.Field != "num_replicas" {
					detail += fmt.Sprintf("; %s %s (operator's, default %s)", c.Field, c.Have, c.Want)
				}
			}
			add(name, true, detail, "")
		}
	}
	return out
}

// storageDetail says what the streams reserve (their byte limits) and
// store, against the defaults' total and the account's limit when it has
// one (a server's own max_file_store is not visible to clients).
func storageDetail(ctx context.Context, js jetstream.JetStream) string {
	var reserved, stored uint64
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		if info.Config.MaxBytes > 0 {
			reserved += uint64(info.Config.MaxBytes) * uint64(max(info.Config.Replicas, 1))
		}
		stored += info.State.Bytes
	}
	d := fmt.Sprintf("streams and buckets reserve %s and store %s (Warren's defaults reserve %s per replica; `warren setup --max-bytes` changes them)",
		humanBytes(reserved), humanBytes(stored), humanBytes(uint64(broker.DefaultReservation())))
	if ai, err := js.AccountInfo(ctx); err == nil && ai.Limits.MaxStore > 0 {
		d += fmt.Sprintf("; the account may store %s", humanBytes(uint64(ai.Limits.MaxStore)))
	}
	return d
}

// humanBytes prints n to one decimal of its unit.
func humanBytes(n uint64) string {
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB"} {
		if m := uint64(1) << (10 * (4 - i)); n >= m {
			return fmt.Sprintf("%.1f %s", float64(n)/float64(m), unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}

func onOff(on bool, yes, no string) string {
	if on {
		return yes
	}
	return no
}

// isLoopbackURL reports whether a broker URL names this host (where
// plaintext without authentication is the single-machine default).
func isLoopbackURL(u string) bool {
	for _, h := range []string{"://127.", "://localhost", "://[::1]"} {
		if strings.Contains(u, h) {
			return true
		}
	}
	return false
}
