package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// initProc is a run's init as the worker controls it: cloned by the worker
// itself (cmdInit), or forked by its template (templateChild, template.go).
// The run skeleton (startedInit.finish) is the same for both.
type initProc interface {
	// hostPID is the init's pid in the worker's pid namespace.
	hostPID() int
	// kill SIGKILLs the run: its tree (killTree, when set) or the init,
	// which in a pid namespace takes the whole namespace with it.
	kill(killTree func(*os.Process))
	// reap waits for the init to end and says how it ended. kill kills
	// the run's tree: again while the end is not reported (cmdInit), and
	// once more before the init is collected, so nothing of the run
	// outlives it.
	reap(kill func()) (initEnd, error)
}

// initEnd is how an init (by then its task) ended.
type initEnd struct {
	status syscall.WaitStatus
	ownCPU time.Duration // its own user + system time, not its children's
	cpu    time.Duration // rusage: its own and its reaped descendants'
	maxRSS int64         // bytes
}

// cmdInit is an init the worker cloned, and the watch on its end.
type cmdInit struct {
	cmd   *exec.Cmd
	watch *exitWatch
}

// newCmdInit is the started cmd as an initProc.
func newCmdInit(cmd *exec.Cmd) *cmdInit {
	return &cmdInit{cmd: cmd, watch: watchExit(cmd.Process.Pid)}
}

func (c *cmdInit) hostPID() int { return c.cmd.Process.Pid }

func (c *cmdInit) kill(killTree func(*os.Process)) {
	killRun(c.cmd, killTree)
	c.watch.killed()
}

// reap collects the init only once its end is reported (exitWatch: a
// traced task's stop is no end, and a traced thread holding the end back
// is reaped first), after the run's tree is killed: what is left of it
// (a daemon holding the output pipes) would hold Wait.
func (c *cmdInit) reap(kill func()) (initEnd, error) {
	defer c.watch.close()
	if err := c.watch.wait(kill); err != nil {
		return initEnd{}, err
	}
	pid := c.cmd.Process.Pid
	own := zombieCPU(pid) // before the reap, which frees it
	kill()
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
