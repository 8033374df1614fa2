package main

import (
	"github.com/warrenhq/warren/sandbox"
)

// doctorCmd launches a probe sandbox and reports what this host supports;
// with a broker named (--nats, WARREN_NATS_URL, or the one `warren up`
// recorded), also the broker side: TLS, auth, JetStream, cluster size,
// and each stream's replicas and compatibility.
type doctorCmd struct {
	sandboxHostFlags
}

func (c *doctorCmd) Run(g *globals) error {
	rep := sandbox.Probe(g.Ctx, c.apply(sandbox.Config{Logger: g.Log}))
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
