package sandbox

import (
	"errors"
	"os"
	"syscall"

	"github.com/warrenhq/warren/sandbox/initproc"
	"github.com/warrenhq/warren/sandbox/internal/home"
)

// The worker side of the init's wire format (package initproc is the init
// side: everything that runs in the child between clone and exec).
type (
	initConfig     = initproc.Config
	initRlimit     = initproc.Rlimit
	initCred       = initproc.Cred
	initFailure    = initproc.Failure
	nsConfig       = initproc.NSConfig
	bindMount      = initproc.Bind
	symlink        = initproc.Symlink
	landlockPolicy = initproc.Landlock
)

const (
	initArg0        = initproc.Arg0
	initStatusReady = initproc.StatusReady
	initStatusExec  = initproc.StatusExec
)

// MaybeInit runs the sandbox init and never returns when this process was
// started as one; otherwise it returns at once. Call it first thing in
// main() and in TestMain of packages whose tests run sandboxes: a Runner
// with no separate init binary (Config.InitPath) re-executes its own
// binary as the init.
func MaybeInit() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	initproc.Main()
}

func setupErrorOf(f initFailure) *SetupError {
	var err error = errors.New(f.Msg)
	if f.Errno != 0 {
		err = syscall.Errno(f.Errno)
	}
	if string(f.Step) == "bind" && errors.Is(err, syscall.EINVAL) {
		err = home.ExplainBind(string(f.Step), f.Path, err, home.ReadMountinfo())
	}
	return &SetupError{Step: string(f.Step), Path: f.Path, Err: err}
}
