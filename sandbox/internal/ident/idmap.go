package ident

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ErrRangeUnmapped means the sandbox uid range of a root worker is not
// (entirely) mapped in the worker's user namespace, so no file can be
// given to those ids (chown fails with EINVAL) and no process can run as
// them. The error names the map and the fix. Package sandbox exports it
// as ErrUIDRangeUnmapped.
var ErrRangeUnmapped = errors.New("sandbox: uid range not mapped in this user namespace")

// The files that say which ids exist in the worker's user namespace.
const (
	UIDMapPath = "/proc/self/uid_map"
	GIDMapPath = "/proc/self/gid_map"
)

// Default sandbox uid range of a root worker, taken wherever it is mapped
// (package sandbox exports them as DefaultUIDBase and DefaultUIDCount).
const (
	DefaultBase  = 1_900_000_000
	DefaultCount = 1024
)

// Extent is one line of a uid_map or gid_map: ids [Inside,
// Inside+Count) of this namespace are ids [Outside, ...) of its parent.
type Extent struct {
	Inside, Outside, Count uint64
}

// Map is a parsed /proc/self/uid_map (or gid_map).
type Map struct {
	Path    string
	Extents []Extent
}

// String is the map as the kernel prints it, one extent per "; ".
func (m Map) String() string {
	s := make([]string, len(m.Extents))
	for i, e := range m.Extents {
		s[i] = fmt.Sprintf("%d %d %d", e.Inside, e.Outside, e.Count)
	}
	return m.Path + ` "` + strings.Join(s, "; ") + `"`
}

// ReadMap reads and parses the id map at path (UIDMapPath, GIDMapPath).
func ReadMap(path string) (Map, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Map{}, err
	}
	m, err := ParseMap(string(b))
	m.Path = path
	return m, err
}

// ParseMap parses the text of an id map, one "inside outside count" extent
// a line; blank lines are skipped.
func ParseMap(s string) (Map, error) {
	var m Map
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return m, fmt.Errorf("id map line %q: want 3 fields", l)
		}
		var e Extent
		for i, p := range []*uint64{&e.Inside, &e.Outside, &e.Count} {
			v, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return m, fmt.Errorf("id map line %q: %w", l, err)
			}
			*p = v
		}
		m.Extents = append(m.Extents, e)
	}
	return m, nil
}

// Covers reports whether every id of [base, base+count) is mapped.
func (m Map) Covers(base, count uint64) bool {
	for id := base; id < base+count; {
		i := slices.IndexFunc(m.Extents, func(e Extent) bool { return id >= e.Inside && id < e.Inside+e.Count })
		if i < 0 {
			return false
		}
		e := m.Extents[i]
		id = e.Inside + e.Count
	}
	return true
}

// idRun is a contiguous range of ids.
type idRun struct{ base, count uint64 }

// intersect lists the ids mapped in both maps, as runs in ascending order.
func intersect(a, b Map) []idRun {
	var runs []idRun
	for _, x := range a.Extents {
		for _, y := range b.Extents {
			lo, hi := max(x.Inside, y.Inside), min(x.Inside+x.Count, y.Inside+y.Count)
			if lo < hi {
				runs = append(runs, idRun{lo, hi - lo})
			}
		}
	}
	slices.SortFunc(runs, func(p, q idRun) int { return cmp.Compare(p.base, q.base) })
	return runs
}

// The automatic choice never takes ids below autoMin (system users and
// the usual first login users), the overflow id 65534 ("nobody", what
// unmapped ids show as) nor 65535 and 4294967295 (-1 as a 16- and 32-bit
// id), nor any id named in /etc/passwd or /etc/group.
const autoMin = 1000

// Range is the sandbox uid range of a root worker: uids (and gids)
// [Base, Base+Count).
type Range struct {
	Base, Count uint32
}

// ChooseRange returns the sandbox uid range of a root worker, given
// the worker's uid and gid maps, the configured base and count (sandbox
// Config.UIDBase and Config.UIDCount; 0: automatic) and the ids in use
// locally (taken).
//
// The rule: an explicit range must be mapped in both maps, else an error
// wrapping ErrRangeUnmapped that names the map and the fix. Otherwise
// the default range (DefaultBase, DefaultCount ids, or UIDCount) is
// used when it is mapped, as on any host outside a user namespace; and
// else the highest run of ids mapped in both maps that holds UIDCount
// usable ids (not reserved, not taken), of which it takes the top ones.
// When UIDCount is not set and no run holds DefaultCount ids, the
// longest run of usable ids is taken, however short (it bounds the
// worker's concurrent runs).
func ChooseRange(uids, gids Map, base, count uint32, taken []uint64) (Range, error) {
	want := uint64(count)
	if want == 0 {
		want = DefaultCount
	}
	if base != 0 {
		if uids.Covers(uint64(base), want) && gids.Covers(uint64(base), want) {
			return Range{base, uint32(want)}, nil
		}
		hint := "leave both unset for the automatic choice"
		if c, err := autoRange(uids, gids, want, count == 0, taken); err == nil {
			hint += fmt.Sprintf(" (here: %d..%d)", c.Base, c.Base+c.Count-1)
		}
		return Range{}, fmt.Errorf("%w: uids %d..%d (%s, %s): choose a mapped range with --uid-base/--uid-count (Config.UIDBase/UIDCount), or %s",
			ErrRangeUnmapped, base, uint64(base)+want-1, uids, gids, hint)
	}
	if uids.Covers(DefaultBase, want) && gids.Covers(DefaultBase, want) {
		return Range{DefaultBase, uint32(want)}, nil
	}
	return autoRange(uids, gids, want, count == 0, taken)
}

func autoRange(uids, gids Map, want uint64, shrink bool, taken []uint64) (Range, error) {
	// Usable runs, highest first: the mapped runs above autoMin, split
	// at every reserved or taken id.
	cuts := slices.Concat([]uint64{65534, 65535, 1<<32 - 1}, taken)
	slices.Sort(cuts)
	var usable []idRun
	for _, r := range intersect(uids, gids) {
		lo, hi := max(r.base, autoMin), r.base+r.count
		for _, c := range cuts {
			if c < lo || c >= hi {
				continue
			}
			if c > lo {
				usable = append(usable, idRun{lo, c - lo})
			}
			lo = c + 1
		}
		if lo < hi {
			usable = append(usable, idRun{lo, hi - lo})
		}
	}
	slices.Reverse(usable)
	for _, r := range usable {
		if r.count >= want {
			return Range{uint32(r.base + r.count - want), uint32(want)}, nil
		}
	}
	if shrink && len(usable) > 0 {
		best := usable[0]
		for _, r := range usable[1:] {
			if r.count > best.count {
				best = r
			}
		}
		return Range{uint32(best.base), uint32(best.count)}, nil
	}
	return Range{}, fmt.Errorf("%w: no run of %d free ids (>= %d, not 65534/65535, not in /etc/passwd or /etc/group) is mapped (%s, %s): map more ids into the worker's user namespace (e.g. 0..65535), or pass a smaller --uid-count",
		ErrRangeUnmapped, want, autoMin, uids, gids)
}

// localIDs returns the uids and gids named in /etc/passwd and /etc/group.
func localIDs() []uint64 {
	var ids []uint64
	for _, f := range []string{"/etc/passwd", "/etc/group"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if p := strings.Split(sc.Text(), ":"); len(p) > 2 {
				if id, err := strconv.ParseUint(p[2], 10, 32); err == nil {
					ids = append(ids, id)
				}
			}
		}
		fh.Close()
	}
	return ids
}

// WorkerRange resolves the sandbox uid range of a root worker from
// /proc/self/uid_map and gid_map (see ChooseRange).
func WorkerRange(base, count uint32) (Range, error) {
	uids, err := ReadMap(UIDMapPath)
	if err != nil {
		return Range{}, fmt.Errorf("sandbox uid range: %w", err)
	}
	gids, err := ReadMap(GIDMapPath)
	if err != nil {
		return Range{}, fmt.Errorf("sandbox uid range: %w", err)
	}
	return ChooseRange(uids, gids, base, count, localIDs())
}
