package initproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Arg0 is argv[0] of a process started as the sandbox init; sandbox.MaybeInit
// recognises it in a binary that doubles as its own init.
const Arg0 = "warren-sandbox-init"

// The init's inherited descriptors (exec.Cmd.ExtraFiles order).
const (
	ConfigFD = 3 // read end: one JSON Config; stays open as the parent's lifeline
	StatusFD = 4 // write end: StatusExec before exec, or one JSON Failure
)

// ExitSetup is the init's exit status when setup failed. The parent
// never relies on it: the status pipe says whether the command ran.
const ExitSetup = 125

// StatusReady is written by a warm init (Config.Prepare) once its
// view is built; a failure report replaces it when that setup failed.
const StatusReady = 'r'

// StatusExec is written just before execve; a StatusExecFailed record may
// follow it (the task's program could not be executed). EOF without it
// means the init died during setup.
const StatusExec = 'x'

// Config is everything the init needs. Phases run in this order, each
// optional phase skipped when its field is nil/empty:
//
//  1. setsid (always)
//  2. NS: mount/uts/net setup and pivot_root (namespace mode only);
//     with Prepare, report StatusReady and read the task (a second Config)
//  3. chdir Dir
//  4. no_new_privs (always)
//  5. drop bounding/ambient capabilities when held
//  6. Landlock (when set), the last restriction before the uid drop
//  7. Cred: setgroups([]), setresgid, setresuid (Landlock-only mode; in
//     namespace mode the ids are set by the kernel/Go at clone time)
//  8. clear all capability sets; with Subreaper, PR_SET_CHILD_SUBREAPER
//  9. re-arm the parent-death signal on this thread and check the worker
//     is alive; resolve the command on the PATH; mark every fd above
//     stdio close-on-exec
//  10. with raw system calls only (exec.go): the rlimits (RLIMIT_CORE is
//     always 0; RLIMIT_AS last), report "exec", execve. A failed execve,
//     or a command not found in phase 9, is reported as StatusExecFailed
//     after StatusExec: the task's failure, not the sandbox's.
//
// The struct is the wire format between worker and init: keep it stable.
type Config struct {
	Argv []string `json:"argv"`
	// Env is the complete environment except PATH, which the init prunes to
	// the directories that exist in its view.
	Env  []string `json:"env"`
	Path string   `json:"path"` // unpruned PATH list
	Dir  string   `json:"dir"`  // working directory, as seen after phase 2

	Rlimits []Rlimit `json:"rlimits,omitempty"`

	NS       *NSConfig `json:"ns,omitempty"`
	Landlock *Landlock `json:"landlock,omitempty"`
	Cred     *Cred     `json:"cred,omitempty"`
	// Subreaper makes the task a child subreaper (PR_SET_CHILD_SUBREAPER,
	// which execve keeps): orphans of its tree reparent to it while it
	// runs, and to the worker (a subreaper too) once it ends, where the
	// worker sweeps them (Landlock-only mode, no pid namespace).
	Subreaper bool `json:"subreaper,omitempty"`

	// Prepare splits the run in two (a warm sandbox): after phase 2 the
	// init writes StatusReady and blocks reading a second Config,
	// the task (Argv, Env, Path, Dir, Rlimits, Landlock), then goes on with
	// phase 3. Nothing of the task is known before. With Prepare, Landlock
	// is the policy the task is expected to carry: its ruleset is built
	// before StatusReady and enforced only if the task's policy is equal
	// (else the task's own is built; the prepared one is dropped).
	Prepare bool `json:"prepare,omitempty"`
	// Template, with Prepare and NS, makes this init a template
	// (template.go): after StatusReady it serves tasks on TemplateFD, never
	// one of its own.
	Template bool `json:"slot,omitempty"`
	// Fresh is a template's child's own mounts (template.go), built in
	// phase 2 instead of NS; always with Prepare (the worker writes the
	// task's files into the fresh home before the task comes).
	Fresh *Fresh `json:"fresh,omitempty"`
}

// Rlimit is one setrlimit call; values above the current hard limit
// are clamped to it (an unprivileged worker cannot raise them).
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// Cred are the final host ids when the init itself must drop them.
type Cred struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Failure is the report of a failed step, sent on the status pipe.
type Failure struct {
	Step  Step   `json:"step"`
	Path  string `json:"path,omitempty"`
	Errno int    `json:"errno,omitempty"`
	Msg   string `json:"msg"`
}

// stepError is a failed init step; it carries what the parent reports.
type stepError struct {
	step Step
	path string
	err  error
}

func (e *stepError) Error() string { return string(e.step) + " " + e.path + ": " + e.err.Error() }

func fail(step Step, path string, err error) error {
	return &stepError{step: step, path: path, err: err}
}

// StepOf splits an error of this package into the setup step it names,
// the path involved and the cause; ok is false for any other error.
func StepOf(err error) (step Step, path string, cause error, ok bool) {
	var se *stepError
	if !errors.As(err, &se) {
		return "", "", nil, false
	}
	return se.step, se.path, se.err, true
}

// Main runs the sandbox init and never returns: it reads its Config on
// ConfigFD, reports on StatusFD, and execs the task or exits ExitSetup.
func Main() {
	// Per-thread state (no_new_privs, capabilities, Landlock, seccomp) must
	// be set on the thread that calls execve.
	runtime.LockOSThread()
	err := run()
	report(rawFD(StatusFD), err)
	os.Exit(ExitSetup)
}

// rawFD reads and writes an inherited descriptor without an *os.File,
// whose finalizer would close it at the next garbage collection (the
// last step runs one: exec.go) while the init still needs it.
type rawFD int

func (fd rawFD) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(fd), p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (fd rawFD) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := unix.Write(int(fd), p[written:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return written, err
		}
		written += n
	}
	return written, nil
}

func report(status io.Writer, err error) {
	f := Failure{Step: "init", Msg: err.Error()}
	var se *stepError
	if errors.As(err, &se) {
		f = Failure{Step: se.step, Path: se.path, Msg: se.err.Error()}
		var errno syscall.Errno
		if errors.As(se.err, &errno) {
			f.Errno = int(errno)
		}
	}
	b, _ := json.Marshal(f)
	_, _ = status.Write(b)
}

func run() error {
	var cfg Config
	conf := json.NewDecoder(rawFD(ConfigFD))
	if err := conf.Decode(&cfg); err != nil {
		return fail("read config", "", err)
	}
	if len(cfg.Argv) == 0 && !cfg.Prepare {
		return fail("read config", "", errors.New("empty argv"))
	}
	if _, err := unix.Setsid(); err != nil {
		return fail("setsid", "", err)
	}
	switch {
	case cfg.NS != nil && cfg.Fresh != nil, cfg.Template && (cfg.NS == nil || !cfg.Prepare):
		return fail("read config", "", errors.New("a template builds a view, a template's child mounts its own: not both"))
	case cfg.NS != nil:
		if err := setupNamespace(cfg.NS); err != nil {
			return err
		}
	case cfg.Fresh != nil:
		if err := setupFresh(cfg.Fresh); err != nil {
			return err
		}
	}
	var prepared *PreparedLandlock
	if cfg.Prepare {
		// A warm sandbox: the view is ready; build the Landlock ruleset the
		// task will most likely carry, then wait for the task.
		if cfg.Landlock != nil {
			var err error
			if prepared, err = PrepareLandlock(cfg.Landlock); err != nil {
				return err
			}
		}
		if _, err := rawFD(StatusFD).Write([]byte{StatusReady}); err != nil {
			return fail("report ready", "", err)
		}
		if cfg.Template {
			prepared.Close()
			serveTemplate() // never returns
		}
		var task Config
		if err := conf.Decode(&task); err != nil {
			return fail("read task", "", err)
		}
		if len(task.Argv) == 0 || task.NS != nil || task.Fresh != nil || task.Prepare || task.Template {
			return fail("read task", "", errors.New("empty argv or a second view"))
		}
		cfg = task
	}
	if cfg.Dir != "" {
		if err := unix.Chdir(cfg.Dir); err != nil {
			return fail("chdir", cfg.Dir, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("no_new_privs", "", err)
	}
	if err := dropBoundingCaps(); err != nil {
		return err
	}
	switch {
	case cfg.Landlock != nil && prepared.Matches(cfg.Landlock):
		if err := prepared.Apply(); err != nil {
			return err
		}
	case cfg.Landlock != nil:
		prepared.Close()
		if err := ApplyLandlock(cfg.Landlock); err != nil {
			return err
		}
	default:
		prepared.Close()
	}
	if cfg.Cred != nil {
		if err := dropCred(cfg.Cred); err != nil {
			return err
		}
	}
	if err := clearCaps(); err != nil {
		return err
	}
	if cfg.Subreaper {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fail("subreaper", "", err)
		}
	}
	if err := armParentDeath(); err != nil {
		return err
	}
	plan, errno, err := planExec(&cfg, cfg.Rlimits)
	if err != nil {
		return err
	}
	// Every descriptor but stdio closes at exec: the config pipe, the
	// status pipe, and whatever the Go runtime opened.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail("close fds", "", err)
	}
	if errno != 0 {
		reportNotRun(errno) // never returns
	}
	plan.execTask() // never returns
	return nil
}

// RlimitName names an rlimit resource, e.g. "RLIMIT_AS".
func RlimitName(r int) string {
	switch r {
	case unix.RLIMIT_AS:
		return "RLIMIT_AS"
	case unix.RLIMIT_NPROC:
		return "RLIMIT_NPROC"
	case unix.RLIMIT_NOFILE:
		return "RLIMIT_NOFILE"
	case unix.RLIMIT_FSIZE:
		return "RLIMIT_FSIZE"
	case unix.RLIMIT_CPU:
		return "RLIMIT_CPU"
	case unix.RLIMIT_CORE:
		return "RLIMIT_CORE"
	}
	return fmt.Sprintf("rlimit %d", r)
}
