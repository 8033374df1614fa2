package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func TestHostsCommand(t *testing.T) {
	e := newCLIEnv(t)
	empty := e.run(t, "", "hosts")
	require.NoError(t, empty.err)
	require.Contains(t, empty.stderr, "no hosts registered")

	kv, err := e.b.JS.KeyValue(e.ctx, messages.BucketHosts)
	require.NoError(t, err)
	now := time.Now().UTC()
	h := messages.HostInfo{ID: "box-1", Pool: "default", Capacity: 8, Free: 5,
		Isolation: []messages.Isolation{messages.IsolationNamespace, messages.IsolationLandlock},
		Profiles:  []string{"default", "lean"}, Version: "0.1.0", StartedAt: now.Add(-time.Hour), UpdatedAt: now,
		Ceilings: messages.Limits{MemoryBytes: 8 << 30, WallTimeoutMS: 6 * 3600 * 1000, DiskBytes: 1 << 30}}
	data, err := json.Marshal(&h)
	require.NoError(t, err)
	_, err = kv.Put(e.ctx, h.ID, data)
	require.NoError(t, err)

	table := e.run(t, "", "hosts")
	require.NoError(t, table.err)
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	require.Len(t, lines, 2)
	require.Equal(t, []string{"HOST", "POOL", "STATE", "FREE/SLOTS", "ISOLATION", "PROFILES", "MAX-MEM/TIME/DISK", "VERSION", "UP", "SEEN"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.Equal(t, []string{"box-1", "default", "serving", "5/8", "namespace,landlock", "default,lean", "8G/6h/1G", "0.1.0"}, row[:8])

	h.Draining = true
	data, err = json.Marshal(&h)
	require.NoError(t, err)
	_, err = kv.Put(e.ctx, h.ID, data)
	require.NoError(t, err)
	draining := e.run(t, "", "hosts")
	require.NoError(t, draining.err)
	require.Equal(t, "draining", strings.Fields(strings.Split(strings.TrimSpace(draining.stdout), "\n")[1])[2])

	js := e.run(t, "", "hosts", "--json")
	require.NoError(t, js.err)
	var got messages.HostInfo
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &got))
	require.Equal(t, h.ID, got.ID)
	require.Equal(t, h.Isolation, got.Isolation)
}

// TestSubmitRefusesATaskOverTheCeilings: a task asking for more than every
// host serving its pool/profile allows is refused at submit, naming the
// limit and the ceiling, and nothing is published; the control (within
// the ceilings) is published.
func TestSubmitRefusesATaskOverTheCeilings(t *testing.T) {
	e := newCLIEnv(t)
	kv, err := e.b.JS.KeyValue(e.ctx, messages.BucketHosts)
	require.NoError(t, err)
	for i, mem := range []int64{4 << 30, 8 << 30} { // the larger host decides
		h := messages.HostInfo{ID: fmt.Sprintf("h%d", i), Pool: "default", Capacity: 1, Profiles: []string{"default"},
			UpdatedAt: time.Now().UTC(), Ceilings: messages.Limits{MemoryBytes: mem, WallTimeoutMS: 3600 * 1000}}
		data, err := json.Marshal(&h)
		require.NoError(t, err)
		_, err = kv.Put(e.ctx, h.ID, data)
		require.NoError(t, err)
	}
	over := `{"id":"big","kind":"exec","argv":["true"],"limits":{"memory_bytes":1099511627776}}` + "\n"
	r := e.run(t, over, "submit", "--batch", "over", "-")
	require.Error(t, r.err)
	require.ErrorIs(t, r.err, &messages.Error{Code: messages.CodeOverCeiling})
	require.ErrorContains(t, r.err, "limits.memory_bytes: 1T is above the ceiling of the hosts serving default/default, 8G")
	require.Zero(t, e.taskCount(t, "over"), "nothing is published")

	r = e.run(t, `{"id":"long","kind":"exec","argv":["true"],"limits":{"wall_timeout_ms":7200000}}`+"\n", "submit", "--batch", "over2", "-")
	require.ErrorContains(t, r.err, "limits.wall_timeout_ms: 2h0m0s is above the ceiling of the hosts serving default/default, 1h0m0s")

	ok := `{"id":"fits","kind":"exec","argv":["true"],"limits":{"memory_bytes":8589934592}}` + "\n"
	r = e.run(t, ok, "submit", "--batch", "fits", "-")
	require.NoError(t, r.err, r.stderr)
	require.EqualValues(t, 1, e.taskCount(t, "fits"))
}
