package main

import (
	"fmt"

	"github.com/warrenhq/warren/scheduler"
)

// keysPinCmd pins a pool's seal key for the broker a client command would
// dial: secrets for the pool are sealed to it, and a host publishing
// another key is refused (scheduler.PinnedPoolKeys).
type keysPinCmd struct {
	Pool string `name:"pool" default:"default" help:"Worker pool the key is for."`
	Key  string `arg:"" help:"The pool's public key (X...): warren keys show on the pool's key directory prints it."`
}

func (c *keysPinCmd) Run(g *globals) error {
	url, _, err := g.target()
	if err != nil {
		return err
	}
	if url == "" {
		return fmt.Errorf("no broker to pin a key for: pass --nats (or WARREN_NATS_URL), or run this while the warren up of --data-dir %s runs; a command's own embedded broker needs no pin (only its own worker publishes there)", g.DataDir)
	}
	pins := g.pins(url)
	old, had, err := pins.Set(c.Pool, c.Key)
	if err != nil {
		return fmt.Errorf("keys pin: %w", err)
	}
	switch {
	case !had:
		fmt.Fprintf(g.IO.Err, "pinned pool %s at %s to %s in %s\n", c.Pool, url, scheduler.KeyFingerprint(c.Key), pins.Path)
	case old.Key == c.Key:
		fmt.Fprintf(g.IO.Err, "pool %s at %s was pinned to %s already; now explicitly\n", c.Pool, url, scheduler.KeyFingerprint(c.Key))
	default:
		fmt.Fprintf(g.IO.Err, "pinned pool %s at %s to %s, replacing %s, in %s\n", c.Pool, url, scheduler.KeyFingerprint(c.Key), scheduler.KeyFingerprint(old.Key), pins.Path)
	}
	return nil
}
