package initproc

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The init's last step: the rlimits, the exec marker and execve, with no
// Go allocation after the first limit. RLIMIT_AS in particular must bind
// only the task's program: the Go init's own address space is already
// ~1.2 GB of reservations, so any allocation of the init after a lower
// RLIMIT_AS fails ("fatal error: runtime: cannot allocate memory", or an
// init that dies during setup). So everything the step needs (path, argv
// and envp as C arrays, the clamped limits, the report buffer) is built
// first, the garbage collector is disabled (InitEnv starts it off; else
// it is run once first, so no cycle is in progress that could allocate), and finalExec makes only raw system calls from a
// nosplit function (no stack growth, no scheduler entry) until execve
// replaces the whole address space. A failed execve is reported with the
// same raw calls.

// StatusExecFailed tags the report, after StatusExec, of an execve that
// failed: the task's own program could not be executed (not found, not
// executable, argument list too long). The record is ReportLen bytes: the
// tag, a uint32 (unused: 0) and the errno as a uint32, little endian. The
// init then exits with ExecExitCode(errno).
const StatusExecFailed = 'e'

// StatusLimitFailed tags the report of a failed setrlimit (before
// StatusExec; a setup failure): the tag, the resource and the errno.
const StatusLimitFailed = 'l'

// ReportLen is the length of a StatusExecFailed or StatusLimitFailed record.
const ReportLen = 9

// Exit statuses of an init whose task could not be executed, as a shell's.
const (
	ExitNotFound      = 127 // ENOENT: no such command
	ExitNotExecutable = 126 // anything else (EACCES, ENOEXEC, E2BIG, ...)
)

// ExecExitCode is the exit status for an execve that failed with errno.
func ExecExitCode(errno syscall.Errno) int {
	if errno == unix.ENOENT {
		return ExitNotFound
	}
	return ExitNotExecutable
}

// DecodeReport splits a StatusExecFailed or StatusLimitFailed record.
func DecodeReport(b []byte) (tag byte, arg uint32, errno syscall.Errno, ok bool) {
	if len(b) != ReportLen || (b[0] != StatusExecFailed && b[0] != StatusLimitFailed) {
		return 0, 0, 0, false
	}
	return b[0], binary.LittleEndian.Uint32(b[1:5]), syscall.Errno(binary.LittleEndian.Uint32(b[5:9])), true
}

// execPlan is the last step, prepared while the init may still allocate.
type execPlan struct {
	path   *byte
	argv   []*byte // NULL-terminated
	envp   []*byte // NULL-terminated
	limits []rawRlimit
	marker [1]byte
	report [ReportLen]byte
}

type rawRlimit struct {
	resource uintptr
	lim      unix.Rlimit
}

// planExec resolves the command and builds the plan. A command that is
// not found (or not executable) on the PATH is the task's own failure:
// errno says which, and the caller reports it as an exec failure.
func planExec(cfg *Config, limits []Rlimit) (*execPlan, syscall.Errno, error) {
	path := prunePath(cfg.Path)
	argv0 := cfg.Argv[0]
	if !strings.Contains(argv0, "/") {
		var errno syscall.Errno
		if argv0, errno = LookPath(argv0, path); errno != 0 {
			return nil, errno, nil
		}
	}
	p := &execPlan{marker: [1]byte{StatusExec}}
	var err error
	if p.path, err = syscall.BytePtrFromString(argv0); err != nil {
		return nil, unix.EINVAL, nil
	}
	if p.argv, err = syscall.SlicePtrFromStrings(cfg.Argv); err != nil {
		return nil, unix.EINVAL, nil
	}
	if p.envp, err = syscall.SlicePtrFromStrings(append(cfg.Env, "PATH="+path)); err != nil {
		return nil, unix.EINVAL, nil
	}
	// RLIMIT_AS last: the other limits never bind the init's memory.
	limits = append(limits, Rlimit{Resource: unix.RLIMIT_CORE})
	for _, as := range []bool{false, true} {
		for _, l := range limits {
			if (l.Resource == unix.RLIMIT_AS) != as {
				continue
			}
			var cur unix.Rlimit
			if err := unix.Getrlimit(l.Resource, &cur); err != nil {
				return nil, 0, fail("rlimit", RlimitName(l.Resource), err)
			}
			// Clamped to the current hard limit: an unprivileged worker
			// cannot raise it.
			p.limits = append(p.limits, rawRlimit{resource: uintptr(l.Resource),
				lim: unix.Rlimit{Cur: min(l.Cur, cur.Max), Max: min(l.Max, cur.Max)}})
		}
	}
	return p, 0, nil
}

// execTask runs the plan and never returns. Before the first limit the
// collector runs once and is switched off, so nothing of the runtime
// allocates behind finalExec's back.
func (p *execPlan) execTask() {
	if debug.SetGCPercent(-1) >= 0 {
		runtime.GC() // started with collection on (not InitEnv): finish any cycle
	}
	p.finalExec()
}

// finalExec sets the limits, writes StatusExec and execs the task; on
// failure it reports and exits. Raw calls only, nothing that allocates or
// grows the stack.
//
//go:nosplit
func (p *execPlan) finalExec() {
	for i := range p.limits {
		l := &p.limits[i]
		if _, _, e := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, l.resource, uintptr(unsafe.Pointer(&l.lim)), 0, 0, 0); e != 0 {
			p.fail(StatusLimitFailed, uint32(l.resource), e, ExitSetup)
		}
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_WRITE, StatusFD, uintptr(unsafe.Pointer(&p.marker[0])), 1); e != 0 {
		rawExit(ExitSetup) // the worker is gone
	}
	_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(p.path)),
		uintptr(unsafe.Pointer(&p.argv[0])), uintptr(unsafe.Pointer(&p.envp[0])))
	code := ExitNotExecutable
	if e == unix.ENOENT {
		code = ExitNotFound
	}
	p.fail(StatusExecFailed, 0, e, code)
}

// fail writes a ReportLen record on StatusFD and exits with code.
//
//go:nosplit
func (p *execPlan) fail(tag byte, arg uint32, errno syscall.Errno, code int) {
	b := &p.report
	b[0] = tag
	b[1], b[2], b[3], b[4] = byte(arg), byte(arg>>8), byte(arg>>16), byte(arg>>24)
	e := uint32(errno)
	b[5], b[6], b[7], b[8] = byte(e), byte(e>>8), byte(e>>16), byte(e>>24)
	syscall.RawSyscall(unix.SYS_WRITE, StatusFD, uintptr(unsafe.Pointer(&b[0])), ReportLen)
	rawExit(code)
}

//go:nosplit
func rawExit(code int) {
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, uintptr(code), 0, 0)
	}
}

// reportNotRun reports a command that could not be resolved (not found
// on the PATH, not executable, a NUL byte) as an exec failure: StatusExec,
// then the record, then the exit. No limit is set yet, so this may
// allocate; it shares the record format with finalExec.
func reportNotRun(errno syscall.Errno) {
	p := &execPlan{marker: [1]byte{StatusExec}}
	if _, err := rawFD(StatusFD).Write(p.marker[:]); err != nil {
		os.Exit(ExitSetup)
	}
	p.fail(StatusExecFailed, 0, errno, ExecExitCode(errno))
}

// LookPath finds name on path as a shell does: the first regular
// executable file; EACCES when only non-executable files of that name
// exist, else ENOENT.
func LookPath(name, path string) (string, syscall.Errno) {
	errno := unix.ENOENT
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.Mode().IsRegular() && fi.Mode()&0o111 != 0:
			return p, 0
		case fi.Mode().IsRegular():
			errno = unix.EACCES
		}
	}
	return "", errno
}
