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
}

func (c *resultsCmd) Run(g *globals) error {
	s, client, err := g.client("warren-results", !c.NoWait)
	if err != nil {
		return err
	}
	defer s.Close()
	return collectResults(g, client, scheduler.CollectOptions{Batch: g.qualify(c.Batch), Attempt: c.Attempt, NoWait: c.NoWait}, c.Out)
}

func newSchedulerClient(g *globals, s *session) (*scheduler.Client, error) {
	return scheduler.New(s.NC, scheduler.Config{Logger: g.Log, APIPrefix: s.apiPrefix(), Tenant: s.tenant()})
}

// client opens a session (see open) and a scheduler client on it.
func (g *globals) client(name string, needWorker bool) (*session, *scheduler.Client, error) {
	s, err := g.open(g.Ctx, name, needWorker)
	if err != nil {
		return nil, nil, err
	}
	c, err := newSchedulerClient(g, s)
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
	o.OnResult = func(r *messages.Result) error { return enc.Encode(r) }
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
	switch {
	case errors.Is(cerr, context.Canceled):
		fmt.Fprintf(g.IO.Err, "warren: interrupted after %d result(s); `warren results %s --attempt %d` resumes\n", rep.Received, rep.Batch, rep.Attempt)
		return &exitCodeError{Code: 130}
	case cerr != nil:
		return cerr
	case !rep.Complete():
		total := "?"
		if rep.Total >= 0 {
			total = fmt.Sprint(rep.Total)
		}
		fmt.Fprintf(g.IO.Err, "warren: batch %s attempt %d: %d of %s results so far\n", rep.Batch, rep.Attempt, rep.Received, total)
	}
	return nil
}
