package initproc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// dropBoundingCaps empties the bounding and ambient sets when this process
// may (CAP_SETPCAP); without it there is nothing it could regain anyway
// since no_new_privs is set.
func dropBoundingCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fail("clear ambient caps", "", err)
	}
	if !hasEffectiveCap(unix.CAP_SETPCAP) {
		return nil
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fail("drop bounding caps", "", err)
		}
	}
	return nil
}

func hasEffectiveCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

func clearCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fail("clear caps", "", err)
	}
	return nil
}

// dropCred switches to the final host ids (Landlock-only mode as root).
func dropCred(c *Cred) error {
	if err := unix.Setgroups(nil); err != nil && !errors.Is(err, unix.EPERM) {
		return fail("setgroups", "", err)
	}
	// Raw syscalls on this thread only: the other Go threads never exec.
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(c.GID), uintptr(c.GID), uintptr(c.GID)); e != 0 {
		return fail("setresgid", "", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(c.UID), uintptr(c.UID), uintptr(c.UID)); e != 0 {
		return fail("setresuid", "", e)
	}
	// The credential change cleared the parent-death signal: phase 10
	// re-arms it.
	return nil
}

// armParentDeath (re)sets the parent-death signal right before exec, on
// the thread that execs, then checks the worker is still there. The signal
// armed at clone time belongs to the init's first thread and is cleared by
// a credential change; a Go init's locked goroutine may run on another
// thread, and execve from it keeps that thread's (unset) signal: without
// this a task can outlive a SIGKILLed worker
// (TestTaskKeepsParentDeathSignal).
func armParentDeath() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fail("pdeathsig", "", err)
	}
	if parentGone() {
		return fail("pdeathsig", "", errors.New("the worker died during setup"))
	}
	return nil
}

// parentGone reports whether the worker closed its end of the config pipe,
// which it keeps open until the run ends (getppid is 0 in a pid namespace).
func parentGone() bool {
	fds := []unix.PollFd{{Fd: ConfigFD, Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
}

// prunePath keeps the PATH entries that are existing directories here.
func prunePath(path string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && filepath.IsAbs(d) {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, ":")
}
