package worker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

func TestSessionLifecycle(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	h := startSessionHost(t, b, "h1", sessionOpts{capacity: 2})
	c := sessionClient(t, b)
	ctx := tctx(t)

	sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{Env: map[string]string{"GREETING": "hello"}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(sb.ID, "h1."), sb.ID)
	require.NotEmpty(t, sb.Token)

	// Output streams to the writers; the exit code is the command's.
	var out, errb bytes.Buffer
	exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sh", "-c", `echo "$GREETING $WHO"; echo oops >&2; echo state > f.txt; exit 3`},
		Env: map[string]string{"WHO": "world"}}, &out, &errb)
	require.NoError(t, err)
	require.Equal(t, 3, exit.ExitCode)
	require.Equal(t, "hello world\n", out.String())
	require.Equal(t, "oops\n", errb.String())

	// Files persist across execs and through the files API.
	out.Reset()
	exit, err = sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"cat", "f.txt"}}, &out, nil)
	require.NoError(t, err)
	require.Zero(t, exit.ExitCode)
	require.Equal(t, "state\n", out.String())

	// Binary-safe, chunked copies both ways, and ranged reads.
	blob := make([]byte, 2*messages.MaxSandboxChunk+12345)
	_, _ = rand.Read(blob)
	n, err := sb.CopyTo(ctx, bytes.NewReader(blob), "d/blob.bin", scheduler.CopyOptions{Parents: true})
	require.NoError(t, err)
	require.EqualValues(t, len(blob), n)
	var back bytes.Buffer
	_, err = sb.CopyFrom(ctx, "d/blob.bin", &back, 0, -1)
	require.NoError(t, err)
	require.True(t, bytes.Equal(blob, back.Bytes()), "round trip")
	back.Reset()
	_, err = sb.CopyFrom(ctx, "d/blob.bin", &back, messages.MaxSandboxChunk-5, 10)
	require.NoError(t, err)
	require.Equal(t, blob[messages.MaxSandboxChunk-5:messages.MaxSandboxChunk+5], back.Bytes())
	out.Reset()
	_, err = sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"wc", "-c", "d/blob.bin"}}, &out, nil)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d d/blob.bin\n", len(blob)), out.String())

	st, err := sb.Stat(ctx, "d/blob.bin")
	require.NoError(t, err)
	require.Equal(t, "file", st.Type)
	require.EqualValues(t, len(blob), st.Size)
	require.NoError(t, sb.Mkdir(ctx, "many/x"))
	for i := range 5 {
		_, err := sb.CopyTo(ctx, strings.NewReader("x"), fmt.Sprintf("many/f%d", i), scheduler.CopyOptions{})
		require.NoError(t, err)
	}
	page, next, err := sb.ListPage(ctx, "many", "", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"f0", "f1"}, names(page))
	require.Equal(t, "f1", next)
	all, err := sb.List(ctx, "many")
	require.NoError(t, err)
	require.Equal(t, []string{"f0", "f1", "f2", "f3", "f4", "x"}, names(all))
	require.NoError(t, sb.Remove(ctx, "many", true))
	_, err = sb.Stat(ctx, "many")
	require.ErrorIs(t, err, messages.ErrNotFound)

	// Background processes persist; ps lists them and kill ends them.
	bg, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sleep", "60"}, Background: true}, nil, nil)
	require.NoError(t, err)
	require.Positive(t, bg.PID)
	ps, err := sb.Ps(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, bg.PID, ps[0].PID)
	require.True(t, ps[0].Background)
	info, err := sb.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, info.Running, "running counts the background command")
	require.Equal(t, messages.SandboxRunning, info.State)
	require.NoError(t, sb.Kill(ctx, bg.PID, "SIGKILL"))
	require.Eventually(t, func() bool {
		ps, err := sb.Ps(ctx)
		return err == nil && len(ps) == 1 && !ps[0].Ended.IsZero() && ps[0].Signal == "SIGKILL" && ps[0].ExitCode == -1
	}, 10*time.Second, 10*time.Millisecond, "ps reports how the background command ended")
	require.ErrorIs(t, sb.Kill(ctx, bg.PID, ""), messages.ErrNotFound)

	// Timeouts kill the command.
	exit, err = sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sleep", "30"}, Timeout: 200 * time.Millisecond}, nil, nil)
	require.NoError(t, err)
	require.True(t, exit.TimedOut)

	list, err := c.ListSessions(ctx, "")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, sb.ID, list[0].ID)

	// A handle from the id and token alone finds the host.
	again, err := c.OpenSandbox(ctx, sb.ID, sb.Token, "")
	require.NoError(t, err)
	require.NoError(t, again.Delete(ctx))
	_, err = sb.Status(ctx)
	require.ErrorIs(t, err, messages.ErrSandboxGone)
	require.ErrorContains(t, err, "deleted")
	list, err = c.ListSessions(ctx, "")
	require.NoError(t, err)
	require.Empty(t, list)
	homes, err := os.ReadDir(h.root)
	require.NoError(t, err)
	require.Empty(t, homes, "the home is removed with the session")
}

func names(es []messages.FileEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	return out
}

// The files API's refusals hold over the wire.
func TestSessionFileRefusals(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startSessionHost(t, b, "h1", sessionOpts{})
	c := sessionClient(t, b)
	ctx := tctx(t)
	sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sh", "-c", "echo s > real; ln -s /etc/passwd link; ln real hard; mkfifo fifo; mkdir d; ln -s d dlink"}}, nil, nil)
	require.NoError(t, err)
	require.Zero(t, exit.ExitCode)
	for _, p := range []string{"link", "hard", "fifo", "dlink/x", "d"} {
		_, err := sb.CopyFrom(ctx, p, &bytes.Buffer{}, 0, -1)
		require.ErrorIs(t, err, messages.ErrFileRefused, p)
	}
	_, err = sb.CopyTo(ctx, strings.NewReader("x"), "link", scheduler.CopyOptions{})
	require.ErrorIs(t, err, messages.ErrFileRefused)
	_, err = sb.CopyTo(ctx, strings.NewReader("x"), "dlink/new", scheduler.CopyOptions{})
	require.ErrorIs(t, err, messages.ErrFileRefused)
	st, err := sb.Stat(ctx, "link")
	require.NoError(t, err)
	require.Equal(t, "symlink", st.Type, "stat reports the link, never its target")
	require.NoError(t, sb.Remove(ctx, "link", false))
	_, err = sb.CopyFrom(ctx, "../../etc/passwd", &bytes.Buffer{}, 0, -1)
	require.ErrorIs(t, err, messages.ErrNotFound, "\"..\" never leaves the home")
}

func TestSessionTokenScope(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startSessionHost(t, b, "h1", sessionOpts{capacity: 3, sweep: 50 * time.Millisecond})
	c := sessionClient(t, b)
	ctx := tctx(t)
	a, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	bb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{TTL: 1500 * time.Millisecond})
	require.NoError(t, err)

	// A's token on B is refused.
	forged := *bb
	forged.Token = a.Token
	_, err = c.OpenSandbox(ctx, bb.ID, a.Token, "")
	require.NoError(t, err)
	_, err = (&forged).Status(ctx)
	require.ErrorIs(t, err, messages.ErrTokenInvalid)
	_, err = (&forged).Exec(ctx, scheduler.ExecOptions{Argv: []string{"true"}}, nil, nil)
	require.ErrorIs(t, err, messages.ErrTokenInvalid)
	require.ErrorIs(t, (&forged).Delete(ctx), messages.ErrTokenInvalid)
	_, err = bb.Status(ctx)
	require.NoError(t, err, "B untouched")

	// After its expiry B's token is refused as expired.
	require.Eventually(t, func() bool {
		_, err := bb.Status(ctx)
		return err != nil
	}, 10*time.Second, 20*time.Millisecond)
	_, err = bb.Status(ctx)
	require.ErrorIs(t, err, messages.ErrTokenExpired)
	require.False(t, time.Now().Before(bb.Expires))
	_, err = a.Status(ctx)
	require.NoError(t, err)
}

func TestSessionIdleEviction(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startSessionHost(t, b, "h1", sessionOpts{sweep: 20 * time.Millisecond})
	c := sessionClient(t, b)
	ctx := tctx(t)
	const idle = 300 * time.Millisecond
	sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{Idle: idle})
	require.NoError(t, err)
	// A command running three idle timeouts keeps it.
	exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sleep", "0.9"}}, nil, nil)
	require.NoError(t, err, "never evicted while a command runs")
	require.Zero(t, exit.ExitCode)
	// A live background command holds it too (a server in the
	// background): past three idle timeouts without a request...
	_, err = sb.CopyTo(ctx, strings.NewReader(""), "hold", scheduler.CopyOptions{})
	require.NoError(t, err)
	bg, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sh", "-c", "while [ -e hold ]; do sleep 0.02; done"}, Background: true}, nil, nil)
	require.NoError(t, err)
	require.Positive(t, bg.PID)
	for held := time.Now().Add(3 * idle); time.Now().Before(held); {
		_, err := sb.Status(ctx) // status polls are not activity
		require.NoError(t, err, "never evicted while a background command runs")
		time.Sleep(10 * time.Millisecond) // a poll interval, not synchronisation
	}
	// ...then, once it has ended, it idles out the idle time after.
	require.NoError(t, sb.Remove(ctx, "hold", false))
	last := time.Now()
	var ended time.Time
	require.Eventually(t, func() bool {
		_, err := sb.Status(ctx)
		if err == nil {
			return false
		}
		require.ErrorIs(t, err, messages.ErrSandboxGone)
		ended = time.Now()
		return true
	}, 20*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, ended.Sub(last), idle, "evicted only after the idle time")
	_, err = sb.Status(ctx)
	require.ErrorContains(t, err, "idle")
}

// A host with 2 slots holding 2 sessions pulls no task, and a third create
// says no capacity at once.
func TestSessionCapacity(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	started := make(chan string, 4)
	// A pull waits for a task (holding a slot) far longer than a create
	// waits for one: both creates succeed only if the create preempts it.
	reg := prometheus.NewRegistry()
	startSessionHost(t, b, "h1", sessionOpts{capacity: 2, started: started, pullWait: 30 * time.Second, metrics: reg})
	c := sessionClient(t, b)
	ctx := tctx(t)
	s1, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	s2, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Delete(ctx) }) // else Stop waits out its drain for it
	require.EqualValues(t, 2, metricValue(t, reg, "warren_worker_sessions_open", nil))
	// The registry shows the slots as busy.
	require.Eventually(t, func() bool {
		hs, err := c.Hosts(ctx)
		return err == nil && len(hs) == 1 && hs[0].Free == 0
	}, 10*time.Second, 20*time.Millisecond)

	t0 := time.Now()
	_, err = c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.ErrorIs(t, err, messages.ErrNoCapacity)
	require.Less(t, time.Since(t0), 2*time.Second, "no capacity is said at once")

	publish(t, b.JS, execTask("cap", "t1", "true"))
	select {
	case id := <-started:
		t.Fatalf("task %s ran on a host whose slots are all sessions", id)
	case <-time.After(1500 * time.Millisecond): // three pull waits
	}
	// --wait: a create waiting for a slot gets the one a delete frees.
	done := make(chan error, 1)
	go func() {
		sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{Wait: 20 * time.Second})
		if err == nil {
			t.Cleanup(func() { _ = sb.Delete(ctx) })
		}
		done <- err
	}()
	require.NoError(t, s1.Delete(ctx))
	select {
	case err := <-done:
		require.NoError(t, err)
	case id := <-started:
		// The freed slot went to the task first; the create still waits.
		require.Equal(t, "t1", id)
		require.NoError(t, <-done)
	}
}

// A host that stops answering (its connection dropped, as in a crash)
// makes its sessions' clients fail with sandbox gone, also mid-exec.
func TestSessionHostGone(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	h := startSessionHost(t, b, "h1", sessionOpts{})
	c := sessionClient(t, b)
	ctx := tctx(t)
	sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	res := make(chan error, 1)
	go func() {
		_, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sleep", "30"}}, nil, nil)
		res <- err
	}()
	require.Eventually(t, func() bool { ps, err := sb.Ps(ctx); return err == nil && len(ps) == 1 }, 10*time.Second, 10*time.Millisecond)
	h.nc.Close()
	select {
	case err := <-res:
		require.ErrorIs(t, err, messages.ErrSandboxGone)
	case <-time.After(20 * time.Second):
		t.Fatal("exec on a gone host did not end")
	}
	_, err = sb.Status(ctx)
	require.ErrorIs(t, err, messages.ErrSandboxGone)
	require.ErrorContains(t, err, "not in the fleet")
}

func TestSessionHundredExecs(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startSessionHost(t, b, "h1", sessionOpts{})
	c := sessionClient(t, b)
	ctx := tctx(t)
	sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	for i := range 100 {
		var out bytes.Buffer
		exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sh", "-c", fmt.Sprintf("echo %d >> log; echo %d", i, i)}}, &out, nil)
		require.NoError(t, err)
		require.Zero(t, exit.ExitCode)
		require.Equal(t, fmt.Sprintf("%d\n", i), out.String())
	}
	var log bytes.Buffer
	_, err = sb.CopyFrom(ctx, "log", &log, 0, -1)
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(log.String()), "\n"), 100)
}

// A draining host refuses creates, keeps its sessions until the drain
// deadline, then ends them.
func TestSessionDrain(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	h := startSessionHost(t, b, "h1", sessionOpts{capacity: 2, sweep: 20 * time.Millisecond})
	c := sessionClient(t, b)
	ctx := tctx(t)
	sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- h.s.Stop(dctx) }()
	require.Eventually(t, func() bool {
		_, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
		return errors.Is(err, messages.ErrNoCapacity)
	}, 10*time.Second, 10*time.Millisecond, "a draining host takes no new sandbox")
	_, err = sb.Status(ctx)
	require.NoError(t, err, "its sandboxes live until the deadline")
	require.ErrorIs(t, <-stopped, context.DeadlineExceeded)
	_, err = sb.Status(ctx)
	require.ErrorIs(t, err, messages.ErrSandboxGone)
}
