package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nkeys"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// keysCmd manages a pool's sealing key pair: workers open task secrets
// with the seed, submitters seal to the public key.
type keysCmd struct {
	Init keysInitCmd `cmd:"" help:"Create a pool's sealing key: DIR/pool-POOL.xkey (seed, for workers' --seal-key) and DIR/pool-POOL.pub (for submitters' --pool-key)."`
	Show keysShowCmd `cmd:"" help:"Print a pool's public sealing key (for --pool-key / WARREN_POOL_KEY)."`
	Pin  keysPinCmd  `cmd:"" help:"Pin the key secrets for a pool of the broker (--nats, or the one warren up recorded) are sealed to, replacing the key pinned on first use."`
}

type keysDir struct {
	Dir  string `name:"dir" required:"" help:"Key directory." type:"path"`
	Pool string `name:"pool" default:"default" help:"Worker pool the key is for."`
}

func (k keysDir) seedPath() string { return broker.PoolXKeyPath(k.Dir, k.Pool) }
func (k keysDir) pubPath() string  { return filepath.Join(k.Dir, "pool-"+k.Pool+".pub") }

type keysInitCmd struct{ keysDir }

func (c *keysInitCmd) Run(g *globals) error {
	probe := messages.Task{V: messages.Version, ID: "x", Batch: "x", Kind: messages.KindExec, Argv: []string{"x"}, Pool: c.Pool}
	if err := probe.Validate(); err != nil {
		return fmt.Errorf("--pool: %w", err)
	}
	if _, err := os.Stat(c.seedPath()); err == nil {
		return fmt.Errorf("%s exists; a new key would orphan every task sealed to the old one (remove it first if that is what you want)", c.seedPath())
	}
	kp, err := nkeys.CreateCurveKeys()
	if err != nil {
		return err
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(c.seedPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := fmt.Fprintf(f, "%s\n", seed)
	if err := errors.Join(werr, f.Close()); err != nil {
		return err
	}
	if err := os.WriteFile(c.pubPath(), []byte(pub+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Err, "wrote %s (give it only to pool %s's workers: --seal-key) and %s\n", c.seedPath(), c.Pool, c.pubPath())
	_, err = fmt.Fprintln(g.IO.Out, pub)
	return err
}

type keysShowCmd struct {
	keysDir
	Fingerprint bool `name:"fingerprint" help:"Print the key's fingerprint (SHA256:...), as a refused warren exec --secret shows it, instead of the key."`
}

func (c *keysShowCmd) Run(g *globals) error {
	pub := ""
	if data, err := os.ReadFile(c.pubPath()); err == nil {
		pub = strings.TrimSpace(string(data))
	} else {
		kp, err := loadSealKey(c.seedPath())
		if err != nil {
			return err
		}
		if pub, err = kp.PublicKey(); err != nil {
			return err
		}
	}
	if !nkeys.IsValidPublicCurveKey(pub) {
		return fmt.Errorf("%s does not hold a public curve key", c.pubPath())
	}
	if c.Fingerprint {
		pub = scheduler.KeyFingerprint(pub)
	}
	_, err := fmt.Fprintln(g.IO.Out, pub)
	return err
}

// loadSealKey reads a pool seed file written by `warren keys init`.
func loadSealKey(path string) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	kp, err := nkeys.FromCurveSeed([]byte(strings.TrimSpace(string(data))))
	clear(data)
	if err != nil {
		return nil, fmt.Errorf("seal key %s: not a curve seed (warren keys init writes one): %w", path, err)
	}
	return kp, nil
}
