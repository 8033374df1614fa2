package main

// cancelCmd cancels a batch or one task of it.
type cancelCmd struct {
	Batch   string `arg:"" help:"Batch id."`
	Task    string `arg:"" optional:"" help:"Task id; without it the whole batch is cancelled."`
	Attempt int    `help:"Attempt to cancel; 0 means the latest (replays are attempts)." default:"0"`
	Reason  string `name:"reason" default:"cancelled by user" help:"Recorded with the cancellation."`
}

func (c *cancelCmd) Run(g *globals) error {
	s, client, err := g.client("warren-cancel", false)
	if err != nil {
		return err
	}
	defer s.Close()
	c.Batch = g.qualify(c.Batch)
	if err := client.Cancel(g.Ctx, c.Batch, c.Attempt, c.Task, c.Reason); err != nil {
		return err
	}
	what := "batch " + c.Batch
	if c.Task != "" {
		what = "task " + c.Task + " of batch " + c.Batch
	}
	g.Log.Info().Msgf("cancelled %s: running tasks are killed, queued ones end as cancelled", what)
	return nil
}
