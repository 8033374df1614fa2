package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/scheduler"
)

// submitCmd publishes a JSONL batch exactly once.
type submitCmd struct {
	File          string `arg:"" optional:"" default:"-" help:"JSONL file, one task per line; - (the default) reads stdin."`
	Batch         string `name:"batch" short:"b" help:"Batch id for tasks that name none. Defaults to one derived from the tasks, so submitting the same input again queues nothing twice."`
	Wait          bool   `name:"wait" short:"w" help:"Wait for every result (progress on stderr) and write them as JSONL."`
	Out           string `name:"out" short:"o" help:"With --wait, write the results to this file instead of stdout." type:"path"`
	Errors        string `name:"errors" help:"When the batch is refused, write every problem to this file, one 'line N: ...' per line in line order (stderr lists the first 20)." type:"path"`
	MaxInflight   int    `name:"max-inflight" default:"256" help:"Tasks published but not yet acknowledged by the stream, at most."`
	NoCache       bool   `name:"no-cache" help:"Check every verify task's proof afresh instead of answering it from the verdict cache (sets verify.no_cache on each verify task; the batch id derived from the input changes with it)."`
	QueueUnserved bool   `name:"queue-unserved" help:"Publish even when no live worker serves a pool/profile the tasks need (they wait in the queue until one joins); without it such a batch is refused before anything is published."`
}

func (c *submitCmd) Run(g *globals) error {
	if err := outNeedsWait(c.Out, c.Wait); err != nil {
		return err
	}
	in := g.IO.In
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	// Every line is checked before anything is published or even connected.
	b, err := scheduler.ReadBatch(in, scheduler.BatchOptions{Batch: c.Batch, InboxPrefixes: g.InboxPrefixes, Tenant: g.tenant(), NoCache: c.NoCache})
	if err != nil {
		return c.refused(err)
	}
	s, client, err := g.client("warren-submit", c.Wait, func(cfg *scheduler.Config) { cfg.MaxInflight = c.MaxInflight })
	if err != nil {
		return err
	}
	defer s.Close()
	if err := checkServed(g, s, client, b.Tasks, c.QueueUnserved); err != nil {
		return err
	}
	rep, err := client.Publish(g.Ctx, b)
	if err != nil {
		return c.publishFailed(rep, err)
	}
	if rep.AlreadyComplete {
		g.Log.Info().Str("batch", rep.Batch).Int("tasks", rep.Total).Msg("batch already submitted; nothing published")
	} else {
		g.Log.Info().Str("batch", rep.Batch).Int("tasks", rep.Total).Int("stored", rep.Stored).
			Int("duplicates", rep.Duplicates).Int("skipped", rep.Skipped).Msg("batch published")
	}
	if !c.Wait {
		_, err = fmt.Fprintln(g.IO.Out, rep.Batch)
		return err
	}
	if c.Out != "" { // stdout is free: say which batch it is there too
		fmt.Fprintln(g.IO.Out, rep.Batch)
	} else {
		fmt.Fprintf(g.IO.Err, "batch %s\n", rep.Batch)
	}
	return collectResults(g, client, scheduler.CollectOptions{Batch: rep.Batch, Attempt: rep.Attempt}, c.Out)
}

// refused writes every problem of a refused batch to --errors.
func (c *submitCmd) refused(err error) error {
	var be *scheduler.BatchError
	if c.Errors == "" || !errors.As(err, &be) {
		return err
	}
	f, ferr := os.Create(c.Errors)
	if ferr != nil {
		return errors.Join(err, ferr)
	}
	_, werr := be.WriteTo(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return errors.Join(err, werr)
	}
	return fmt.Errorf("%w\nevery problem is in %s", err, c.Errors)
}

// publishFailed explains a publication that stopped midway: what was
// stored stays stored, and submitting the same input again resumes it.
func (c *submitCmd) publishFailed(rep *scheduler.PublishReport, err error) error {
	var be *scheduler.BatchError
	if errors.As(err, &be) {
		return c.refused(err)
	}
	// A batch refused whole for want of room left nothing to resume: its
	// error says how to make room.
	if errors.Is(err, scheduler.ErrBatchConflict) || errors.Is(err, broker.ErrNoRoom) || rep == nil {
		return err
	}
	file := c.File
	if file == "-" {
		file = "< FILE"
	}
	return fmt.Errorf("%w\nbatch %s: %d task(s) stored so far; `warren submit %s --batch %s` resumes (tasks already stored are skipped)", err, rep.Batch, rep.Stored+rep.Skipped, file, rep.Batch)
}

// outNeedsWait refuses --out without --wait, which would ignore it.
func outNeedsWait(out string, wait bool) error {
	if out != "" && !wait {
		return errors.New("--out names where --wait writes the results; add --wait, or drop --out")
	}
	return nil
}
