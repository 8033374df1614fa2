package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrDataDirInUse is the error of [Server.Start] when another running
// broker — in this process or another — holds Config.DataDir. Two
// nats-servers on one JetStream store corrupt it (each rewrites the other's
// blocks), so the second is refused before it opens anything.
var ErrDataDirInUse = errors.New("data dir in use by another broker")

// lockFileName is the lock beside the store: DataDir/broker.lock. It holds
// the holder's pid and program, for the error of the next one (not its
// arguments: they may be secrets).
const lockFileName = "broker.lock"

// DataDirInUseError names the data dir and, when it could be read, the
// process that holds it. It is [ErrDataDirInUse] for errors.Is.
type DataDirInUseError struct {
	Dir    string
	Holder string // "pid 123, warren-host", or "" when unknown
}

func (e *DataDirInUseError) Error() string {
	by := "another broker"
	if e.Holder != "" {
		by += " (" + e.Holder + ")"
	}
	return fmt.Sprintf("broker: data dir %s is in use by %s", e.Dir, by)
}

// Is makes errors.Is(err, ErrDataDirInUse) hold.
func (e *DataDirInUseError) Is(target error) bool { return target == ErrDataDirInUse }

// lockDataDir takes DataDir's lock for the life of the returned file: an
// flock, so it goes when the process does, however it ends. It creates dir
// (0700) when missing.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("broker: data dir: %w", err)
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("broker: lock the data dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &DataDirInUseError{Dir: dir, Holder: strings.TrimSpace(string(holder))}
		}
		return nil, fmt.Errorf("broker: lock %s: %w", path, err)
	}
	// Who holds it, for the next one's error; best effort.
	if err := f.Truncate(0); err == nil {
		_, _ = fmt.Fprintf(f, "pid %d, %s\n", os.Getpid(), filepath.Base(os.Args[0]))
	}
	return f, nil
}
