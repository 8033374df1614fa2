package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// initBinaryName is the dedicated init's file name, installed next to the
// worker's binary (`make build`).
const initBinaryName = "warren-sandbox-init"

// selfExe re-executes the running binary as the init (it calls MaybeInit).
const selfExe = "/proc/self/exe"

// initBinary is the init a Runner starts: path as configured, exec as
// passed to execve, and file the worker's descriptor on it (nil: the
// worker's own binary, selfExe).
type initBinary struct {
	path string
	exec string
	file *os.File
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
	initBinariesMu sync.Mutex
	initBinaries   = map[string]*os.File{}
)

// initExecPath is the path the init is exec'd through in its own process:
// the worker's descriptor on the binary, passed as the child's descriptor
// initproc.BinaryFD (startInitIn). Not the worker's own number: Go's fork
// moves descriptors it shuffles to just above the child's highest, which
// can be that number (exec'ing /proc/self/fd/<it> then ran a pipe: EACCES).
var initExecPath = "/proc/self/fd/" + strconv.Itoa(initproc.BinaryFD)

// openInit opens the init binary once per process and returns the path
// that executes it through that descriptor: the child (already switched
// to the sandbox uid when it execs) needs no access to the binary's
// directory, and the file exec'd is the one opened, whatever happens to
// the path later. The worker's descriptor is close-on-exec; the init's
// copy closes at the task's exec, like every descriptor above stdio.
func openInit(path string) (initBinary, error) {
	if path == selfExe {
		return initBinary{path: path, exec: path}, nil
	}
	initBinariesMu.Lock()
	defer initBinariesMu.Unlock()
	f, ok := initBinaries[path]
	if !ok {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return initBinary{}, &SetupError{Step: "open sandbox init", Path: path, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
			_ = unix.Close(fd)
			return initBinary{}, &SetupError{Step: "open sandbox init", Path: path, Err: unix.EACCES}
		}
		// Held for the life of the process (the map keeps the finalizer off).
		f = os.NewFile(uintptr(fd), path)
		initBinaries[path] = f
	}
	return initBinary{path: path, exec: initExecPath, file: f}, nil
}
