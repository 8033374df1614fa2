package main

import (
	"fmt"
	"os"

	"github.com/warrenhq/warren/scheduler"
)

// submitCmd publishes a JSONL batch exactly once.
type submitCmd struct {
	File  string `arg:"" optional:"" default:"-" help:"JSONL file, one task per line; - (the default) reads stdin."`
	Batch string `name:"batch" short:"b" help:"Batch id for tasks that name none. Defaults to one derived from the tasks, so submitting the same input again queues nothing twice."`
	Wait  bool   `name:"wait" short:"w" help:"Wait for every result (progress on stderr) and write them as JSONL."`
	Out   string `name:"out" short:"o" help:"With --wait, write the results to this file instead of stdout." type:"path"`
}

func (c *submitCmd) Run(g *globals) error {
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
	b, err := scheduler.ReadBatch(in, scheduler.BatchOptions{Batch: c.Batch, Tenant: g.tenant()})
	if err != nil {
		return err
	}
	s, client, err := g.client("warren-submit", c.Wait)
	if err != nil {
		return err
	}
	defer s.Close()
	rep, err := client.Publish(g.Ctx, b)
	if err != nil {
		return err
	}
	warnUnserved(g, client, b.Tasks)
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
