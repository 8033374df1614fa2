package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// warnUnserved tells the user when no live host serves a pool and profile
// the batch needs: its tasks wait in the queue (durably) until one joins,
// which otherwise looks like a hang.
func warnUnserved(g *globals, client *scheduler.Client, tasks []messages.Task) {
	ctx, cancel := context.WithTimeout(g.Ctx, 3*time.Second)
	defer cancel()
	hosts, err := client.Hosts(ctx)
	if err != nil {
		return
	}
	type route struct{ pool, profile string }
	need := map[route]bool{}
	for i := range tasks {
		need[route{tasks[i].EffectivePool(), tasks[i].EffectiveProfile()}] = true
	}
	var missing []string
	for r := range need {
		if !slices.ContainsFunc(hosts, func(h messages.HostInfo) bool {
			return h.Pool == r.pool && slices.Contains(h.Profiles, r.profile)
		}) {
			missing = append(missing, r.pool+"/"+r.profile)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		fmt.Fprintf(g.IO.Err, "warren: no live worker serves pool/profile %s; its tasks stay queued until one does (see `warren hosts`)\n", m)
	}
}
