package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
)

// setupCmd is the admin step that owns Warren's streams and buckets.
type setupCmd struct {
	Replicas int      `help:"Replicas of every stream and bucket (1-5). Default for what is created: $WARREN_REPLICAS, else min(3, cluster size); existing ones keep theirs unless given." env:"WARREN_REPLICAS"`
	MaxAge   []string `name:"max-age" placeholder:"[STREAM=]D" help:"How long a stream keeps messages, e.g. 2d or 36h; STREAM=D for one stream (WARREN_TASKS, WARREN_RESULTS, WARREN_DLQ). Repeatable. Existing streams keep theirs unless given."`
	MaxBytes []string `name:"max-bytes" placeholder:"[NAME=]SIZE" help:"Byte limit, e.g. 20GiB; NAME=SIZE for one stream or bucket. Without NAME it applies to every stream (buckets keep theirs). Repeatable. Existing ones keep theirs unless given."`
	DryRun   bool     `name:"dry-run" help:"Print what would change; change nothing."`
	AuthDir  string   `name:"auth-dir" placeholder:"DIR" help:"Also set up every tenant of this auth directory: its own streams and buckets, bounded by its quota (warren auth quota). A broker running with --auth-dir does this itself." env:"WARREN_AUTH_DIR"`
}

func (c *setupCmd) Run(g *globals) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	s, err := g.connect(g.Ctx, "warren-setup")
	if err != nil {
		return err
	}
	defer s.Close()
	js, err := jetstream.New(s.NC)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(g.Ctx, 60*time.Second)
	defer cancel()
	changes, err := broker.Apply(ctx, js, cfg, c.DryRun)
	if err == nil && c.AuthDir != "" {
		var d *broker.AuthDir
		if d, err = broker.OpenAuthDir(c.AuthDir); err == nil {
			var tc []broker.Change
			tc, err = broker.SetupTenants(ctx, js, broker.StreamConfig{Replicas: c.Replicas}, d.Tenants(), c.DryRun)
			changes = append(changes, tc...)
		}
	}
	for _, ch := range changes {
		fmt.Fprintln(g.IO.Out, ch.String())
	}
	if err != nil {
		return err
	}
	switch {
	case len(changes) == 0:
		fmt.Fprintln(g.IO.Err, "warren setup: streams and buckets are up to date; nothing changed")
	case c.DryRun:
		fmt.Fprintf(g.IO.Err, "warren setup: dry run: %d change(s) listed, nothing changed\n", len(changes))
	default:
		fmt.Fprintf(g.IO.Err, "warren setup: %d change(s) made\n", len(changes))
	}
	return nil
}

func (c *setupCmd) config() (broker.StreamConfig, error) {
	cfg := broker.StreamConfig{Replicas: c.Replicas}
	if c.Replicas < 0 || c.Replicas > 5 {
		return cfg, fmt.Errorf("--replicas %d: want 1 to 5", c.Replicas)
	}
	var err error
	if cfg.MaxAge, err = parseLimits("--max-age", c.MaxAge, parseAge); err != nil {
		return cfg, err
	}
	if cfg.MaxBytes, err = parseLimits("--max-bytes", c.MaxBytes, parseBytes); err != nil {
		return cfg, err
	}
	names := broker.Names()
	for name := range cfg.MaxAge {
		if name != "" && names[name] != "stream" {
			return cfg, fmt.Errorf("--max-age %s=...: not one of Warren's streams (%s); buckets keep their TTL", name, strings.Join(namesOf(names, "stream"), ", "))
		}
	}
	for name := range cfg.MaxBytes {
		if name != "" && names[name] == "" {
			return cfg, fmt.Errorf("--max-bytes %s=...: not one of Warren's streams or buckets (%s)", name, strings.Join(namesOf(names, ""), ", "))
		}
	}
	return cfg, nil
}

// namesOf lists the names of the given kind ("" for all), sorted.
func namesOf(names map[string]string, kind string) []string {
	var out []string
	for n, k := range names {
		if kind == "" || k == kind {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// parseLimits reads "VALUE" (key "") and "NAME=VALUE" entries.
func parseLimits[T any](flag string, vals []string, parse func(string) (T, error)) (map[string]T, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]T{}
	for _, v := range vals {
		name, val, ok := strings.Cut(v, "=")
		if !ok {
			name, val = "", v
		}
		x, err := parse(val)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", flag, v, err)
		}
		out[name] = x
	}
	return out, nil
}

// parseAge reads a Go duration, or a number of days ("7d"); "unlimited"
// or 0 removes the limit.
func parseAge(s string) (time.Duration, error) {
	if s == "unlimited" || s == "0" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("want a duration like 2d or 36h")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration like 2d or 36h")
	}
	return d, nil
}

// parseBytes reads a size with an optional unit (KiB, MiB, GiB, TiB, or
// KB, MB, GB, TB as powers of 1000); "unlimited" removes the limit.
func parseBytes(s string) (int64, error) {
	if s == "unlimited" {
		return -1, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := s, int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a size like 20GiB or 500MB")
	}
	return n * mult, nil
}
