package files

import (
	"errors"
	"fmt"
)

var (
	// ErrSymlink means a component of the path is a symlink, which this API
	// does not follow.
	ErrSymlink = errors.New("files: a path component is a symlink, which this API does not follow")
	// ErrNotRegular means the path is a FIFO, socket or device where a
	// regular file was needed.
	ErrNotRegular = errors.New("files: not a regular file")
	// ErrNotDir means a component that must be a directory is not one.
	ErrNotDir = errors.New("files: not a directory")
	// ErrIsDir means a file operation named a directory.
	ErrIsDir = errors.New("files: is a directory")
	// ErrHardLink means a file has other links, possibly outside the home.
	ErrHardLink = errors.New("files: file has more than one link")
	// ErrIsHome means the operation would remove the home itself.
	ErrIsHome = errors.New("files: the home itself cannot be deleted")
	// ErrInvalidPath means the path cannot name a file (a NUL byte).
	ErrInvalidPath = errors.New("files: invalid path")
	// ErrEscape means the kernel saw the resolution leave the home (openat2
	// EXDEV); lexical normalization makes this a bug or a race.
	ErrEscape = errors.New("files: path escapes the home")
)

// PathError is a failed operation on a path inside the home.
type PathError struct {
	Op   string // "read", "write", "list", "stat", "delete", "mkdir"
	Path string // normalized path
	Err  error
}

func (e *PathError) Error() string { return fmt.Sprintf("files: %s %q: %v", e.Op, e.Path, e.Err) }

func (e *PathError) Unwrap() error { return e.Err }
