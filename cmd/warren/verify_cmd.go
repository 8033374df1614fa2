package main

import (
	"encoding/json"
	"errors"
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
	NoCache bool          `name:"no-cache" help:"Check every proof afresh instead of answering it from the verdict cache (sets verify.no_cache on each task); a batch submitted before is checked again as a new attempt."`
	// The same flag and wording as submit's.
	QueueUnserved bool `name:"queue-unserved" help:"Publish even when no live worker serves a pool/profile the tasks need (they wait in the queue until one joins); without it such a batch is refused before anything is published."`
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
	opts := scheduler.BatchOptions{Batch: c.Batch, Tenant: g.tenant(), NoCache: c.NoCache}
	b, err := scheduler.NewBatch(tasks, opts)
	if err != nil {
		return err
	}
	s, client, err := g.client("warren-verify", true)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := checkServed(g, s, client, b.Tasks, c.QueueUnserved); err != nil {
		return err
	}
	start := time.Now()
	rep, err := client.Publish(g.Ctx, b)
	again := c.NoCache && (err == nil && rep.AlreadyComplete || errors.Is(err, scheduler.ErrBatchConflict) && c.sameProofs(g, client, tasks, opts))
	if err != nil && !again {
		return err
	}
	fmt.Fprintf(g.IO.Err, "verifying %d proofs, batch %s\n", rep.Total, rep.Batch)
	attempt, stored := rep.Attempt, rep.AlreadyComplete
	switch {
	case again:
		// Stored verdicts are what --no-cache is meant to get past: the
		// batch is checked again as a new attempt with no_cache set.
		if g.tenant() != "" {
			return fmt.Errorf("batch %s was submitted before, and --no-cache would check it again as a new attempt, which reads the task stream: a submitter's creds may not; give it another --batch to check the proofs afresh under a new batch id", rep.Batch)
		}
		rr, err := client.Replay(g.Ctx, scheduler.ReplayOptions{Batch: rep.Batch, NoCache: true})
		if err != nil {
			return fmt.Errorf("checking batch %s again: %w", rep.Batch, err)
		}
		attempt, stored = rr.Attempt, false
		fmt.Fprintf(g.IO.Err, "this batch was submitted before; --no-cache: checking it again as attempt %d\n", rr.Attempt)
	case stored:
		// The batch id comes from its content: the same proofs were sent
		// before, and their stored verdicts are what follows.
		fmt.Fprintf(g.IO.Err, "this batch was submitted before: showing its stored verdicts (--no-cache checks it again)\n")
	}

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
		Batch: rep.Batch, Attempt: attempt, Progress: prog,
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
	sum.print(g.IO.Err, time.Since(start), stored)
	if sum.unchecked > 0 || !crep.Complete() {
		return &exitCodeError{Code: 1}
	}
	return nil
}

// sameProofs: the stored batch, whose id the proofs share, holds these very
// proofs, published without --no-cache (which is part of a task, so the
// two differ only in it) and complete.
func (c *verifyCmd) sameProofs(g *globals, client *scheduler.Client, tasks []messages.Task, opts scheduler.BatchOptions) bool {
	opts.NoCache = false
	plain, err := scheduler.NewBatch(tasks, opts)
	if err != nil {
		return false
	}
	m, err := client.Manifest(g.Ctx, plain.ID)
	if err != nil {
		return false
	}
	a, ok := m.Attempt(1)
	return ok && a.Complete && a.Digest == plain.Digest && a.Total == len(plain.Tasks)
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

// line renders the counts as the live progress line does ("3 accepted, 6
// rejected"), with the rejections by reason and the tasks that reached no
// verdict by status: "3 accepted, 6 rejected (compile_error 1, incomplete
// 5); 1 not checked (infra_error 1)".
func (s *verifySummary) line() (total int, text string) {
	rejected := 0
	reasons := make([]string, 0, len(s.rejected))
	for r, n := range s.rejected {
		rejected += n
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(reasons)
	text = fmt.Sprintf("%d accepted, %d rejected", s.accepted, rejected)
	if len(reasons) > 0 {
		text += " (" + strings.Join(reasons, ", ") + ")"
	}
	if s.unchecked > 0 {
		statuses := make([]string, 0, len(s.other))
		for st, n := range s.other {
			statuses = append(statuses, fmt.Sprintf("%s %d", st, n))
		}
		sort.Strings(statuses)
		text += fmt.Sprintf("; %d not checked (%s)", s.unchecked, strings.Join(statuses, ", "))
	}
	return s.accepted + rejected + s.unchecked, text
}

func (s *verifySummary) print(w io.Writer, took time.Duration, stored bool) {
	total, text := s.line()
	if stored {
		// No throughput: nothing was checked now.
		fmt.Fprintf(w, "%d proofs (stored verdicts): %s\n", total, text)
		return
	}
	rate := float64(total) / max(took.Seconds(), 1e-9)
	fmt.Fprintf(w, "%d proofs in %s (%.1f proofs/s): %s\n", total, took.Round(time.Millisecond), rate, text)
}
