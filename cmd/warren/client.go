package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/warrenhq/warren/scheduler"
)

// newSchedulerClient is a scheduler client on s configured by the
// globals; tune adjusts its config. Without --pool-key, secrets are
// sealed to the keys registryKeys finds.
func newSchedulerClient(g *globals, s *brokerConn, tune ...func(*scheduler.Config)) (*scheduler.Client, error) {
	cfg := scheduler.Config{Logger: g.Log, RetryFor: g.RetryFor, InboxPrefixes: g.InboxPrefixes, APIPrefix: s.apiPrefix(), Tenant: s.tenant(),
		OnOutage: newOutageReport(g.IO.Err, s.NC.ConnectedUrlRedacted(), g.RetryFor).note}
	for _, f := range tune {
		f(&cfg)
	}
	if len(g.PoolKeys) > 0 {
		keys, err := scheduler.ParsePoolKeys(g.PoolKeys)
		if err != nil {
			return nil, fmt.Errorf("--pool-key: %w", err)
		}
		cfg.PoolKeys = keys
	}
	c, err := scheduler.New(s.NC, cfg)
	if err != nil || cfg.PoolKeys != nil {
		return c, err
	}
	cfg.PoolKeys = g.registryKeys(s, c)
	return scheduler.New(s.NC, cfg)
}

// registryKeys is where an unpinned client finds a pool's seal key: the
// key the pool's workers publish in the host registry, pinned on first use
// in the data dir (pinned-pool-keys.json) and refused when it changes. On
// an embedded broker it is taken as it is: the broker does not listen, so
// only this command's own worker (with a new key each time) wrote it.
func (g *globals) registryKeys(s *brokerConn, c *scheduler.Client) scheduler.PoolKeys {
	if s.Embedded {
		return scheduler.RegistryPoolKeys{Client: c}
	}
	return scheduler.PinnedPoolKeys{Client: c, Pins: g.pins(s.URL), Broker: s.URL, Repin: g.repinCommand(s.URL),
		OnFirstUse: func(pool string, pin scheduler.Pin) {
			g.Log.Warn().Str("pool", pool).Str("key", pin.Key).Str("fingerprint", scheduler.KeyFingerprint(pin.Key)).Str("broker", s.URL).
				Msg("pinned the seal key the pool's workers publish in the host registry on first use: secrets for this pool are sealed to it from now on, and a host publishing another key is refused (`warren keys pin` changes it)")
		}}
}

// repinCommand is the `warren keys pin` that pins a key for the broker at
// url in this command's data dir.
func (g *globals) repinCommand(url string) func(pool, key string) string {
	dataDir := ""
	if g.DataDir != defaultDataDir() {
		dataDir = " --data-dir " + shellQuote(g.DataDir)
	}
	return func(pool, key string) string {
		return fmt.Sprintf("warren keys pin --nats %s%s --pool %s %s", shellQuote(url), dataDir, pool, key)
	}
}

// shellQuote quotes s for a shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,@=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pins is the data dir's pinned seal keys for the broker at url.
func (g *globals) pins(url string) scheduler.PinFile {
	return scheduler.PinFile{Path: filepath.Join(g.DataDir, scheduler.PinsFile), Broker: url}
}

// client opens a connection (see open) and a scheduler client on it; tune
// adjusts the client's config.
func (g *globals) client(name string, needWorker bool, tune ...func(*scheduler.Config)) (*brokerConn, *scheduler.Client, error) {
	s, err := g.open(g.Ctx, name, needWorker)
	if err != nil {
		return nil, nil, err
	}
	c, err := newSchedulerClient(g, s, tune...)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, c, nil
}
