package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/home"
)

// scratchHelper runs one sandbox per isolated mode with the default
// scratch root (or WARREN_SANDBOX_TEST_ROOT when set) and prints
// "RESULT <mode> <scratch root> <output>" or "ERROR <mode> <error>".
func scratchHelper() int {
	for _, iso := range []Isolation{IsolationNamespace, IsolationLandlock} {
		r, err := startedNew(Config{Isolation: iso, ScratchRoot: os.Getenv("WARREN_SANDBOX_TEST_ROOT")})
		if err != nil {
			fmt.Printf("ERROR %s %v\n", iso, err)
			continue
		}
		var out bytes.Buffer
		_, err = r.Run(context.Background(), Spec{Argv: []string{"/bin/echo", "ran"}, Stdout: &out, Limits: Limits{Wall: time.Minute}})
		_ = r.Close()
		if err != nil {
			fmt.Printf("ERROR %s %v\n", iso, err)
			continue
		}
		fmt.Printf("RESULT %s %s %s\n", iso, r.cfg.ScratchRoot, strings.TrimSpace(out.String()))
	}
	return 0
}

// ordinaryUser is warren-test (the unprivileged suite's user) when it
// exists, else an id no local user has.
func ordinaryUser(t *testing.T) (uid, gid uint32) {
	if u, err := user.Lookup("warren-test"); err == nil {
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		require.NoError(t, err1)
		require.NoError(t, err2)
		return uint32(uid), uint32(gid)
	}
	return 64999, 64999
}

// runScratchHelper runs scratchHelper as uid/gid with TMPDIR tmp (and the
// scratch root root, "" for the default) and returns its output.
func runScratchHelper(t *testing.T, uid, gid uint32, tmp, root string) string {
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), helperEnv+"=scratch", "TMPDIR="+tmp, "WARREN_SANDBOX_TEST_ROOT="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

func requireOwnerMode(t *testing.T, dir string, uid uint32, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(dir)
	require.NoError(t, err)
	require.True(t, fi.IsDir(), dir)
	require.Equal(t, uid, fi.Sys().(*syscall.Stat_t).Uid, dir)
	require.Equal(t, mode, fi.Mode().Perm(), dir)
}

// TestRootAndAnOrdinaryUserShareAHost: on a host where root has run Warren,
// an ordinary user's sandboxes run. With one shared default (root's 0711
// /tmp/warren-sandboxes) they fail ("open /tmp/warren-sandboxes: permission
// denied"); each user has a scratch root of its own, and root still sweeps
// the earlier shared one.
func TestRootAndAnOrdinaryUserShareAHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: starts a worker as a second, ordinary user")
	}
	tmp, err := os.MkdirTemp("", "warren-shared-tmp-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o1777)) // a shared /tmp
	// What an earlier root worker left: the shared default, with a dead
	// worker's scratch directory in it.
	legacy := filepath.Join(tmp, "warren-sandboxes")
	require.NoError(t, os.Mkdir(legacy, 0o711))
	stale := filepath.Join(legacy, fmt.Sprintf("%s%d.1-x", scratchNamePrefix, os.Getpid()))
	require.NoError(t, os.Mkdir(stale, 0o700))
	uid, gid := ordinaryUser(t)

	// Control: the shared root is unusable for the ordinary user.
	out := runScratchHelper(t, uid, gid, tmp, legacy)
	require.Contains(t, out, "ERROR namespace sandbox setup failed at create scratch ("+legacy+"): mkdir "+legacy+"/run-", out)
	require.Contains(t, out, "permission denied", out)

	t.Setenv("TMPDIR", tmp)
	r, err := startedNew(Config{Isolation: IsolationNamespace, InitPath: testInitPath})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	rootDir := filepath.Join(tmp, "warren-sandboxes-0")
	require.Equal(t, rootDir, r.cfg.ScratchRoot)
	requireOwnerMode(t, rootDir, 0, 0o711)
	require.NoDirExists(t, stale, "root sweeps the old shared root")
	require.DirExists(t, legacy, "only dead owners' entries go")
	var o bytes.Buffer
	res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/echo", "ran"}, Stdout: &o})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode)
	require.Equal(t, "ran\n", o.String())

	userDir := filepath.Join(tmp, fmt.Sprintf("warren-sandboxes-%d", uid))
	out = runScratchHelper(t, uid, gid, tmp, "")
	require.NotContains(t, out, "ERROR", out)
	for _, m := range []string{"namespace", "landlock"} {
		require.Contains(t, out, fmt.Sprintf("RESULT %s %s ran\n", m, userDir), out)
	}
	requireOwnerMode(t, userDir, uid, 0o700)
}

// TestDefaultScratchRootMustBePrivate: the default scratch root lives in a
// shared TMPDIR, where anyone may create its name first; one that is not
// this user's own private directory is refused, never used.
func TestDefaultScratchRootMustBePrivate(t *testing.T) {
	mine := home.PrivateMode()
	tests := []struct {
		name   string
		make   func(t *testing.T, dir string)
		root   bool   // needs root
		refuse string // "" accepts
	}{
		{name: "missing: created private", make: func(*testing.T, string) {}},
		{name: "own, too open for others to write: refused", make: func(t *testing.T, dir string) {
			require.NoError(t, os.Mkdir(dir, 0o755))
			require.NoError(t, os.Chmod(dir, 0o777))
		}, refuse: "writable by group or others (mode 0777)"},
		{name: "own, narrower: mode set", make: func(t *testing.T, dir string) { require.NoError(t, os.Mkdir(dir, 0o700)) }},
		{name: "a symlink: refused", make: func(t *testing.T, dir string) {
			target := t.TempDir()
			require.NoError(t, os.Symlink(target, dir))
		}, refuse: "it is not a directory (L"},
		{name: "another user's: refused", root: true, make: func(t *testing.T, dir string) {
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chown(dir, 12345, 12345))
		}, refuse: fmt.Sprintf("it is owned by uid 12345, not by this user (uid %d)", os.Geteuid())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("needs root: only root can make a directory another user owns")
			}
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			dir := home.DefaultRoot()
			require.Equal(t, filepath.Join(tmp, "warren-sandboxes-"+strconv.Itoa(os.Geteuid())), dir)
			tt.make(t, dir)
			r, err := startedNew(Config{Isolation: IsolationNamespace, InitPath: testInitPath})
			if tt.refuse != "" {
				require.ErrorIs(t, err, ErrScratchRootNotPrivate)
				require.ErrorContains(t, err, tt.refuse)
				require.ErrorContains(t, err, "--scratch-root")
				// Doctor probes the same root: no ok, and the fix.
				c := probeNamespace(context.Background(), Config{})
				require.False(t, c.OK, c.Detail)
				require.Contains(t, c.Detail, tt.refuse)
				require.Contains(t, c.Fix, "--scratch-root")
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Close() })
			requireOwnerMode(t, dir, uint32(os.Geteuid()), mine)
		})
	}
}
