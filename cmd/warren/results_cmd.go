package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

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
