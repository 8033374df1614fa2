package sandbox

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writes300MiB writes three 100 MiB files: into the home, its TMPDIR and
// $SHM (/dev/shm in namespace mode, else the home); exit 3 names a failed
// write.
const writes300MiB = `for f in f1 "$TMPDIR/f2" "$SHM/f3"; do dd if=/dev/zero of=$f bs=1M count=100 status=none || exit 3; done; echo wrote`

// mountsUnder lists the mount points in /proc/self/mountinfo at or under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && isUnder(f[4], dir) {
			out = append(out, f[4]+" "+strings.Join(f[6:], " "))
		}
	}
	return out
}

type quotaRun struct {
	res       *Result
	err       error
	out       string
	home      string
	mountedAt []string // host mounts at the home while it was still there
	f1Size    int64    // the first file's size, read from the host after the run
}

func runQuota(t *testing.T, r *Runner, iso Isolation, disk int64) quotaRun {
	t.Helper()
	var buf bytes.Buffer
	var q quotaRun
	shm := "/dev/shm"
	if iso == IsolationLandlock {
		shm = "." // no /dev/shm in Landlock-only mode
	}
	spec := Spec{
		Env:       map[string]string{"SHM": shm},
		Argv:      sh(writes300MiB),
		Isolation: iso,
		Stdout:    &buf,
		Stderr:    &buf,
		Limits:    Limits{Disk: disk, Wall: time.Minute},
		Finished: func(home string) {
			q.home = home
			q.mountedAt = mountsUnder(t, home)
			if fi, err := os.Stat(home + "/f1"); err == nil {
				q.f1Size = fi.Size()
			}
		},
	}
	q.res, q.err = r.Run(context.Background(), spec)
	q.out = buf.String()
	if q.home != "" {
		require.Empty(t, mountsUnder(t, q.home), "teardown left a mount behind")
	}
	if r.cfg.Prestart == 0 {
		require.Empty(t, mountsUnder(t, r.cfg.ScratchRoot), "teardown left a mount behind")
	}
	return q
}

// TestDiskQuota: 3 x 100 MiB (home, TMPDIR, /dev/shm) against a 200 MiB
// disk limit fails with ENOSPC and DiskFull; against 400 MiB (the control)
// the same writes succeed, which they could not in 64 MiB /tmp and
// /dev/shm of their own. A root worker's home tmpfs is on the host; an unprivileged
// worker's namespace-mode home is bounded by its init, and still read
// from the host after the run; its Landlock-only runs are refused unless
// the limit is explicitly unbounded. No mount is left behind.
func TestDiskQuota(t *testing.T) {
	const mib = 1 << 20
	root := os.Geteuid() == 0
	for _, tc := range []struct {
		name string
		iso  Isolation
		r    func(t *testing.T) *Runner
	}{
		{"namespace", IsolationNamespace, func(t *testing.T) *Runner { return nsRunner(t) }},
		{"layered", IsolationNamespace, func(t *testing.T) *Runner {
			llRequire(t, 6)
			r := nsRunner(t)
			r.noLayer.Store(false) // namespace + Landlock + seccomp, as in production
			return r
		}},
		{"landlock", IsolationLandlock, func(t *testing.T) *Runner { llRequire(t, 6); return llRunner(t, 1_900_100_930) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r(t)
			if tc.iso == IsolationLandlock && !root {
				q := runQuota(t, r, tc.iso, 200*mib)
				require.ErrorIs(t, q.err, ErrDiskQuotaUnavailable)
				// Control: unbounded on the operator's explicit choice.
				q = runQuota(t, r, tc.iso, -1)
				require.NoError(t, q.err, q.out)
				require.Equal(t, 0, q.res.ExitCode, q.out)
				return
			}
			over := runQuota(t, r, tc.iso, 200*mib)
			require.NoError(t, over.err, over.out)
			require.Equal(t, 3, over.res.ExitCode, over.out)
			require.Contains(t, over.out, "No space left on device")
			require.True(t, over.res.DiskFull)
			require.Equal(t, int64(100*mib), over.f1Size, "Finished reads the home as the task left it")
			if root {
				require.Len(t, over.mountedAt, 1, "the home's tmpfs is on the host while the run is finishing")
				require.Contains(t, over.mountedAt[0], "tmpfs warren-home")
			}

			under := runQuota(t, r, tc.iso, 400*mib)
			require.NoError(t, under.err, under.out)
			require.Equal(t, 0, under.res.ExitCode, under.out)
			require.Contains(t, under.out, "wrote")
			require.False(t, under.res.DiskFull)
			require.Equal(t, int64(100*mib), under.f1Size)
		})
	}
}

// TestDiskQuotaWarm: warm homes are bounded too. A root worker's is built
// with the default limit and resized to the task's; an unprivileged
// worker's init mounts it at the default limit, so it serves only runs
// with that limit and another starts cold (the control). The run's $HOME
// existing before the run proves which.
func TestDiskQuotaWarm(t *testing.T) {
	const mib = 1 << 20
	root := os.Geteuid() == 0
	r := nsRunner(t)
	r.cfg.Prestart = 1
	r.cfg.Defaults.Disk = DefaultDisk // warm homes are bounded with it
	if !root {
		r.cfg.Defaults.Disk = 200 * mib // the only limit an unprivileged warm home serves
	}
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
	for _, tc := range []struct {
		disk int64
		exit int
		warm bool
	}{{200 * mib, 3, true}, {400 * mib, 0, root}} {
		require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 30*time.Second, 10*time.Millisecond)
		before := map[string]bool{}
		ents, err := os.ReadDir(r.cfg.ScratchRoot)
		require.NoError(t, err)
		for _, e := range ents {
			before[r.cfg.ScratchRoot+"/"+e.Name()] = true
		}
		var buf bytes.Buffer
		res, err := r.Run(context.Background(), Spec{
			Argv:   sh(`echo "$HOME"; ` + writes300MiB),
			Env:    map[string]string{"SHM": "/dev/shm"},
			Stdout: &buf, Stderr: &buf,
			Limits: Limits{Disk: tc.disk, Wall: time.Minute},
		})
		require.NoError(t, err, buf.String())
		require.Equal(t, tc.exit, res.ExitCode, buf.String())
		require.Equal(t, tc.exit != 0, res.DiskFull)
		home, _, _ := strings.Cut(buf.String(), "\n")
		require.Equal(t, tc.warm, before[home], "ran warm: %v (%s)", tc.warm, buf.String())
	}
}

// TestDiskQuotaHoldsTheTasksFiles: Spec.Files are written into the
// bounded home, cold and warm, root (the tmpfs mounted before the files)
// and unprivileged (filled through the init's view once it mounted the
// home): the task reads them, and they count against the limit, so 4 MiB
// more on 6 MiB of files fails at 8 MiB; the control, 16 MiB, succeeds.
func TestDiskQuotaHoldsTheTasksFiles(t *testing.T) {
	const mib = 1 << 20
	files := map[string][]byte{"a": bytes.Repeat([]byte("x"), 6*mib)}
	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(t *testing.T) {
			r := nsRunner(t)
			if warm {
				r.cfg.Prestart = 1
				r.cfg.Defaults.Disk = 8 * mib
				require.NoError(t, r.Start(context.Background()))
				t.Cleanup(func() { require.NoError(t, r.Close()) })
			}
			for _, tc := range []struct {
				disk int64
				exit int
			}{{8 * mib, 3}, {16 * mib, 0}} {
				if warm {
					k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
					require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 30*time.Second, 10*time.Millisecond)
				}
				out := runIn(t, r, Spec{
					Argv:   sh(`wc -c < a; dd if=/dev/zero of=b bs=1M count=4 status=none || exit 3`),
					Files:  files,
					Limits: Limits{Disk: tc.disk},
				})
				require.Equal(t, tc.exit, out.res.ExitCode, out.stderr)
				require.Equal(t, "6291456\n", out.stdout, out.stderr)
				require.Equal(t, tc.exit != 0, out.res.DiskFull)
			}
		})
	}
}

// TestDiskQuotaWarmWithoutDefaultLimit: a runner without a default disk
// limit keeps unbounded warm homes, so a run that asks for a bound starts
// cold and is bounded (its $HOME did not exist before); the control, an
// unbounded run, is served warm.
func TestDiskQuotaWarmWithoutDefaultLimit(t *testing.T) {
	r := nsRunner(t)
	r.cfg.Prestart = 1
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
	for _, tc := range []struct {
		disk int64
		warm bool
	}{{0, true}, {4 << 20, false}} {
		require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 30*time.Second, 10*time.Millisecond)
		before := scratchDirs(t, r)
		out := runIn(t, r, Spec{
			Argv:   sh(`echo "$HOME"; dd if=/dev/zero of=f bs=1M count=8 status=none || exit 3`),
			Limits: Limits{Disk: tc.disk},
		})
		home, _, _ := strings.Cut(out.stdout, "\n")
		require.Equal(t, tc.warm, before[home], "ran warm: %v (%s)", tc.warm, out.stdout)
		if tc.warm {
			require.Equal(t, 0, out.res.ExitCode, out.stderr)
			continue
		}
		require.Equal(t, 3, out.res.ExitCode, out.stderr)
		require.True(t, out.res.DiskFull)
	}
}

// TestDiskQuotaHeldHomeIsReleased: an unprivileged worker holds a
// descriptor of each init-mounted home (it pins the tmpfs, up to the disk
// limit of memory) only until teardown: Spec.Finished reads the home
// through it, and after the run the process has no more descriptors than
// before, warm (the refilled sandbox holds as many as the one used) and
// cold.
func TestDiskQuotaHeldHomeIsReleased(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("a root worker mounts homes on the host and holds no descriptor of them")
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		return len(ents)
	}
	r := nsRunner(t)
	r.cfg.Prestart = 1
	r.cfg.Defaults.Disk = 8 << 20
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
	for _, disk := range []int64{8 << 20, 16 << 20} { // warm, then cold
		require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 30*time.Second, 10*time.Millisecond)
		before, held := fds(), ""
		res, err := r.Run(context.Background(), Spec{
			Argv:     []string{"/bin/true"},
			Limits:   Limits{Disk: disk, Wall: time.Minute},
			Finished: func(home string) { held = home },
		})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		require.True(t, strings.HasPrefix(held, "/proc/self/fd/"), "the home was read through a held descriptor: %q", held)
		require.Eventually(t, func() bool { return fds() <= before }, 10*time.Second, 10*time.Millisecond, "the held home is closed at teardown (%d descriptors before)", before)
	}
}

// TestDiskQuotaTmpRunsPrograms: with a bounded home, /tmp and /dev/shm are
// its directories, nosuid and nodev as the fresh tmpfs they replace, and
// programs run from them as from the home (the control).
func TestDiskQuotaTmpRunsPrograms(t *testing.T) {
	r := nsRunner(t)
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		out := runIn(t, r, Spec{Argv: sh(`cp /bin/true ./t && ./t && echo home-exec; cp /bin/true ` + dir + `/t && ` + dir + `/t && echo tmp-exec`), Limits: Limits{Disk: 64 << 20}})
		require.Equal(t, 0, out.res.ExitCode, out.stderr)
		require.Equal(t, "home-exec\ntmp-exec\n", out.stdout, out.stderr)
	}
	out := runIn(t, r, Spec{Argv: sh(`grep -E '^[0-9]+ [0-9]+ [^ ]+ [^ ]+ /(tmp|dev/shm) ' /proc/self/mountinfo | cut -d' ' -f5,6`), Limits: Limits{Disk: 64 << 20}})
	requireNosuidNodev(t, strings.Split(strings.TrimSpace(out.stdout), "\n"))
}

// TestDiskQuotaOfADeadWorkerIsSwept: a SIGKILLed root worker leaves its
// homes' tmpfs mounted (nothing unmounts them); the next Runner on that
// scratch root unmounts and removes them. Control: a live owner's
// mounted home is kept.
func TestDiskQuotaOfADeadWorkerIsSwept(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only a root worker mounts homes on the host")
	}
	r := nsRunner(t)
	root := r.cfg.ScratchRoot
	dead := scratchDir{path: root + "/" + scratchNamePrefix + "999999999.1-x", owned: true}
	live := scratchDir{path: root + "/" + scratchPrefix() + "live", owned: true}
	for _, s := range []*scratchDir{&dead, &live} {
		require.NoError(t, os.Mkdir(s.path, 0o700))
		require.NoError(t, s.bound(quotaHost, 1<<20, 0, 0))
		require.NoError(t, os.WriteFile(s.path+"/f", []byte("x"), 0o600))
	}
	t.Cleanup(func() { require.NoError(t, live.cleanup()) })
	require.Len(t, mountsUnder(t, root), 2)

	r.sweepStale()
	require.Equal(t, mountsUnder(t, live.path), mountsUnder(t, root), "only the live owner's home is still mounted")
	_, err := os.Lstat(dead.path)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(live.path + "/f")
	require.NoError(t, err)
}
