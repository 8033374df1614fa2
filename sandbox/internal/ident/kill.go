package ident

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// KillAll SIGKILLs every process of uid at once: a thread of this process
// takes uid as its real and effective uid (keeping root as its saved uid)
// and calls kill(-1, SIGKILL), which the kernel sends, under one lock, to
// every process that uid may signal (real or saved uid uid) but the
// caller's own. So no process of uid escapes it by forking, by changing
// its pid (a fork and exit in a loop), its process group or session: a
// fork in flight either made its child before the kill, which then gets
// it, or fails. The thread takes root back at once (its saved uid) and is
// discarded after: it may be the process's main thread, whose ids are
// what /proc/<pid>/status shows for the whole process. Only for a
// dedicated sandbox uid and a root caller; ESRCH (nothing to kill) is no
// error.
func KillAll(uid uint32) error {
	if uid == 0 || uid == uint32(os.Getuid()) {
		return fmt.Errorf("ident: refusing to kill every process of uid %d (root or this process's own)", uid)
	}
	done := make(chan error)
	go func() {
		// Never unlocked: a thread whose ids changed is not reused.
		runtime.LockOSThread()
		// Raw: for this thread alone (the runtime's Setresuid would
		// change every thread's).
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), 0); e != 0 {
			done <- fmt.Errorf("ident: setresuid(%d, %d, 0): %w", uid, uid, e)
			return
		}
		err := unix.Kill(-1, unix.SIGKILL)
		if errors.Is(err, unix.ESRCH) {
			err = nil
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 0, 0, 0); e != 0 && err == nil {
			err = fmt.Errorf("ident: taking root back: %w", e)
		}
		done <- err
	}()
	return <-done
}
