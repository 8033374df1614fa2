package main

import (
	"fmt"

	"github.com/warrenhq/warren/sandbox"
)

// doctorCmd launches a probe sandbox and reports what this host supports;
// with a broker named (--nats, WARREN_NATS_URL, or the one `warren up`
// recorded), also the broker side: TLS, auth, JetStream, cluster size,
// and each stream's replicas and compatibility.
type doctorCmd struct {
	sandboxHostFlags
	Disk string `help:"The disk limit the host's worker runs tasks with (its --disk): the probe sandboxes run with it, so a mode that cannot enforce it is not reported usable." default:"1G" placeholder:"SIZE"`
}

func (c *doctorCmd) Run(g *globals) error {
	disk, err := parseDisk(c.Disk)
	if err != nil {
		return fmt.Errorf("--disk: %w", err)
	}
	rep := sandbox.Probe(g.Ctx, c.apply(sandbox.Config{Logger: g.Log, Defaults: sandbox.Limits{Disk: disk}}))
	url, _, err := g.target()
	if err != nil {
		return err
	}
	brokerOK := true
	if url != "" {
		for _, ch := range brokerChecks(g.Ctx, g, url) {
			rep.Checks = append(rep.Checks, ch)
			brokerOK = brokerOK && ch.OK
		}
	}
	if _, err := rep.WriteTo(g.IO.Out); err != nil {
		return err
	}
	if !rep.Usable() || !brokerOK {
		return &exitCodeError{Code: 1}
	}
	return nil
}
