package worker_test

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// TestSessionFilesInARowOverTheWire: five sessions in a row on one host
// whose warm sandboxes are slots, through the client as warren sandbox
// cp, exec and ls use it: in each, an upload is at its path for the
// commands, ls lists what the sandbox's own ls does, and cp out returns
// what a command wrote. The sessions after the first take the one slot.
func TestSessionFilesInARowOverTheWire(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	r := slotRunner(t)
	startSessionHost(t, b, "h1", sessionOpts{runner: r})
	c := sessionClient(t, b)
	ctx := tctx(t)
	where := map[string]int{}
	for i := range 5 {
		if i > 0 {
			waitSlotReady(t, r)
		}
		sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
		require.NoError(t, err)
		up := fmt.Sprintf("upload %d", i)
		_, err = sb.CopyTo(ctx, strings.NewReader(up), "in/up.txt", scheduler.CopyOptions{Parents: true})
		require.NoError(t, err)
		out := execOut(t, sb, fmt.Sprintf(`cat in/up.txt && echo && echo "wrote %d" > out.txt && echo "$HOME"`, i))
		got, home, _ := strings.Cut(out, "\n")
		require.Equal(t, up, got, "session %d: the command sees the upload", i)
		where[home]++

		es, err := sb.List(ctx, "")
		require.NoError(t, err)
		listed := names(es)
		sort.Strings(listed)
		inside := strings.Fields(execOut(t, sb, `ls -A | sort`))
		require.Equal(t, inside, listed, "session %d: ls shows what the sandbox sees", i)

		var back bytes.Buffer
		_, err = sb.CopyFrom(ctx, "out.txt", &back, 0, -1)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("wrote %d\n", i), back.String(), "session %d: cp out returns what the command wrote", i)
		require.NoError(t, sb.Delete(ctx))
	}
	require.Len(t, where, 2, "the first session cold, the four after it on the one slot: %v", where)
}

// TestSessionDiskFullOverTheWire: a copy into a session past its disk
// limit (create's disk_bytes) stops at the limit with disk_full, which
// names the limit and the fix and survives the reply's JSON for
// errors.Is; the home holds no more than the limit. The control: a copy
// within it succeeds.
func TestSessionDiskFullOverTheWire(t *testing.T) {
	const disk = 8 << 20
	b := brokertest.Start(t, brokertest.Options{})
	startSessionHost(t, b, "h1", sessionOpts{runner: slotRunner(t)})
	c := sessionClient(t, b)
	ctx := tctx(t)
	sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{Disk: disk})
	require.NoError(t, err)
	n, err := sb.CopyTo(ctx, bytes.NewReader(make([]byte, 2<<20)), "small.bin", scheduler.CopyOptions{})
	require.NoError(t, err, "control: within the limit")
	require.Equal(t, int64(2<<20), n)

	n, err = sb.CopyTo(ctx, io.LimitReader(zeros{}, 200<<20), "big.bin", scheduler.CopyOptions{})
	require.ErrorIs(t, err, messages.ErrDiskFull)
	require.ErrorContains(t, err, "(8388608 bytes)")
	require.ErrorContains(t, err, "--disk")
	require.LessOrEqual(t, n, int64(disk-2<<20))
	st, err := sb.Stat(ctx, "big.bin")
	require.NoError(t, err)
	require.Equal(t, n, st.Size, "what was copied stays, and no more")
	used := execOut(t, sb, `du -sk . | cut -f1`)
	var kib int64
	_, err = fmt.Sscan(used, &kib)
	require.NoError(t, err)
	require.LessOrEqual(t, kib<<10, int64(disk), "the home holds no more than its limit")
	require.NoError(t, sb.Delete(ctx))
}

// execOut runs sh -c script in sb and returns its stdout, trimmed.
func execOut(t *testing.T, sb *scheduler.Sandbox, script string) string {
	t.Helper()
	var out, errb bytes.Buffer
	exit, err := sb.Exec(tctx(t), scheduler.ExecOptions{Argv: []string{"sh", "-c", script}}, &out, &errb)
	require.NoError(t, err)
	require.Zero(t, exit.ExitCode, errb.String())
	return strings.TrimSpace(out.String())
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
