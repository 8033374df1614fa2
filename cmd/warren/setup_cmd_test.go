package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/worker"
)

func editStream(t *testing.T, js jetstream.JetStream, name string, change func(*jetstream.StreamConfig)) jetstream.StreamConfig {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, name)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	change(&cfg)
	info, err := js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	return info.CachedInfo().Config
}

func currentConfig(t *testing.T, js jetstream.JetStream, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	require.NoError(t, err)
	return s.CachedInfo().Config
}

// startTestWorker starts a real worker (insecure runner: this is about
// setup) and returns its Start error.
func startTestWorker(t *testing.T, b *brokertest.Broker) error {
	t.Helper()
	nc, _ := b.Dial(t, "setup-worker")
	r, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.NoError(t, r.Start(context.Background()))
	w, err := worker.New(nc, worker.Config{HostID: "w1", Capacity: 1, Runner: r, Logger: zerolog.Nop()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = w.Start(ctx)
	if err == nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = w.Stop(ctx)
		})
	}
	return err
}

// An operator's `nats stream edit` of a tunable survives `warren hosts`
// and a worker start; only `warren setup`, told, changes it back.
func TestOperatorTunablesSurviveClientsAndWorkers(t *testing.T) {
	e := newCLIEnv(t)
	edited := editStream(t, e.b.JS, messages.StreamTasks, func(c *jetstream.StreamConfig) { c.MaxAge, c.MaxBytes = 48*time.Hour, 2<<30 })
	require.NoError(t, e.run(t, "", "hosts").err)
	require.NoError(t, startTestWorker(t, e.b))
	require.NoError(t, e.run(t, tasksJSONL(2), "submit", "--batch", "kept").err)
	got := currentConfig(t, e.b.JS, messages.StreamTasks)
	require.Equal(t, edited.MaxAge, got.MaxAge)
	require.Equal(t, edited.MaxBytes, got.MaxBytes)

	dry := e.run(t, "", "setup", "--dry-run", "--max-age", "WARREN_TASKS=3d")
	require.NoError(t, dry.err)
	require.Equal(t, "stream WARREN_TASKS: max_age 2d -> 3d\n", dry.stdout)
	require.Contains(t, dry.stderr, "nothing changed")
	require.Equal(t, 48*time.Hour, currentConfig(t, e.b.JS, messages.StreamTasks).MaxAge, "a dry run changes nothing")

	set := e.run(t, "", "setup", "--max-age", "WARREN_TASKS=3d")
	require.NoError(t, set.err)
	require.Equal(t, dry.stdout, set.stdout)
	require.Equal(t, 72*time.Hour, currentConfig(t, e.b.JS, messages.StreamTasks).MaxAge)
	require.EqualValues(t, 2<<30, currentConfig(t, e.b.JS, messages.StreamTasks).MaxBytes, "a tunable not given is kept")
}

// An edit of a field Warren's guarantees rest on makes a worker and a
// client refuse, naming the stream, the field and `warren setup`; the dry
// run lists the fix without making it, and setup makes it.
func TestIncompatibleStreamIsRefusedUntilSetup(t *testing.T) {
	e := newCLIEnv(t)
	editStream(t, e.b.JS, messages.StreamResults, func(c *jetstream.StreamConfig) { c.DiscardNewPerSubject = false })
	err := startTestWorker(t, e.b)
	require.ErrorContains(t, err, "stream WARREN_RESULTS: discard_new_per_subject is false, Warren needs true")
	require.ErrorContains(t, err, "warren setup")
	hosts := e.run(t, "", "hosts")
	require.ErrorContains(t, hosts.err, "discard_new_per_subject")

	dry := e.run(t, "", "setup", "--dry-run")
	require.NoError(t, dry.err)
	require.Equal(t, "stream WARREN_RESULTS: discard_new_per_subject false -> true\n", dry.stdout)
	require.False(t, currentConfig(t, e.b.JS, messages.StreamResults).DiscardNewPerSubject)

	require.NoError(t, e.run(t, "", "setup").err)
	require.NoError(t, startTestWorker(t, e.b))
}

// A submit to a full TASKS stream fails fast, naming the stream and the fix.
func TestSubmitToFullStreamFailsFast(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{Streams: broker.StreamConfig{MaxBytes: map[string]int64{messages.StreamTasks: 8 << 10}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	r := runClient(t, ctx, b.URL, tasksJSONL(200), "submit", "--batch", "full", "--queue-unserved")
	require.Error(t, r.err)
	require.Less(t, time.Since(start), 10*time.Second, "refused, not retried until a timeout")
	require.ErrorContains(t, r.err, "stream WARREN_TASKS has no room for batch full, nothing was published")
	require.ErrorContains(t, r.err, "warren setup --max-bytes WARREN_TASKS=")
	require.NotContains(t, r.err.Error(), "stored so far", "nothing to resume")
}

func TestSetupFlagParsing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want broker.StreamConfig
		err  string
	}{
		{[]string{"--replicas", "3"}, broker.StreamConfig{Replicas: 3}, ""},
		{[]string{"--max-bytes", "20GiB", "--max-bytes", "warren_hosts=16MiB"}, broker.StreamConfig{MaxBytes: map[string]int64{"": 20 << 30, "warren_hosts": 16 << 20}}, ""},
		{[]string{"--max-age", "2d", "--max-age", "WARREN_DLQ=36h"}, broker.StreamConfig{MaxAge: map[string]time.Duration{"": 48 * time.Hour, "WARREN_DLQ": 36 * time.Hour}}, ""},
		{[]string{"--max-bytes", "500MB"}, broker.StreamConfig{MaxBytes: map[string]int64{"": 500e6}}, ""},
		{[]string{"--max-bytes", "lots"}, broker.StreamConfig{}, `--max-bytes "lots"`},
		{[]string{"--max-age", "-1d"}, broker.StreamConfig{}, `--max-age "-1d"`},
		{[]string{"--replicas", "7"}, broker.StreamConfig{}, "--replicas 7"},
		{[]string{"--max-age", "warren_hosts=1h"}, broker.StreamConfig{}, "not one of Warren's streams (WARREN_DLQ, WARREN_RESULTS, WARREN_TASKS)"},
		{[]string{"--max-bytes", "WARREN_TASK=1GiB"}, broker.StreamConfig{}, "--max-bytes WARREN_TASK=...: not one of"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var c setupCmd
			for i := 0; i < len(tc.args); i += 2 {
				switch tc.args[i] {
				case "--replicas":
					_, err := fmt.Sscan(tc.args[i+1], &c.Replicas)
					require.NoError(t, err)
				case "--max-bytes":
					c.MaxBytes = append(c.MaxBytes, tc.args[i+1])
				case "--max-age":
					c.MaxAge = append(c.MaxAge, tc.args[i+1])
				}
			}
			got, err := c.config()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
