package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
	"golang.org/x/sys/unix"
)

const mib = 1 << 20

// TestDiskLimitHoldsForFileWrites: in every mode, as root and as an
// unprivileged worker, the file methods' writes count against the
// session's disk limit (rowDisk, the runner's default) together with
// what its commands wrote, in its first session (cold) and its second (a
// warm sandbox; on auto, a slot). Within the limit a write succeeds (the
// control); past it the write is refused with ErrDiskFull naming the
// limit, before any byte of it lands, and a copy in chunks stops at the
// limit. Nothing of it is on the host's disk: the home the writes land in
// is the sandbox's tmpfs. An unprivileged worker cannot bound a
// Landlock-only home: a session asking for a limit there is refused.
func TestDiskLimitHoldsForFileWrites(t *testing.T) {
	for _, k := range workerKinds() {
		t.Run(k.name, func(t *testing.T) {
			if k.cfg.Defaults.Disk < 0 {
				r := workerRunner(t, k)
				_, err := Start(context.Background(), r, Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Disk: rowDisk}}})
				require.ErrorIs(t, err, sandbox.ErrDiskQuotaUnavailable, "a limit nothing can hold is refused, never ignored")
				return
			}
			r := workerRunner(t, k)
			for i := range 2 {
				if i == 0 {
					waitIdle(t, r)
				} else {
					waitWarm(t, r)
				}
				s := start(t, r, Spec{})
				checkDiskLimit(t, s, rowDisk, files.HeldByFilesystem)
				require.False(t, landedOnHostDisk(t, s.Home(), "api.bin"), "session %d: the upload is not on the host's disk", i)
				require.NoError(t, s.Close(context.Background()))
			}
		})
	}
}

// TestDiskLimitHoldsForFileWritesIntoAnUnboundedHome: where no tmpfs
// holds the home to the disk limit (a caller's directory, isolation
// none), the file methods count the home's usage, what the commands
// wrote included, and refuse a write past the limit. The commands
// themselves are not held (the control: they write past it).
func TestDiskLimitHoldsForFileWritesIntoAnUnboundedHome(t *testing.T) {
	const disk = 16 * mib
	limits := sandbox.Limits{Disk: disk}
	for _, m := range modes {
		t.Run("home/"+string(m), func(t *testing.T) {
			s := start(t, newRunner(t, m), Spec{Home: callerHome(t), Sandbox: sandbox.Spec{Limits: limits}})
			checkDiskLimit(t, s, disk, files.HeldByCount)
		})
	}
	t.Run("none", func(t *testing.T) {
		r := newRunnerWith(t, sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true})
		s := start(t, r, Spec{Sandbox: sandbox.Spec{Limits: limits}})
		checkDiskLimit(t, s, disk, files.HeldByCount)
	})
}

// callerHome is a fresh directory for Spec.Home, its parent passable by
// a root worker's sandbox uids.
func callerHome(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "warren-session-quota-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	return filepath.Join(parent, "home")
}

// checkDiskLimit fills s's home, a home of disk bytes held as held says:
// a quarter of it through the file methods (the control), a quarter by a
// command, then a write of more than what is left is refused whole, and
// a copy in 1 MiB chunks (as warren sandbox cp does) stops at the limit.
func checkDiskLimit(t *testing.T, s *Session, disk int64, held files.Holder) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Write(ctx, "api.bin", bytes.Repeat([]byte("a"), int(disk/4)), files.WriteOptions{})
	require.NoError(t, err, "control: a write within the limit")
	res, _, errOut := run(t, s, sh(`dd if=/dev/zero of=cmd.bin bs=1M count=`+strconv.Itoa(int(disk/4/mib))+` status=none`))
	require.Equal(t, 0, res.ExitCode, errOut)

	_, err = s.Write(ctx, "over.bin", make([]byte, disk*3/4), files.WriteOptions{})
	requireDiskFull(t, err, disk)
	_, err = s.Stat(ctx, "over.bin")
	require.ErrorIs(t, err, os.ErrNotExist, "a refused write leaves nothing")

	copied := copyInChunks(t, s, "chunks.bin", disk)
	require.LessOrEqual(t, copied, disk/2, "the copy stops at the limit")
	require.Greater(t, copied, disk/2-2*mib, "the copy fills what is left")
	if held == files.HeldByFilesystem {
		res, out, errOut := run(t, s, sh(`du -sk "$HOME" | cut -f1`))
		require.Equal(t, 0, res.ExitCode, errOut)
		used, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		require.NoError(t, err)
		require.LessOrEqual(t, used*1024, disk, "the sandbox's own du sees its home within the limit")
		return
	}
	// Nothing holds the commands to a counted limit.
	res, _, errOut = run(t, s, sh(`dd if=/dev/zero of=cmd2.bin bs=1M count=`+strconv.Itoa(int(disk/mib))+` status=none`))
	require.Equal(t, 0, res.ExitCode, "control: the commands are not held: %s", errOut)
	_, err = s.Write(ctx, "tiny.txt", []byte("x"), files.WriteOptions{})
	requireDiskFull(t, err, disk)
}

// copyInChunks writes up to limit bytes to p in 1 MiB ranged chunks
// until one is refused for the disk limit, and returns what was written.
func copyInChunks(t *testing.T, s *Session, p string, limit int64) int64 {
	t.Helper()
	chunk := make([]byte, mib)
	var off int64
	for ; off < limit; off += mib {
		_, err := s.Write(context.Background(), p, chunk, files.WriteOptions{Offset: off, Ranged: off > 0})
		if err != nil {
			requireDiskFull(t, err, limit)
			return off
		}
	}
	t.Fatalf("%d bytes copied: the disk limit never refused a chunk", off)
	return off
}

// requireDiskFull checks err is the disk limit's refusal, naming it.
func requireDiskFull(t *testing.T, err error, limit int64) {
	t.Helper()
	require.ErrorIs(t, err, files.ErrDiskFull)
	var qe *files.QuotaError
	require.True(t, errors.As(err, &qe), "%v", err)
	require.Equal(t, limit, qe.Limit)
	require.Contains(t, err.Error(), "("+strconv.FormatInt(limit, 10)+" bytes)", "the message names the limit")
}

// landedOnHostDisk reports whether name is in the host directory home on
// a filesystem other than a tmpfs: the host's disk.
func landedOnHostDisk(t *testing.T, home, name string) bool {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(home, &st))
	if st.Type == unix.TMPFS_MAGIC {
		return false
	}
	_, err := os.Lstat(filepath.Join(home, name))
	return err == nil
}
