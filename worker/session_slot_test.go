package worker_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/scheduler"
)

// slotRunner is an isolated runner whose warm sandboxes are slots
// (namespace mode with the Landlock and seccomp layer, bounded homes):
// one per view, reused session after session.
func slotRunner(t *testing.T) *sandbox.Runner {
	t.Helper()
	root, err := os.MkdirTemp("", "warren-worker-slot-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o711))
	r, err := sandbox.New(sandbox.Config{ScratchRoot: root, InitPath: testInitPath, Prestart: 1, Defaults: sandbox.Limits{Disk: sandbox.DefaultDisk}})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, os.RemoveAll(root))
	})
	require.NoError(t, r.Start(context.Background()))
	return r
}

// waitSlotReady waits until the runner's warm slots are ready and none is
// being built: the default view's and the sessions' view's.
func waitSlotReady(t *testing.T, r *sandbox.Runner) {
	t.Helper()
	require.Eventually(t, func() bool { w := r.Warm(); return w.Ready == 2 && w.Starting == 0 },
		30*time.Second, 10*time.Millisecond, "the warm slots are ready: %+v", r.Warm())
}

// sessionTraces are what probeSession found of a session's traces, and
// where it ran (its home and uid: the slot).
type sessionTraces struct {
	Upload, Command, Tmp, Shm bool // files: the file methods' upload; a command's in the home, /tmp, /dev/shm
	Procs                     int  // the session's daemon, on the host
	Where                     string
}

// leaveTraces leaves, in sb, an upload, a command's files in its home,
// /tmp and /dev/shm, and a daemon (setsid, so the session does not count
// it as running) whose command line holds marker.
func leaveTraces(t *testing.T, sb *scheduler.Sandbox, marker string) {
	t.Helper()
	ctx := tctx(t)
	_, err := sb.CopyTo(ctx, strings.NewReader("uploaded"), "upload.txt", scheduler.CopyOptions{})
	require.NoError(t, err)
	var errb bytes.Buffer
	exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sh", "-c",
		`echo c > command.txt && echo t > /tmp/tmp.txt && echo s > /dev/shm/shm.txt && setsid sleep ` + marker + ` </dev/null >/dev/null 2>&1 &`}}, nil, &errb)
	require.NoError(t, err)
	require.Zero(t, exit.ExitCode, errb.String())
	require.Eventually(t, func() bool { return len(hostProcsWith(t, marker)) == 1 }, 10*time.Second, 10*time.Millisecond, "the daemon runs")
}

// probeSession looks for the traces through sb's file methods and
// commands, and for the daemon in the host's process table.
func probeSession(t *testing.T, sb *scheduler.Sandbox, marker string) sessionTraces {
	t.Helper()
	ctx := tctx(t)
	es, err := sb.List(ctx, "")
	require.NoError(t, err)
	listed := names(es)
	var out, errb bytes.Buffer
	exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"sh", "-c",
		`echo "$HOME $(id -u)"; for f in "$HOME/upload.txt" "$HOME/command.txt" /tmp/tmp.txt /dev/shm/shm.txt; do test -e "$f" && echo "$f"; done; true`}}, &out, &errb)
	require.NoError(t, err)
	require.Zero(t, exit.ExitCode, errb.String())
	where, seen, _ := strings.Cut(out.String(), "\n")
	return sessionTraces{
		Upload:  contains(listed, "upload.txt") || strings.Contains(seen, "/upload.txt"),
		Command: contains(listed, "command.txt") || strings.Contains(seen, "/command.txt"),
		Tmp:     strings.Contains(seen, "/tmp/tmp.txt"),
		Shm:     strings.Contains(seen, "/dev/shm/shm.txt"),
		Procs:   len(hostProcsWith(t, marker)),
		Where:   where,
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// hostProcsWith lists the host's processes whose command line holds marker.
func hostProcsWith(t *testing.T, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestSessionEndLeavesNothingOnTheSlot: alice's session on a warm slot
// leaves an upload, a command's files in its home, /tmp and /dev/shm, and
// a daemon; it ends (deleted, its TTL, idle); bob's session on the same
// slot (same home, same uid) finds none of them, through the file
// methods, his commands or the host's process table. The control: alice's
// own probe finds every trace.
func TestSessionEndLeavesNothingOnTheSlot(t *testing.T) {
	ends := []struct {
		reason messages.SandboxEnd
		opts   scheduler.CreateOptions
		end    func(t *testing.T, sb *scheduler.Sandbox)
	}{
		{messages.EndDeleted, scheduler.CreateOptions{}, func(t *testing.T, sb *scheduler.Sandbox) { require.NoError(t, sb.Delete(tctx(t))) }},
		{messages.EndTTL, scheduler.CreateOptions{TTL: 5 * time.Second}, waitGone},
		{messages.EndIdle, scheduler.CreateOptions{Idle: 2 * time.Second}, waitGone},
	}
	for _, e := range ends {
		t.Run(string(e.reason), func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Options{})
			r := slotRunner(t)
			startSessionHost(t, b, "h1", sessionOpts{capacity: 2, runner: r, sweep: 100 * time.Millisecond})
			alice, bob := tenantClient(t, b, "alice"), tenantClient(t, b, "bob")
			ctx := tctx(t)
			warm, err := alice.CreateSandbox(ctx, scheduler.CreateOptions{}) // makes the sessions' view's pool
			require.NoError(t, err)
			require.NoError(t, warm.Delete(ctx))
			waitSlotReady(t, r)
			marker := "8" + strconv.Itoa(int(time.Now().UnixNano()%1e8))

			a, err := alice.CreateSandbox(ctx, e.opts)
			require.NoError(t, err)
			leaveTraces(t, a, marker)
			mine := probeSession(t, a, marker)
			require.Equal(t, sessionTraces{Upload: true, Command: true, Tmp: true, Shm: true, Procs: 1, Where: mine.Where}, mine,
				"control: the probe sees alice's traces")
			e.end(t, a)
			require.Eventually(t, func() bool {
				list, err := alice.ListSessions(ctx, "")
				return err == nil && len(list) == 0
			}, 30*time.Second, 20*time.Millisecond, "the host ends alice's session")
			_, err = a.Status(ctx)
			if e.reason == messages.EndTTL {
				require.ErrorIs(t, err, messages.ErrTokenExpired, "its token expires with it")
			} else {
				require.ErrorIs(t, err, messages.ErrSandboxGone)
				require.ErrorContains(t, err, string(e.reason))
			}
			waitSlotReady(t, r)

			next, err := bob.CreateSandbox(ctx, scheduler.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, sessionTraces{Where: mine.Where}, probeSession(t, next, marker),
				"bob's session, on alice's slot, finds nothing of hers")
			var got bytes.Buffer
			_, err = next.CopyFrom(ctx, "upload.txt", &got, 0, -1)
			require.ErrorIs(t, err, messages.ErrNotFound)
			require.NoError(t, next.Delete(ctx))
		})
	}
}

// waitGone leaves sb to end on its own (the host's reaper).
func waitGone(*testing.T, *scheduler.Sandbox) {}
