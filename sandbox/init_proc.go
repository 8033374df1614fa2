package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// initProc is a run's init as the worker controls it: cloned by the worker
// itself (cmdInit), or forked by its slot's parent (slotChild, slot.go).
// The run skeleton (startedInit.finish) is the same for both.
type initProc interface {
	// hostPID is the init's pid in the worker's pid namespace.
	hostPID() int
	// kill SIGKILLs the run: its tree (killTree, when set) or the init,
	// which in a pid namespace takes the whole namespace with it.
	kill(killTree func(*os.Process))
	// reap waits for the init to end and says how it ended.
	reap() (initEnd, error)
}

// initEnd is how an init (by then its task) ended.
type initEnd struct {
	status syscall.WaitStatus
	ownCPU time.Duration // its own user + system time, not its children's
	cpu    time.Duration // rusage: its own and its reaped descendants'
	maxRSS int64         // bytes
}

// cmdInit is an init the worker cloned.
type cmdInit struct{ cmd *exec.Cmd }

func (c cmdInit) hostPID() int { return c.cmd.Process.Pid }

func (c cmdInit) kill(killTree func(*os.Process)) { killRun(c.cmd, killTree) }

func (c cmdInit) reap() (initEnd, error) {
	pid := c.cmd.Process.Pid
	waitExited(pid)
	own := zombieCPU(pid) // before the reap, which frees it
	err := c.cmd.Wait()
	if c.cmd.ProcessState == nil {
		return initEnd{}, errors.Join(errors.New("sandbox: wait"), err)
	}
	e := endOf(c.cmd.ProcessState)
	e.ownCPU = own
	return e, nil
}

// endOf is how a reaped process ended, from its ProcessState.
func endOf(ps *os.ProcessState) initEnd {
	e := initEnd{cpu: ps.UserTime() + ps.SystemTime()}
	e.status, _ = ps.Sys().(syscall.WaitStatus)
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		e.maxRSS = ru.Maxrss * 1024
	}
	return e
}
