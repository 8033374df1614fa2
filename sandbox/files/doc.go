// Package files reads and writes a sandbox's home on behalf of the worker
// (a task's files, later the files routes of stateful sandboxes) without
// letting the sandbox's own contents redirect it.
//
// # Model
//
// A Home is an open directory descriptor of the sandbox's home plus the
// sandbox's uid. Every path is first normalized lexically (Normalize): it is
// rooted at the home, a leading "/" and "." components are dropped and ".."
// pops a component but never leaves the home, so "/../../etc/passwd" names
// "etc/passwd" inside the home. The normalized path is then walked from the
// home descriptor, one directory at a time, never by string: with openat2
// and RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV
// where the kernel has it (5.6+), else component by component with
// O_NOFOLLOW. Operations then act on descriptors (fstat, fchown, ftruncate,
// unlinkat relative to the parent), so a component swapped for a symlink
// during a call is refused, not followed.
//
// # What is refused
//
//   - a symlink at any component, final or intermediate (ErrSymlink); Stat
//     and List report a symlink as one, Delete removes the link itself;
//   - a FIFO, socket or device where a file is read or written
//     (ErrNotRegular); they are opened, if at all, with O_NONBLOCK after a
//     type check, and refused on fstat, so a FIFO never blocks the worker;
//   - a regular file with more than one link for Read and Write
//     (ErrHardLink): a hard link planted in the home could otherwise make a
//     root worker read or write a file outside it;
//   - deleting the home itself (ErrIsHome); a path with a NUL byte
//     (ErrInvalidPath).
//
// New files are 0600 and new directories 0700 unless asked otherwise, and
// both are chowned to the sandbox uid when the Home has one. A Home opened
// with OpenAs(..., AsOwner) by a root caller instead runs each operation on
// a locked OS thread whose filesystem ids are the sandbox's (setfsuid,
// setfsgid, put back after): for a home that is a filesystem of the
// sandbox's user namespace (a warm slot's task tmpfs), where root's ids
// have no name and creating a file as root fails (EOVERFLOW); permissions
// are then checked as for the sandbox's own commands. A thread whose ids
// cannot be put back stays locked and ends with its goroutine.
//
// # Disk limit
//
// SetQuota holds a Home's writes to the sandbox's disk limit. Where the
// home is a filesystem of the limit's size (HeldByFilesystem: a sandbox's
// tmpfs), the kernel holds every writer to it; Write also refuses ahead
// of time a write the free space cannot take (fstatfs), so such a write
// leaves nothing, and an ENOSPC met anyway is reported the same way.
// Where nothing in the kernel holds the home (HeldByCount: a host
// directory), Write counts the home's usage (the blocks of every inode
// under it, once each, whatever wrote them; no symlink followed, no other
// filesystem entered) and refuses a write that would take it past the
// limit, one counted write at a time. Either refusal is a *QuotaError,
// matching ErrDiskFull, that names the limit. Only growth is checked: a
// write that does not make its file longer always passes.
//
// # Failure handling
//
// Errors are typed: errors.Is works with the sentinels above and with
// fs.ErrNotExist, fs.ErrExist, ErrIsDir and ErrNotDir. A failed call leaves
// nothing half-created except, for Write, the bytes written before the
// failure. Calls check ctx between components and between chunks.
//
// # Limits
//
// Hard links are detected, not prevented. A home on a filesystem without
// openat2 support falls back to the O_NOFOLLOW walk, which is equally
// strict but slower.
package files
