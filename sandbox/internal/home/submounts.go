package home

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSubmounts means a bind's source has mounts under it that the sandbox
// cannot leave out. Binds are not recursive (a host mount under a bound
// path stays out of the sandbox), and in the sandbox's user namespace (as
// root too) the kernel refuses (EINVAL) a non-recursive bind of a
// directory whose submounts it inherited locked: the bind would uncover
// what they cover.
var ErrSubmounts = errors.New("the path has mounts under it")

// ExplainBind turns the EINVAL of a bind whose source has mounts under it
// into ErrSubmounts naming them and the fix; other errors are returned as
// they are. mountinfo is /proc/self/mountinfo's content (the init's mount
// namespace began as a copy of this one).
func ExplainBind(step, path string, err error, mountinfo []byte) error {
	if step != "bind" || path == "" || !errors.Is(err, unix.EINVAL) {
		return err
	}
	under := SubmountsOf(mountinfo, path)
	if len(under) == 0 {
		return err
	}
	return &submountsError{errno: err, path: path, under: under}
}

// submountsError is ErrSubmounts with the mounts found; it unwraps to both
// ErrSubmounts and the kernel's error.
type submountsError struct {
	errno error
	path  string
	under []string
}

func (e *submountsError) Unwrap() []error { return []error{ErrSubmounts, e.errno} }

func (e *submountsError) Error() string {
	shown, more := e.under, ""
	if len(shown) > 3 {
		shown, more = shown[:3], fmt.Sprintf(" and %d more", len(e.under)-3)
	}
	return fmt.Sprintf("%v: %s has mounts under it (%s%s), which a sandbox in a user namespace cannot leave out of a bind: "+
		"bind a path without mounts under it (or each mount's own path), or unmount them (a worker killed mid-task leaves its homes mounted until its next start sweeps them)",
		e.errno, e.path, strings.Join(shown, ", "), more)
}

// SubmountsOf lists the mount points strictly under dir in a mountinfo
// table, in its order; octal escapes (\040 for a space) are decoded.
func SubmountsOf(mountinfo []byte, dir string) []string {
	dir = filepath.Clean(dir)
	prefix := dir + "/"
	if dir == "/" {
		prefix = "/"
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if mp != dir && strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMountinfo decodes the kernel's octal escapes (space, tab,
// newline, backslash) in a mountinfo field.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// ReadMountinfo is this process's /proc/self/mountinfo, empty when it
// cannot be read.
func ReadMountinfo() []byte {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	return b
}
