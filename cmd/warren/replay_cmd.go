package main

import (
	"fmt"
	"time"

	"github.com/warrenhq/warren/scheduler"
)

// replayCmd republishes a batch, or a range of it, as a new attempt.
type replayCmd struct {
	Batch   string `arg:"" help:"Batch id."`
	FromSeq uint64 `name:"from-seq" help:"First WARREN_TASKS stream sequence to replay (inclusive)."`
	ToSeq   uint64 `name:"to-seq" help:"Last WARREN_TASKS stream sequence to replay (inclusive)."`
	Since   string `name:"since" help:"Replay tasks stored at or after this time: RFC 3339, or a duration ago such as 2h."`
	Until   string `name:"until" help:"Replay tasks stored before this time: RFC 3339, or a duration ago."`
	Wait    bool   `name:"wait" short:"w" help:"Wait for the new attempt's results (progress on stderr) and write them as JSONL."`
	Out     string `name:"out" short:"o" help:"With --wait, write the results to this file instead of stdout." type:"path"`
	NoCache bool   `name:"no-cache" help:"Check every replayed verify task's proof afresh instead of answering it from the verdict cache (sets verify.no_cache on each)."`
}

func (c *replayCmd) Run(g *globals) error {
	if err := outNeedsWait(c.Out, c.Wait); err != nil {
		return err
	}
	since, err := parseWhen("--since", c.Since)
	if err != nil {
		return err
	}
	until, err := parseWhen("--until", c.Until)
	if err != nil {
		return err
	}
	if g.tenant() != "" {
		// Reading WARREN_TASKS would let a tenant pull the workers' queues.
		return fmt.Errorf("replay reads the task stream, which a submitter's creds may not: run `warren replay %s` with admin creds (--creds AUTH_DIR/admin.creds)", g.qualify(c.Batch))
	}
	s, client, err := g.client("warren-replay", c.Wait)
	if err != nil {
		return err
	}
	defer s.Close()
	rep, err := client.Replay(g.Ctx, scheduler.ReplayOptions{
		Batch: g.qualify(c.Batch), FromSeq: c.FromSeq, ToSeq: c.ToSeq, Since: since, Until: until,
		NoCache: c.NoCache,
	})
	if err != nil {
		return err
	}
	g.Log.Info().Str("batch", rep.Batch).Int("attempt", rep.Attempt).Int("tasks", rep.Total).
		Int("invalid_skipped", rep.Invalid).Msg("replay published")
	if !c.Wait {
		_, err = fmt.Fprintln(g.IO.Out, rep.Attempt)
		return err
	}
	fmt.Fprintf(g.IO.Err, "batch %s attempt %d\n", rep.Batch, rep.Attempt)
	return collectResults(g, client, scheduler.CollectOptions{Batch: rep.Batch, Attempt: rep.Attempt}, c.Out)
}

// parseWhen reads an RFC 3339 time or a duration before now; "" is zero.
func parseWhen(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration ago (90m)", flag, v)
}
