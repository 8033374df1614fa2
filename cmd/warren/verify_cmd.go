package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/verify/batchfile"
)

// verifyCmd checks a batch of proofs and reports verdicts.
type verifyCmd struct {
	Path    string        `arg:"" help:"JSONL batch (one proof a line: id, theorem, statement, proof; optional profile, header) or a directory of proofs (docs/verify.md)." type:"existingpath"`
	Profile string        `name:"profile" short:"p" help:"Profile for proofs that name none (e.g. coq)." default:"coq"`
	Batch   string        `name:"batch" short:"b" help:"Batch id. Defaults to one derived from the proofs, so running the same input again re-reads its results instead of checking twice."`
	Out     string        `name:"out" short:"o" help:"Write results JSONL here (default: stdout)." type:"path"`
	Timeout time.Duration `name:"timeout" help:"Per-proof wall limit (0: the profile's)."`
	NoCache bool          `name:"no-cache" help:"Check every proof afresh instead of answering it from the verdict cache (sets verify.no_cache on each task)."`
}

// verifyLine is one line of the results file.
type verifyLine struct {
	ID      string            `json:"id"`
	Status  messages.Status   `json:"status"`
	Verdict *messages.Verdict `json:"verdict,omitempty"`
	Error   *messages.Error   `json:"error,omitempty"`
	WallMS  int64             `json:"wall_ms"`
	Host    string            `json:"host,omitempty"`
	Sandbox string            `json:"sandbox,omitempty"`
}

func (c *verifyCmd) Run(g *globals) (err error) {
	tasks, err := batchfile.Load(c.Path, c.Profile)
	if err != nil {
		return err
	}
	for i := range tasks {
		if c.Timeout > 0 {
			tasks[i].Limits.WallTimeoutMS = c.Timeout.Milliseconds()
		}
	}
	b, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{Batch: c.Batch, Tenant: g.tenant(), NoCache: c.NoCache})
	if err != nil {
		return err
	}
	s, client, err := g.client("warren-verify", true)
	if err != nil {
		return err
	}
	defer s.Close()
	start := time.Now()
	rep, err := client.Publish(g.Ctx, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.IO.Err, "verifying %d proofs, batch %s\n", rep.Total, rep.Batch)
	if rep.AlreadyComplete {
		// The batch id comes from its content: the same proofs were sent
		// before, and their stored verdicts are what follows.
		fmt.Fprintf(g.IO.Err, "this batch was submitted before: showing its stored verdicts (`warren replay %s` checks it again)\n", rep.Batch)
	}
	warnUnserved(g, client, b.Tasks)

	bw, closeOut, err := g.output(c.Out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeOut(); err == nil {
			err = cerr
		}
	}()
	enc := json.NewEncoder(bw)
	sum := newVerifySummary()
	prog := scheduler.NewProgress(g.IO.Err, rep.Total, scheduler.ProgressOptions{Label: "verify"})
	crep, cerr := client.Collect(g.Ctx, scheduler.CollectOptions{
		Batch: rep.Batch, Attempt: rep.Attempt, Progress: prog,
		OnResult: func(r *messages.Result) error {
			sum.add(r)
			return enc.Encode(verifyLine{ID: r.TaskID, Status: r.Status, Verdict: r.Verdict, Error: r.Error, WallMS: r.WallMS, Host: r.Host, Sandbox: r.Sandbox})
		},
	})
	prog.Close()
	if ferr := bw.Flush(); ferr != nil && cerr == nil {
		cerr = ferr
	}
	if cerr != nil {
		return fmt.Errorf("collecting verdicts of batch %s (`warren results %s` resumes): %w", rep.Batch, rep.Batch, cerr)
	}
	sum.print(g.IO.Err, time.Since(start), rep.AlreadyComplete)
	if sum.unchecked > 0 || !crep.Complete() {
		return &exitCodeError{Code: 1}
	}
	return nil
}

// verifySummary counts verdicts by outcome.
type verifySummary struct {
	accepted, unchecked int
	rejected            map[messages.Reason]int
	other               map[messages.Status]int
}

func newVerifySummary() *verifySummary {
	return &verifySummary{rejected: map[messages.Reason]int{}, other: map[messages.Status]int{}}
}

func (s *verifySummary) add(r *messages.Result) {
	switch {
	case r.Status == messages.StatusOK && r.Verdict != nil && r.Verdict.Accepted:
		s.accepted++
	case r.Status == messages.StatusOK && r.Verdict != nil:
		s.rejected[r.Verdict.Reason]++
	default:
		s.unchecked++
		s.other[r.Status]++
	}
}

func (s *verifySummary) print(w io.Writer, took time.Duration, stored bool) {
	total := s.accepted + s.unchecked
	var parts []string
	reasons := make([]string, 0, len(s.rejected))
	for r, n := range s.rejected {
		total += n
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(reasons)
	parts = append(parts, fmt.Sprintf("accepted %d", s.accepted))
	if len(reasons) > 0 {
		parts = append(parts, "rejected: "+strings.Join(reasons, ", "))
	}
	for st, n := range s.other {
		parts = append(parts, fmt.Sprintf("not checked (%s) %d", st, n))
	}
	if stored {
		// No throughput: nothing was checked now.
		fmt.Fprintf(w, "%d proofs (stored verdicts): %s\n", total, strings.Join(parts, "; "))
		return
	}
	rate := float64(total) / max(took.Seconds(), 1e-9)
	fmt.Fprintf(w, "%d proofs in %s (%.1f proofs/s): %s\n", total, took.Round(time.Millisecond), rate, strings.Join(parts, "; "))
}
