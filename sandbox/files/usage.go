package files

import (
	"errors"

	"golang.org/x/sys/unix"
)

// maxUsageDepth bounds how deep usage walks: each level holds a
// descriptor, and a home nested deeper than this is refused, not counted.
const maxUsageDepth = 1024

// errTooDeep means a home is nested deeper than maxUsageDepth.
var errTooDeep = errors.New("the home's directories are nested too deep to count")

// usage is what the home at the directory descriptor home holds on its
// filesystem: the blocks of every inode under it, the home's own
// included, each counted once (hard links), never following a symlink
// nor entering another filesystem mounted under it.
func usage(home int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(home, &st); err != nil {
		return 0, err
	}
	u := usageWalk{dev: st.Dev, seen: map[uint64]bool{st.Ino: true}, bytes: st.Blocks * 512}
	if err := u.dir(home, 0); err != nil {
		return 0, err
	}
	return u.bytes, nil
}

type usageWalk struct {
	dev   uint64
	seen  map[uint64]bool // inodes counted
	bytes int64
}

// dir counts the entries of the directory at descriptor fd, depth levels
// below the home, and what is under them.
func (u *usageWalk) dir(fd, depth int) error {
	if depth >= maxUsageDepth {
		return errTooDeep
	}
	names, err := readNames(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed meanwhile
		}
		if st.Dev != u.dev || u.seen[st.Ino] {
			continue
		}
		u.seen[st.Ino] = true
		u.bytes += st.Blocks * 512
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := unix.Openat(fd, n, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // removed or replaced meanwhile
		}
		err = u.dir(sub, depth+1)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}
