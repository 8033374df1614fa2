package main

import "github.com/warrenhq/warren/sandbox"

// doctorCmd launches a probe sandbox and reports what this host supports.
type doctorCmd struct{}

func (c *doctorCmd) Run(g *globals) error {
	rep := sandbox.Probe(g.Ctx, sandbox.Config{Logger: g.Log})
	if _, err := rep.WriteTo(g.IO.Out); err != nil {
		return err
	}
	if !rep.Usable() {
		return &exitCodeError{Code: 1}
	}
	return nil
}
