//go:build !client

package main

import (
	"fmt"

	"github.com/warrenhq/warren/sandbox"
)

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
