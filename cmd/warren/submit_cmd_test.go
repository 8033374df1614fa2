package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// clientCLI holds the client commands the way the real cli struct does, so
// they are tested through kong parsing without depending on main.go.
type clientCLI struct {
	globals `kong:"-"` // set by runClient, not parsed
	Submit  submitCmd  `cmd:""`
	Results resultsCmd `cmd:""`
	Cancel  cancelCmd  `cmd:""`
	Replay  replayCmd  `cmd:""`
	Hosts   hostsCmd   `cmd:""`
	Exec    execCmd    `cmd:""`
	Setup   setupCmd   `cmd:""`
	Verify  verifyCmd  `cmd:""`
}

type cliRun struct {
	stdout, stderr string
	err            error
}

// runClient runs one client command against the broker at url.
func runClient(t *testing.T, ctx context.Context, url, stdin string, args ...string) cliRun {
	t.Helper()
	return runClientIn(t, ctx, url, t.TempDir(), stdin, args...)
}

// runClientIn is runClient with the data dir given; url may be empty.
func runClientIn(t *testing.T, ctx context.Context, url, dataDir, stdin string, args ...string) cliRun {
	t.Helper()
	var c clientCLI
	var out, errb bytes.Buffer
	p, err := kong.New(&c, kong.Name("warren"), kong.Vars{"default_data_dir": t.TempDir()},
		kong.Writers(&out, &errb), kong.Exit(func(code int) { panic(kongExit(code)) }))
	require.NoError(t, err)
	kctx, err := parseArgs(p, args)
	require.NoError(t, err)
	c.NATS, c.DataDir = url, dataDir
	c.Ctx, c.HardCtx = ctx, ctx
	c.IO = stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb}
	c.Log = newLogger(&errb, "info")
	err = kctx.Run(&c.globals)
	return cliRun{stdout: out.String(), stderr: errb.String(), err: err}
}

type cliEnv struct {
	b   *brokertest.Broker
	ctx context.Context
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &cliEnv{b: b, ctx: ctx}
}

func (e *cliEnv) run(t *testing.T, stdin string, args ...string) cliRun {
	t.Helper()
	return runClient(t, e.ctx, e.b.URL, stdin, args...)
}

// fakeWorker serves the default pool until the test ends: for each task it
// streams its argv as stdout events and stores a result whose exit code is
// the number of arguments minus one (so tests can tell tasks apart). It is a
// test peer over real NATS, standing in for package worker.
func (e *cliEnv) fakeWorker(t *testing.T) {
	t.Helper()
	e.registerHost(t, "fake", messages.DefaultPool, messages.DefaultProfile)
	cons, err := broker.EnsureConsumer(e.ctx, e.b.JS, messages.DefaultPool, messages.DefaultProfile, broker.ConsumerConfig{})
	require.NoError(t, err)
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		task, err := messages.DecodeTask(msg.Data())
		if err != nil {
			_ = msg.Term()
			return
		}
		emit := func(seq uint64, typ messages.EventType, data string) {
			ev := messages.Event{V: messages.Version, TaskID: task.ID, Batch: task.Batch, Attempt: task.EffectiveAttempt(),
				Delivery: 1, Seq: seq, Type: typ, Data: messages.Bytes(data), Time: time.Now()}
			b, _ := json.Marshal(&ev)
			_ = e.b.Conn.Publish(task.EffectiveReply(), b)
		}
		out := strings.Join(task.Argv, " ") + "\n"
		emit(1, messages.EventStarted, "")
		emit(2, messages.EventStdout, out)
		emit(3, messages.EventExit, "")
		code := len(task.Argv) - 1
		st := messages.StatusOK
		if code != 0 {
			st = messages.StatusFailed
		}
		if s := task.Env["STATUS"]; s != "" { // a test asks for this outcome
			st = messages.Status(s)
		}
		r := messages.Result{V: messages.Version, TaskID: task.ID, Batch: task.Batch, Attempt: task.EffectiveAttempt(),
			Delivery: 1, Status: st, ExitCode: code, Stdout: messages.Bytes(out), Host: "fake"}
		b, _ := json.Marshal(&r)
		if _, err := e.b.JS.Publish(e.ctx, messages.ResultSubject(task.Batch, task.EffectiveAttempt(), task.ID), b); err != nil && !broker.IsResultExists(err) {
			_ = msg.Nak()
			return
		}
		_ = msg.Ack()
	})
	require.NoError(t, err)
	t.Cleanup(cc.Stop)
}

// registerHost puts a live host serving pool and profiles in the registry.
func (e *cliEnv) registerHost(t *testing.T, id, pool string, profiles ...string) {
	t.Helper()
	kv, err := e.b.JS.KeyValue(e.ctx, messages.BucketHosts)
	require.NoError(t, err)
	data, err := json.Marshal(messages.HostInfo{ID: id, Pool: pool, Profiles: profiles, Capacity: 1, UpdatedAt: time.Now().UTC()})
	require.NoError(t, err)
	_, err = kv.Put(e.ctx, id, data)
	require.NoError(t, err)
}

// exitStatus is the process exit status run's error maps to.
func exitStatus(err error) int { return exitCode(err, io.Discard) }

func (e *cliEnv) taskCount(t *testing.T, batch string) uint64 {
	t.Helper()
	s, err := e.b.JS.Stream(e.ctx, messages.StreamTasks)
	require.NoError(t, err)
	info, err := s.Info(e.ctx, jetstream.WithSubjectFilter(messages.BatchTaskFilter(batch)))
	require.NoError(t, err)
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

func tasksJSONL(n int) string {
	var b strings.Builder
	for i := range n {
		args := `"true"`
		if i%3 == 2 {
			args = `"false","x"` // exit code 1 from the fake worker
		}
		fmt.Fprintf(&b, `{"kind":"exec","argv":[%s],"env":{"N":"%d"}}`+"\n", args, i)
	}
	return b.String()
}

// decodeResults parses JSONL results and checks one per id.
func decodeResults(t *testing.T, s string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		id, _ := m["id"].(string)
		require.NotContains(t, out, id, "two results for %s", id)
		require.Contains(t, m, "status")
		require.Contains(t, m, "exit_code")
		out[id] = m
	}
	return out
}

func TestSubmitPrintsBatchAndIsIdempotent(t *testing.T) {
	e := newCLIEnv(t)
	file := filepath.Join(t.TempDir(), "tasks.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(tasksJSONL(9)), 0o600))
	first := e.run(t, "", "submit", file, "--queue-unserved")
	require.NoError(t, first.err, first.stderr)
	batch := strings.TrimSpace(first.stdout)
	require.Regexp(t, `^b-[0-9a-f]{16}$`, batch)
	// The same input again, from stdin this time: same batch, nothing new.
	again := e.run(t, tasksJSONL(9), "submit", "--queue-unserved")
	require.NoError(t, again.err)
	require.Equal(t, batch+"\n", again.stdout)
	require.Contains(t, again.stderr, "already submitted")
	require.EqualValues(t, 9, e.taskCount(t, batch))

	named := e.run(t, tasksJSONL(2), "submit", "--batch", "named", "--queue-unserved")
	require.NoError(t, named.err)
	require.Equal(t, "named\n", named.stdout)
}

func TestSubmitRefusesInvalidLines(t *testing.T) {
	e := newCLIEnv(t)
	in := `{"kind":"exec","argv":["true"]}` + "\n" + `{"kind":"exec","argv":["x"],"files":{"/etc/passwd":"x"}}` + "\n" + `nope` + "\n"
	r := e.run(t, in, "submit", "--batch", "bad")
	var be interface{ Unwrap() []error }
	require.ErrorAs(t, r.err, &be)
	require.Contains(t, r.err.Error(), "line 2: path_traversal")
	require.Contains(t, r.err.Error(), "line 3: malformed")
	require.Empty(t, r.stdout)
	require.Zero(t, e.taskCount(t, "bad"))
}

func TestSubmitWaitWritesEveryResult(t *testing.T) {
	e := newCLIEnv(t)
	e.fakeWorker(t)
	out := filepath.Join(t.TempDir(), "results.jsonl")
	tests := []struct {
		name string
		args []string
		file string
	}{
		{"stdout", []string{"submit", "--batch", "w1", "--wait"}, ""},
		{"out file", []string{"submit", "--batch", "w2", "--wait", "--out", out}, out},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.run(t, tasksJSONL(30), tt.args...)
			require.NoError(t, r.err, r.stderr)
			got := r.stdout
			if tt.file != "" {
				data, err := os.ReadFile(tt.file)
				require.NoError(t, err)
				got = string(data)
				require.Equal(t, tt.args[2]+"\n", r.stdout)
			}
			res := decodeResults(t, got)
			require.Len(t, res, 30)
			require.Equal(t, "failed", res["3"]["status"])
			require.EqualValues(t, 1, res["3"]["exit_code"])
			require.Equal(t, "ok", res["1"]["status"])
			// Progress went to stderr (plain lines: it is not a terminal).
			require.Contains(t, r.stderr, "30/30 done (ok 20, failed 10)")
		})
	}
}
