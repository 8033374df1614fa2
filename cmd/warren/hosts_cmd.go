package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warrenhq/warren/messages"
)

// hostsCmd lists the worker hosts in the registry.
type hostsCmd struct {
	JSON bool `name:"json" help:"One JSON object per host instead of a table."`
}

func (c *hostsCmd) Run(g *globals) error {
	s, client, err := g.client("warren-hosts", false)
	if err != nil {
		return err
	}
	defer s.Close()
	hosts, err := client.Hosts(g.Ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		enc := json.NewEncoder(g.IO.Out)
		for i := range hosts {
			if err := enc.Encode(&hosts[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return writeHostTable(g, hosts, time.Now())
}

func writeHostTable(g *globals, hosts []messages.HostInfo, now time.Time) error {
	if len(hosts) == 0 {
		fmt.Fprintln(g.IO.Err, "no hosts registered (start one with `warren worker` or `warren up`)")
		return nil
	}
	tw := tabwriter.NewWriter(g.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tPOOL\tSTATE\tFREE/SLOTS\tISOLATION\tPROFILES\tMAX-MEM/TIME/DISK\tVERSION\tUP\tSEEN")
	for _, h := range hosts {
		iso := make([]string, len(h.Isolation))
		for i, m := range h.Isolation {
			iso[i] = string(m)
		}
		state := "serving"
		if h.Draining {
			state = "draining"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s ago\n", h.ID, h.Pool, state, h.Free, h.Capacity,
			dash(strings.Join(iso, ",")), dash(strings.Join(h.Profiles, ",")), ceilingCell(h.Ceilings), dash(h.Version),
			since(now, h.StartedAt), since(now, h.UpdatedAt))
	}
	return tw.Flush()
}

// ceilingCell shows a host's memory, wall time and disk ceilings ("-"
// for none): the limits users most often ask for (`--json` has all).
func ceilingCell(c messages.Limits) string {
	size := func(n int64) string {
		if n == 0 {
			return "-"
		}
		return messages.FormatSize(n)
	}
	wall := "-"
	if c.WallTimeoutMS > 0 {
		wall = strings.TrimSuffix(strings.TrimSuffix((time.Duration(c.WallTimeoutMS)*time.Millisecond).String(), "0s"), "0m")
	}
	return size(c.MemoryBytes) + "/" + wall + "/" + size(c.DiskBytes)
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
