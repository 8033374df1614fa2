package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// writeProbe tries to create/append path and prints OK or the errno.
func writeProbe(path string) []string {
	return py(fmt.Sprintf(`
import os
try:
    with open(%q, "a") as f: f.write("pwned\n")
    print("OK")
except OSError as e:
    print("ERR", e.errno)
`, path))
}

// readProbe prints the file's content or the errno.
func readProbe(path string) []string {
	return py(fmt.Sprintf(`
try:
    print("OK", open(%q).read())
except OSError as e:
    print("ERR", e.errno)
`, path))
}

func TestWriteOutsideScratchFailsInsideSucceedsOutside(t *testing.T) {
	r := nsRunner(t)
	// A host directory anyone may write to, outside every allow-listed path.
	dir := hostDir(t)
	require.NoError(t, os.Chmod(dir, 0o777))
	target := filepath.Join(dir, "victim")

	code, out := runOut(t, writeProbe(target)...)
	require.Equal(t, 0, code)
	require.Equal(t, "OK\n", out, "control: the probe writes on the host")
	require.NoError(t, os.Remove(target))

	o := runIn(t, r, Spec{Argv: writeProbe(target)})
	require.Equal(t, fmt.Sprintf("ERR %d\n", unix.ENOENT), o.stdout, "the directory does not exist inside")
	require.NoFileExists(t, target)
}

func TestWriteToRootUsrAndToolchainFails(t *testing.T) {
	r := nsRunner(t)
	tc := hostDir(t)
	require.NoError(t, os.Chmod(tc, 0o777)) // host-writable for everyone
	tcFile := filepath.Join(tc, "lib.olean")
	require.NoError(t, os.WriteFile(tcFile, []byte("toolchain"), 0o666))

	code, out := runOut(t, writeProbe(filepath.Join(tc, "new"))...)
	require.Equal(t, 0, code)
	require.Equal(t, "OK\n", out, "control: the toolchain dir is writable on the host")

	for _, target := range []string{"/pwned", "/usr/pwned", "/etc/passwd", filepath.Join(tc, "new2"), tcFile} {
		t.Run(target, func(t *testing.T) {
			o := runIn(t, r, Spec{Argv: writeProbe(target), ReadOnly: []string{tc}})
			require.True(t, strings.HasPrefix(o.stdout, "ERR "), "write to %s must fail inside, got %q", target, o.stdout)
			require.Contains(t, []string{fmt.Sprintf("ERR %d\n", unix.EROFS), fmt.Sprintf("ERR %d\n", unix.EACCES)}, o.stdout)
		})
	}
	b, err := os.ReadFile(tcFile)
	require.NoError(t, err)
	require.Equal(t, "toolchain", string(b))
	require.NoFileExists(t, filepath.Join(tc, "new2"))
}

func TestScratchIsWritableAndSharedWithHost(t *testing.T) {
	r := nsRunner(t)
	scratch := hostDir(t)
	o := runIn(t, r, Spec{Argv: sh(`echo made-inside > "$HOME/out.txt" && echo "$HOME"`), Scratch: scratch})
	require.Equal(t, 0, o.res.ExitCode, o.stderr)
	b, err := os.ReadFile(filepath.Join(scratch, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "made-inside\n", string(b))
	real, err := filepath.EvalSymlinks(scratch)
	require.NoError(t, err)
	require.Equal(t, real+"\n", o.stdout, "HOME is the scratch directory")
	fi, err := os.Stat(filepath.Join(scratch, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, uint32(os.Getuid()), fi.Sys().(*syscall.Stat_t).Uid, "a lent scratch dir is given back to its owner")
}

func TestReadOutsideAllowListFailsInsideSucceedsOutside(t *testing.T) {
	r := nsRunner(t)
	secret := hostFile(t, "s3cret")
	code, out := runOut(t, readProbe(secret)...)
	require.Equal(t, 0, code)
	require.Equal(t, "OK s3cret\n", out, "control: world-readable on the host")

	o := runIn(t, r, Spec{Argv: readProbe(secret)})
	require.Equal(t, fmt.Sprintf("ERR %d\n", unix.ENOENT), o.stdout)

	// Paths that exist on the host and must not exist inside.
	for _, p := range []string{"/root", "/home", "/etc/shadow", "/etc/hostname", "/var", "/opt", filepath.Dir(secret)} {
		t.Run(p, func(t *testing.T) {
			_, err := os.Lstat(p)
			if errors.Is(err, os.ErrNotExist) {
				t.Skipf("%s does not exist on this host: nothing to hide", p)
			}
			require.NoError(t, err, "control: %s exists on the host", p)
			o := runIn(t, r, Spec{Argv: py(fmt.Sprintf(`import os; print(os.path.lexists(%q))`, p))})
			require.Equal(t, "False\n", o.stdout)
		})
	}
}

func TestWorkerEnvironmentIsNotVisible(t *testing.T) {
	r := nsRunner(t)
	t.Setenv("WARREN_TEST_SECRET_TOKEN", "hf_abc")
	t.Setenv("LD_PRELOAD", "/nonexistent.so")
	code, out := runOut(t, sh(`echo "$WARREN_TEST_SECRET_TOKEN"`)...)
	require.Equal(t, 0, code)
	require.Contains(t, out, "hf_abc\n", "control: a host child inherits it")

	o := runIn(t, r, Spec{
		Argv: py(`import os; print(sorted(os.environ.items()))`),
		Env:  map[string]string{"TASK_VAR": "x", "PATH": "/usr/bin:/nonexistent/bin:/bin"},
	})
	require.NotContains(t, o.stdout, "hf_abc")
	require.NotContains(t, o.stdout, "LD_PRELOAD")
	require.NotContains(t, o.stdout, "/nonexistent", "PATH is pruned to what exists")
	require.Contains(t, o.stdout, "('TMPDIR', '/tmp')")
	require.Contains(t, o.stdout, "('TASK_VAR', 'x')")
	require.Contains(t, o.stdout, "('PATH', '/usr/bin:/bin')")

	// The worker's /proc/<pid>/environ: the worker's pid is not in the
	// sandbox's pid namespace.
	pid := os.Getpid()
	_, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	require.NoError(t, err, "control: readable on the host")
	o = runIn(t, r, Spec{Argv: readProbe(fmt.Sprintf("/proc/%d/environ", pid))})
	require.Equal(t, fmt.Sprintf("ERR %d\n", unix.ENOENT), o.stdout)
}

// TestTmpIsPrivateAndSizeCapped: the namespace mode's /tmp is its own
// (the host's is invisible), capped at its size, nosuid and nodev, and
// programs run from it as from the home (the control).
func TestTmpIsPrivateAndSizeCapped(t *testing.T) {
	r := nsRunner(t)
	marker, err := os.CreateTemp("", "warren-host-tmp-marker-")
	require.NoError(t, err)
	require.NoError(t, marker.Close())
	t.Cleanup(func() { _ = os.Remove(marker.Name()) })

	script := `
cp /bin/true "$HOME/t" && "$HOME/t" && echo scratch-exec-ok
cp /bin/true /tmp/t && /tmp/t; echo "tmp-exec=$?"
test -e ` + marker.Name() + ` && echo host-tmp-visible
dd if=/dev/zero of=/tmp/fill bs=1M count=16 2>/dev/null; echo "fill=$?"
du -k /tmp/fill | cut -f1
dd if=/dev/zero of="$HOME/fill" bs=1M count=16 2>/dev/null; echo "scratch-fill=$?"
grep -E '^[0-9]+ [0-9]+ [^ ]+ [^ ]+ /(tmp|dev/shm) ' /proc/self/mountinfo | cut -d' ' -f5,6
`
	o := runIn(t, r, Spec{Argv: sh(script), Limits: Limits{TmpSize: 4 << 20}})
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Equal(t, "scratch-exec-ok", lines[0], "control: exec from scratch works")
	require.Equal(t, "tmp-exec=0", lines[1], "exec from /tmp works as from the home")
	require.NotContains(t, o.stdout, "host-tmp-visible")
	require.Equal(t, "fill=1", lines[2], "/tmp fills up at its size cap")
	var kb int
	_, err = fmt.Sscan(lines[3], &kb)
	require.NoError(t, err)
	require.LessOrEqual(t, kb, 4096)
	require.Equal(t, "scratch-fill=0", lines[4], "control: the same write fits in scratch")
	requireNosuidNodev(t, lines[5:])
}

// requireNosuidNodev holds /tmp and /dev/shm (mountinfo's mount point and
// options, one line each) to nosuid and nodev.
func requireNosuidNodev(t *testing.T, mounts []string) {
	t.Helper()
	require.Len(t, mounts, 2, "one /tmp and one /dev/shm mount: %q", mounts)
	for _, m := range mounts {
		require.Regexp(t, `^/(tmp|dev/shm) .*\bnosuid\b`, m)
		require.Regexp(t, `\bnodev\b`, m)
	}
}

func TestAllowListedFileCannotBeRenamedOrModified(t *testing.T) {
	r := nsRunner(t)
	before, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	o := runIn(t, r, Spec{Argv: py(`
import os
for f in (lambda: os.rename("/etc/passwd", "/etc/p2"), lambda: os.rename("/usr/bin/true", "/usr/bin/t2"),
          lambda: os.chmod("/usr/bin/true", 0o777), lambda: open("/etc/passwd", "w"), lambda: os.unlink("/etc/group"),
          lambda: os.mkdir("/newdir"), lambda: os.symlink("/", "/usr/x")):
    try:
        f(); print("OK")
    except OSError as e:
        print("ERR", e.errno)
`)})
	for _, l := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		require.True(t, strings.HasPrefix(l, "ERR "), "every modification must fail: %q", o.stdout)
	}
	after, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestCannotMountRemountOrBind(t *testing.T) {
	r := nsRunner(t)
	probe := py(`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
for args in ((b"none", b"/tmp", b"tmpfs", 0, None), (b"", b"/usr", None, MS_REMOUNT|MS_BIND, None),
             (b"", b"/", None, MS_REMOUNT, None), (b"/usr", b"/tmp", None, MS_BIND, None)):
    r = libc.mount(*args)
    print("OK" if r == 0 else "ERR %d" % ctypes.get_errno())
`)
	o := runIn(t, r, Spec{Argv: probe})
	require.Equal(t, strings.Repeat(fmt.Sprintf("ERR %d\n", unix.EPERM), 4), o.stdout)
	// mount(8) too.
	o = runIn(t, r, Spec{Argv: sh("mount -t tmpfs none /tmp 2>/dev/null; echo $?")})
	require.NotEqual(t, "0\n", o.stdout)
}

func TestOldRootIsUnreachable(t *testing.T) {
	r := nsRunner(t)
	for _, p := range []string{"/root", "/home", "/etc/shadow"} {
		_, err := os.Lstat(p)
		require.NoError(t, err, "control: %s exists on the host", p)
	}
	o := runIn(t, r, Spec{Argv: py(`
import os
for p in ("/../root", "/../../home", "/proc/1/root/root", "/proc/1/root/etc/shadow", "/proc/self/root/home",
          "/proc/self/cwd/../../../../../../home", "/proc/1/cwd/../../../../../root"):
    print(p, os.path.lexists(p))
print(sorted(os.listdir("/..")) == sorted(os.listdir("/")))
`)})
	require.NotContains(t, o.stdout, "True\nTrue", o.stdout)
	for _, l := range strings.Split(strings.TrimSpace(o.stdout), "\n")[:7] {
		require.True(t, strings.HasSuffix(l, " False"), "%s must not exist inside", l)
	}
	require.True(t, strings.HasSuffix(strings.TrimSpace(o.stdout), "True"), "/.. is / itself")
}

func TestInheritedFdsDoNotCrossIntoTheSandbox(t *testing.T) {
	r := nsRunner(t)
	// A descriptor without O_CLOEXEC, as a careless library would leave.
	fd, err := unix.Open("/etc/hostname", unix.O_RDONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	listFds := py(`import os; print(sorted(int(x) for x in os.listdir("/proc/self/fd")))`)

	_, out := runOut(t, listFds...)
	require.Contains(t, out, fmt.Sprintf(" %d", fd), "control: a host child inherits fd %d", fd)

	o := runIn(t, r, Spec{Argv: listFds})
	// 0-2 and the one listdir itself opens.
	require.Equal(t, "[0, 1, 2, 3]\n", o.stdout)
}

func TestSymlinkedToolchainPathIsUsable(t *testing.T) {
	r := nsRunner(t)
	real := hostDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(real, "tool.txt"), []byte("v4.9"), 0o644))
	link := filepath.Join(hostDir(t), "toolchain")
	require.NoError(t, os.Symlink(real, link))

	o := runIn(t, r, Spec{Argv: sh(`cat ` + link + `/tool.txt && echo x > ` + link + `/new; echo " write=$?"`), ReadOnly: []string{link}})
	require.Contains(t, o.stdout, "v4.9", "readable through the symlink")
	require.NotContains(t, o.stdout, "write=0")
	require.Contains(t, o.stdout, "write=")
	require.NoFileExists(t, filepath.Join(real, "new"))
}

func TestScratchSymlinksAreNotFollowedByTheWorker(t *testing.T) {
	r := nsRunner(t)
	scratch := hostDir(t)
	victim := hostDir(t)
	// A previous run planted links in a reused scratch directory.
	o := runIn(t, r, Spec{Argv: sh("ln -s " + victim + " $HOME/out && ln -s /etc $HOME/cwd && echo planted"), Scratch: scratch})
	require.Equal(t, "planted\n", o.stdout, o.stderr)

	_, err := r.Run(context.Background(), Spec{Argv: sh("true"), Scratch: scratch, Files: map[string][]byte{"out/x": []byte("pwned")}})
	var se *SetupError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "write files", se.Step)
	require.NoFileExists(t, filepath.Join(victim, "x"))

	_, err = r.Run(context.Background(), Spec{Argv: sh("true"), Scratch: scratch, Cwd: "cwd/sub"})
	require.ErrorAs(t, err, &se)
	require.Equal(t, "create cwd", se.Step)
	require.NoDirExists(t, "/etc/sub")
}

func TestNestedMountUnderAReadOnlyPathIsNotCarried(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount on the host; the root CI run covers it")
	}
	r := nsRunner(t)
	tc := hostDir(t)
	nested := filepath.Join(tc, "cache")
	require.NoError(t, os.Mkdir(nested, 0o777))
	require.NoError(t, unix.Mount("tmpfs", nested, "tmpfs", 0, "size=1m,mode=0777"))
	t.Cleanup(func() { _ = unix.Unmount(nested, unix.MNT_DETACH) })
	require.NoError(t, os.WriteFile(filepath.Join(nested, "f"), []byte("x"), 0o666), "control: writable on the host")

	// A non-recursive bind over a locked child mount is refused by the
	// kernel: setup fails closed instead of carrying a writable mount in.
	_, err := r.Run(context.Background(), Spec{Argv: sh("echo pwned > " + nested + "/f"), ReadOnly: []string{tc}})
	var se *SetupError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "bind", se.Step)
	b, err := os.ReadFile(filepath.Join(nested, "f"))
	require.NoError(t, err)
	require.Equal(t, "x", string(b))
}
