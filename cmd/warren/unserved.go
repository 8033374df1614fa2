package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// errUnserved: no live worker serves a pool/profile the tasks need.
var errUnserved = errors.New("no live worker serves")

// unservedRoutes lists the pool/profile pairs tasks need that no host in
// the registry serves, and what the registry does serve, both sorted.
func unservedRoutes(hosts []messages.HostInfo, tasks []messages.Task) (missing, served []string) {
	have := map[string]bool{}
	for _, h := range hosts {
		for _, p := range h.Profiles {
			have[h.Pool+"/"+p] = true
		}
	}
	need := map[string]bool{}
	for i := range tasks {
		need[tasks[i].EffectivePool()+"/"+tasks[i].EffectiveProfile()] = true
	}
	for r := range need {
		if !have[r] {
			missing = append(missing, r)
		}
	}
	for r := range have {
		served = append(served, r)
	}
	slices.Sort(missing)
	slices.Sort(served)
	return missing, served
}

// overCeiling refuses the first task that asks for a limit above the
// ceilings of every live host serving its pool/profile (the largest of
// each, since any of them may take it), naming the task, the limit and
// the ceiling. Routes no host serves are checkServed's to report.
func overCeiling(hosts []messages.HostInfo, tasks []messages.Task) error {
	ceil := map[string]*messages.Limits{}
	for _, h := range hosts {
		for _, p := range h.Profiles {
			r := h.Pool + "/" + p
			if c, ok := ceil[r]; ok {
				*c = c.Max(h.Ceilings)
			} else {
				c := h.Ceilings
				ceil[r] = &c
			}
		}
	}
	for i := range tasks {
		r := tasks[i].EffectivePool() + "/" + tasks[i].EffectiveProfile()
		c, ok := ceil[r]
		if !ok {
			continue
		}
		if e := tasks[i].Limits.Above(*c, "the hosts serving "+r); e != nil {
			return fmt.Errorf("task %s: %w; nothing was published", tasks[i].ID, e)
		}
	}
	return nil
}

// checkServed fails fast, before anything is published, when no live
// worker serves a pool/profile the tasks need: otherwise they wait in the
// queue for one, which looks like a hang. With queue set it only warns.
// On an embedded broker with the command's in-process worker (s.local),
// that worker is all there is, and the error says so.
func checkServed(g *globals, s *brokerConn, client *scheduler.Client, tasks []messages.Task, queue bool) error {
	ctx, cancel := context.WithTimeout(g.Ctx, 5*time.Second)
	defer cancel()
	hosts, err := client.Hosts(ctx)
	if err != nil {
		g.Log.Warn().Err(err).Msg("could not read the host registry to check that a worker serves these tasks")
		return nil
	}
	if err := overCeiling(hosts, tasks); err != nil {
		return err
	}
	missing, served := unservedRoutes(hosts, tasks)
	if len(missing) == 0 {
		return nil
	}
	now := "no worker is registered"
	switch {
	case s.local:
		now = "no broker is running, and the in-process worker this command started serves " + strings.Join(served, ", ")
	case len(served) > 0:
		now = "served now: " + strings.Join(served, ", ")
	}
	if queue {
		fmt.Fprintf(g.IO.Err, "warren: %s pool/profile %s (%s); the tasks stay queued until one does (see `warren hosts`)\n", errUnserved, strings.Join(missing, ", "), now)
		return nil
	}
	return fmt.Errorf("%w pool/profile %s (%s); nothing was published: %s", errUnserved, strings.Join(missing, ", "), now, startHint(s, tasks, missing))
}

// startHint says how to get a worker that serves the missing routes: a
// verify profile is defined in a --verify-profiles file, an exec profile
// is named with --profile; with only the in-process worker, `warren up`
// gives the data dir a broker and a worker that later commands use (no
// other worker can reach the embedded broker, so queueing is not offered:
// nothing would serve the tasks while this command waits).
func startHint(s *brokerConn, tasks []messages.Task, missing []string) string {
	verify := false
	for i := range tasks {
		r := tasks[i].EffectivePool() + "/" + tasks[i].EffectiveProfile()
		if tasks[i].Kind == messages.KindVerify && slices.Contains(missing, r) {
			verify = true
		}
	}
	switch {
	case s.local && verify:
		return "ask for one of those, or start `warren up --verify-profiles FILE` (FILE defining the profile; commands with this --data-dir then use its broker and worker) and run this command again"
	case s.local:
		return "ask for one of those, or start `warren up --pool P --profile Q` (commands with this --data-dir then use its broker and worker) and run this command again"
	case verify:
		return "start a worker for it (`warren worker --pool P --verify-profiles FILE`, FILE defining the profile), or pass --queue-unserved to queue the tasks until one joins"
	}
	return "start a worker for it (`warren worker --pool P --profile Q`), or pass --queue-unserved to queue the tasks until one joins"
}
