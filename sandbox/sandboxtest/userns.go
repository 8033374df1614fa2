package sandboxtest

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Container id map of RunInMappedContainer: ids 0..65535 inside are host
// ids ContainerHostBase.. outside, as in a rootless or Kubernetes user
// namespace (Hugging Face's pool hosts).
const (
	ContainerHostBase = 100000
	ContainerIDs      = 65536
)

// RunInMappedContainer runs the binary bin (copied first, so that the
// container's root, which is not the host's, can reach it) with args as
// root of a new user namespace that maps only ids 0..65535, in its own
// mount namespace with a fresh tmpfs on /run (a container's own /run, for
// the uid leases), TMPDIR and HOME set to a directory that root owns. env
// is added to the test's environment. It returns the combined output and
// the command's error. As an ordinary user, whom the kernel refuses such a
// mapping, it skips with that reason.
func RunInMappedContainer(t testing.TB, bin string, env []string, args ...string) (string, error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "warren-container-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyBin := filepath.Join(dir, filepath.Base(bin))
	if err := copyFile(bin, copyBin); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// The container's root owns its TMPDIR and HOME.
		if err := os.Chown(dir, ContainerHostBase, ContainerHostBase); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	script := `mount --make-rprivate / && mount -t tmpfs -o mode=0755 tmpfs /run && exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, copyBin}, args...)...)
	cmd.Dir = "/"
	cmd.Env = append(append(os.Environ(), "TMPDIR="+dir, "HOME="+dir), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: ContainerHostBase, Size: ContainerIDs}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: ContainerHostBase, Size: ContainerIDs}},
		GidMappingsEnableSetgroups: true,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0},
		Pdeathsig:                  syscall.SIGKILL,
	}
	out, err := cmd.CombinedOutput()
	if err != nil && os.Geteuid() != 0 && errors.Is(err, syscall.EPERM) {
		// Not a missing feature (Unavailable would fail it in CI): the
		// kernel lets only a privileged writer map ids other than its own.
		t.Skipf("skipped: the kernel refuses an ordinary user a user namespace mapping ids 0..65535 (only root may map other ids): %v", err)
	}
	return string(out), err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
