package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// EntryType is the kind of an entry; Stat and List never follow symlinks.
type EntryType string

// Entry types.
const (
	TypeFile    EntryType = "file"
	TypeDir     EntryType = "dir"
	TypeSymlink EntryType = "symlink"
	TypeOther   EntryType = "other" // FIFO, socket, device
)

// Entry describes a file of the home (lstat semantics).
type Entry struct {
	Name  string      `json:"name"`
	Path  string      `json:"path"` // normalized, relative to the home
	Type  EntryType   `json:"type"`
	Size  int64       `json:"size"`
	Mode  fs.FileMode `json:"mode"` // permission bits
	MTime time.Time   `json:"mtime"`
}

func entryOf(name, path string, st *unix.Stat_t) Entry {
	t := TypeOther
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		t = TypeFile
	case unix.S_IFDIR:
		t = TypeDir
	case unix.S_IFLNK:
		t = TypeSymlink
	}
	return Entry{Name: name, Path: path, Type: t, Size: st.Size, Mode: fs.FileMode(st.Mode & 0o7777),
		MTime: time.Unix(st.Mtim.Unix())}
}

// testHookAfterCheck runs between the type check and the open (tests swap
// the file there to hit the race deterministically). Nil in production.
var testHookAfterCheck func(dir int, name string)

// chunk bounds one read or write call, so ctx is checked between chunks.
const chunk = 1 << 20

// openFile opens the regular file name in dir: refused when it is (or,
// by the time of the open, became) a symlink, a FIFO, a socket, a device
// or a file with several links.
func openFile(dir int, name string, flags int, mode uint32) (int, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil:
		if err := regular(&st); err != nil {
			return -1, err
		}
	case errors.Is(err, unix.ENOENT) && flags&unix.O_CREAT != 0:
	default:
		return -1, classify(err)
	}
	if testHookAfterCheck != nil {
		testHookAfterCheck(dir, name)
	}
	// O_NONBLOCK: a FIFO swapped in after the check must not block us.
	fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, mode)
	if err != nil {
		return -1, classify(err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := regular(&st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func regular(st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Nlink > 1 {
			return ErrHardLink
		}
		return nil
	case unix.S_IFLNK:
		return ErrSymlink
	case unix.S_IFDIR:
		return ErrIsDir
	}
	return ErrNotRegular
}

// read is Read as the calling thread's ids.
func (h *Home) read(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	norm, dirs, name, err := split(p)
	if err != nil {
		return nil, &PathError{Op: "read", Path: p, Err: err}
	}
	if name == "" {
		return nil, &PathError{Op: "read", Path: norm, Err: ErrIsDir}
	}
	fail := func(err error) ([]byte, error) { return nil, &PathError{Op: "read", Path: norm, Err: err} }
	dir, err := h.openDir(dirs)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(dir)
	fd, err := openFile(dir, name, unix.O_RDONLY, 0)
	if err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var r io.Reader = io.NewSectionReader(f, offset, 1<<62)
	if length >= 0 {
		r = io.LimitReader(r, length)
	}
	var out []byte
	buf := make([]byte, chunk)
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return fail(err)
		}
	}
}

// WriteOptions tune Write.
type WriteOptions struct {
	// Offset is where the data goes. Defaults to 0.
	Offset int64
	// Ranged keeps the file's other bytes (no truncation); a plain write
	// replaces the whole content. Defaults to false.
	Ranged bool
	// Mode is the permission of a new file. Defaults to 0600.
	Mode fs.FileMode
	// Parents creates missing parent directories (0700). Defaults to false.
	Parents bool
}

// write is Write as the calling thread's ids.
func (h *Home) write(ctx context.Context, p string, data []byte, opts WriteOptions) (int64, error) {
	norm, dirs, name, err := split(p)
	if err != nil {
		return 0, &PathError{Op: "write", Path: p, Err: err}
	}
	fail := func(err error) (int64, error) { return 0, &PathError{Op: "write", Path: norm, Err: err} }
	if name == "" {
		return fail(ErrIsDir)
	}
	// Admitted before anything is made: a refused write leaves nothing.
	release, err := h.admit(dirs, name, opts.Offset, len(data), opts.Ranged)
	if err != nil {
		return fail(err)
	}
	defer release()
	if opts.Parents {
		if err := h.mkdirAll(ctx, dirs); err != nil {
			return fail(err)
		}
	}
	dir, err := h.openDir(dirs)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(dir)
	mode := uint32(opts.Mode.Perm())
	if mode == 0 {
		mode = 0o600
	}
	fd, err := openFile(dir, name, unix.O_WRONLY|unix.O_CREAT, mode)
	if err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if err := h.chown(fd); err != nil {
		return fail(err)
	}
	if !opts.Ranged {
		if err := f.Truncate(0); err != nil {
			return fail(err)
		}
	}
	off := opts.Offset
	for len(data) > 0 {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		n, err := f.WriteAt(data[:min(len(data), chunk)], off)
		if err != nil {
			return fail(err)
		}
		data, off = data[n:], off+int64(n)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	return fi.Size(), nil
}

// stat is Stat as the calling thread's ids.
func (h *Home) stat(ctx context.Context, p string) (Entry, error) {
	norm, dirs, name, err := split(p)
	if err != nil {
		return Entry{}, &PathError{Op: "stat", Path: p, Err: err}
	}
	fail := func(err error) (Entry, error) { return Entry{}, &PathError{Op: "stat", Path: norm, Err: err} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	dir, err := h.openDir(dirs)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if name == "" {
		err = unix.Fstat(dir, &st)
	} else {
		err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return fail(classify(err))
	}
	return entryOf(name, norm, &st), nil
}

// list is List as the calling thread's ids.
func (h *Home) list(ctx context.Context, p string) ([]Entry, error) {
	norm, err := Normalize(p)
	if err != nil {
		return nil, &PathError{Op: "list", Path: p, Err: err}
	}
	fail := func(err error) ([]Entry, error) { return nil, &PathError{Op: "list", Path: norm, Err: err} }
	parts, _ := components(norm)
	dir, err := h.openDir(parts)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(dir)
	names, err := readNames(dir)
	if err != nil {
		return fail(err)
	}
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dir, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed meanwhile
		}
		path := n
		if norm != "" {
			path = norm + "/" + n
		}
		out = append(out, entryOf(n, path, &st))
	}
	return out, nil
}

// readNames lists a directory given as an O_PATH descriptor, sorted.
func readNames(dir int) ([]string, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, classify(err)
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// mkdir is Mkdir as the calling thread's ids.
func (h *Home) mkdir(ctx context.Context, p string) error {
	norm, err := Normalize(p)
	if err != nil {
		return &PathError{Op: "mkdir", Path: p, Err: err}
	}
	parts, _ := components(norm)
	if err := h.mkdirAll(ctx, parts); err != nil {
		return &PathError{Op: "mkdir", Path: norm, Err: err}
	}
	return nil
}

func (h *Home) mkdirAll(ctx context.Context, parts []string) error {
	fd, err := unix.Dup(h.fd)
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	for _, c := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		created := false
		switch err := unix.Mkdirat(fd, c, 0o700); {
		case err == nil:
			created = true
		case errors.Is(err, unix.EEXIST):
		default:
			return classify(err)
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return classifyAt(fd, c, err)
		}
		unix.Close(fd)
		fd = next
		if created {
			if err := h.chown(fd); err != nil {
				return err
			}
		}
	}
	return nil
}

// delete is Delete as the calling thread's ids.
func (h *Home) delete(ctx context.Context, p string, recursive bool) error {
	norm, dirs, name, err := split(p)
	if err != nil {
		return &PathError{Op: "delete", Path: p, Err: err}
	}
	fail := func(err error) error { return &PathError{Op: "delete", Path: norm, Err: err} }
	if name == "" {
		return fail(ErrIsHome)
	}
	dir, err := h.openDir(dirs)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(dir)
	if err := removeAt(ctx, dir, name, recursive); err != nil {
		return fail(err)
	}
	return nil
}

func removeAt(ctx context.Context, dir int, name string, recursive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return classify(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return classify(unix.Unlinkat(dir, name, 0))
	}
	if recursive {
		sub, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return classifyAt(dir, name, err)
		}
		names, err := readNames(sub)
		for _, n := range names {
			if err == nil {
				err = removeAt(ctx, sub, n, true)
			}
		}
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil {
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return errors.New("directory not empty (delete it recursively)")
		}
		return classify(err)
	}
	return nil
}
