package main

import (
	"encoding/json"
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
		Profiles:  []string{"default", "lean"}, Version: "0.1.0", StartedAt: now.Add(-time.Hour), UpdatedAt: now}
	data, err := json.Marshal(&h)
	require.NoError(t, err)
	_, err = kv.Put(e.ctx, h.ID, data)
	require.NoError(t, err)

	table := e.run(t, "", "hosts")
	require.NoError(t, table.err)
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	require.Len(t, lines, 2)
	require.Equal(t, []string{"HOST", "POOL", "STATE", "FREE/SLOTS", "ISOLATION", "PROFILES", "VERSION", "UP", "SEEN"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.Equal(t, []string{"box-1", "default", "serving", "5/8", "namespace,landlock", "default,lean", "0.1.0"}, row[:7])

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
