package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// resultsCmd prints a batch's results; it re-attaches at any time, so a
// crashed or interrupted collector loses nothing.
type resultsCmd struct {
	Batch   string `arg:"" help:"Batch id (printed by submit)."`
	Attempt int    `name:"attempt" help:"Attempt to read (1 = the submission, 2+ = replays). Defaults to the latest."`
	NoWait  bool   `name:"no-wait" help:"Print the results stored now and return instead of waiting for every task."`
	Out     string `name:"out" short:"o" help:"Write the JSONL results to this file instead of stdout." type:"path"`
	Files   string `name:"files" help:"Fetch the tasks' output files (task field outputs) into DIR/<task id>/<path>." type:"path" placeholder:"DIR"`
}

func (c *resultsCmd) Run(g *globals) error {
	s, client, err := g.client("warren-results", !c.NoWait)
	if err != nil {
		return err
	}
	defer s.Close()
	o := scheduler.CollectOptions{Batch: g.qualify(c.Batch), Attempt: c.Attempt, NoWait: c.NoWait}
	if c.Files != "" {
		o.OnResult = func(r *messages.Result) error { return client.FetchFiles(g.Ctx, r, c.Files) }
	}
	return collectResults(g, client, o, c.Out)
}

func newSchedulerClient(g *globals, s *session, tune ...func(*scheduler.Config)) (*scheduler.Client, error) {
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
func (g *globals) registryKeys(s *session, c *scheduler.Client) scheduler.PoolKeys {
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

// client opens a session (see open) and a scheduler client on it; tune
// adjusts the client's config.
func (g *globals) client(name string, needWorker bool, tune ...func(*scheduler.Config)) (*session, *scheduler.Client, error) {
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

// output is a buffered writer on the file path, or on stdout when path is
// empty; close flushes it and closes the file.
func (g *globals) output(path string) (*bufio.Writer, func() error, error) {
	if path == "" {
		bw := bufio.NewWriter(g.IO.Out)
		return bw, bw.Flush, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	bw := bufio.NewWriter(f)
	return bw, func() error {
		ferr := bw.Flush()
		if cerr := f.Close(); ferr == nil {
			ferr = cerr
		}
		return ferr
	}, nil
}

// collectResults writes one JSON result per line to out (stdout when
// empty), with progress on stderr while waiting. Interrupted, it keeps what
// was written and exits 130; `warren results BATCH` resumes.
func collectResults(g *globals, client *scheduler.Client, o scheduler.CollectOptions, out string) (err error) {
	bw, closeOut, err := g.output(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeOut(); err == nil {
			err = cerr
		}
	}()
	enc := json.NewEncoder(bw)
	also := o.OnResult
	o.OnResult = func(r *messages.Result) error {
		if also != nil {
			if err := also(r); err != nil {
				return err
			}
		}
		return enc.Encode(r)
	}
	if !o.NoWait {
		o.Progress = scheduler.NewProgress(g.IO.Err, -1, scheduler.ProgressOptions{Label: o.Batch})
	}
	rep, cerr := client.Collect(g.Ctx, o)
	if o.Progress != nil {
		o.Progress.Close()
	}
	if ferr := bw.Flush(); ferr != nil && cerr == nil {
		cerr = ferr
	}
	if rep != nil && len(rep.Foreign) > 0 {
		f := rep.Foreign[0]
		fmt.Fprintf(g.IO.Err, "warren: %d stored result(s) of batch %s were not counted, e.g. %s (id %q): %s\n", len(rep.Foreign)+rep.ForeignMore, rep.Batch, f.Subject, f.TaskID, f.Reason)
	}
	switch {
	case rep == nil:
		return cerr
	case errors.Is(cerr, context.Canceled):
		fmt.Fprintf(g.IO.Err, "warren: interrupted after %d result(s); `warren results %s --attempt %d` resumes\n", rep.Received, rep.Batch, rep.Attempt)
		return &exitCodeError{Code: exitCancelled}
	case errors.Is(cerr, scheduler.ErrBrokerUnavailable):
		return fmt.Errorf("%w\n%d result(s) written; `warren results %s --attempt %d` resumes", cerr, rep.Received, rep.Batch, rep.Attempt)
	case cerr != nil:
		return cerr
	}
	return collectExit(rep, g.IO.Err)
}
