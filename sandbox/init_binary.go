package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// initBinaryName is the dedicated init's file name, installed next to the
// worker's binary (`make build`).
const initBinaryName = "warren-sandbox-init"

// selfExe re-executes the running binary as the init (it calls MaybeInit).
const selfExe = "/proc/self/exe"

// initBinary is the init a Runner starts: path as configured, exec as
// passed to execve.
type initBinary struct {
	path string
	exec string
}

// testInitPath, when set (by TestMain), replaces the default init path.
var testInitPath string

// defaultInitPath is warren-sandbox-init next to the executable, else the
// executable itself.
func defaultInitPath() string {
	if testInitPath != "" {
		return testInitPath
	}
	exe, err := os.Executable()
	if err != nil {
		return selfExe
	}
	p := filepath.Join(filepath.Dir(exe), initBinaryName)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p
	}
	return selfExe
}

var (
	initFDsMu sync.Mutex
	initFDs   = map[string]int{}
)

// openInit opens the init binary once per process and returns the path
// that executes it through that descriptor: the child (already switched
// to the sandbox uid when it execs) needs no access to the binary's
// directory, and the file exec'd is the one opened, whatever happens to
// the path later. The descriptor is close-on-exec: the init never sees it.
func openInit(path string) (initBinary, error) {
	if path == selfExe {
		return initBinary{path: path, exec: path}, nil
	}
	initFDsMu.Lock()
	defer initFDsMu.Unlock()
	fd, ok := initFDs[path]
	if !ok {
		var err error
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return initBinary{}, &SetupError{Step: "open sandbox init", Path: path, Err: err}
		}
		// exec.Cmd dup2s the init's stdio and pipes onto fds 0..4 in the
		// child before execve: keep this descriptor clear of them.
		if fd < 16 {
			hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 16)
			_ = unix.Close(fd)
			if err != nil {
				return initBinary{}, &SetupError{Step: "open sandbox init", Path: path, Err: err}
			}
			fd = hi
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
			_ = unix.Close(fd)
			return initBinary{}, &SetupError{Step: "open sandbox init", Path: path, Err: unix.EACCES}
		}
		initFDs[path] = fd
	}
	return initBinary{path: path, exec: "/proc/self/fd/" + strconv.Itoa(fd)}, nil
}
