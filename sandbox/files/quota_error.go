package files

import (
	"errors"
	"fmt"
)

// ErrDiskFull means a write would take the home past its disk limit
// (Quota); a *QuotaError says by how much.
var ErrDiskFull = errors.New("files: the home's disk limit is reached")

// QuotaError is a write refused by the home's disk limit. It matches
// ErrDiskFull with errors.Is, and ENOSPC when the filesystem refused it.
type QuotaError struct {
	Limit int64 // the home's disk limit, bytes
	Used  int64 // what the home held when the write was refused, bytes; -1: unknown
	Need  int64 // what the write would have added, bytes; 0: the filesystem refused it midway
	Err   error // the filesystem's ENOSPC, when it refused the write
}

func (e *QuotaError) Error() string {
	msg := "disk limit of " + formatBytes(e.Limit) + " reached"
	if e.Used >= 0 {
		msg += ": the home holds " + formatBytes(e.Used)
	}
	if e.Need > 0 {
		msg += " and the write needs " + formatBytes(e.Need) + " more; nothing of it was written"
	}
	if e.Err != nil {
		msg += " (" + e.Err.Error() + "; what the write had written stays)"
	}
	return msg
}

// Is makes every QuotaError match ErrDiskFull.
func (e *QuotaError) Is(target error) bool { return target == ErrDiskFull }

func (e *QuotaError) Unwrap() error { return e.Err }

// formatBytes writes n as bytes, with MiB or KiB for the larger ones.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}
