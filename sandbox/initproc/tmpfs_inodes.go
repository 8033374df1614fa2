package initproc

// A tmpfs's inodes (files, directories, symlinks: a short symlink's
// target takes no block) cost kernel memory its size does not count, and
// by default a tmpfs has as many as half the host's pages: millions of
// empty files or symlinks in a home of a few MiB. Every tmpfs of a
// sandbox (its home, its own /tmp and /dev/shm) gets one inode per
// inodeBytes of its size instead, and at least minInodes.
const (
	inodeBytes = 8 << 10
	minInodes  = 1024
)

// TmpfsInodes is the nr_inodes of a sandbox tmpfs of size bytes.
func TmpfsInodes(size int64) int64 { return max(size/inodeBytes, minInodes) }
