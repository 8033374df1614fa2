package sandbox

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

// ErrUIDRangeUnmapped means the sandbox uid range of a root worker is not
// (entirely) mapped in the worker's user namespace, so no file can be
// given to those ids (chown fails with EINVAL) and no process can run as
// them. The error names the map and the fix.
var ErrUIDRangeUnmapped = errors.New("sandbox: uid range not mapped in this user namespace")

// The files that say which ids exist in the worker's user namespace.
const (
	uidMapPath = "/proc/self/uid_map"
	gidMapPath = "/proc/self/gid_map"
)

// idExtent is one line of a uid_map or gid_map: ids [Inside,
// Inside+Count) of this namespace are ids [Outside, ...) of its parent.
type idExtent struct {
	Inside, Outside, Count uint64
}

// idMap is a parsed /proc/self/uid_map (or gid_map).
type idMap struct {
	Path    string
	Extents []idExtent
}

// String is the map as the kernel prints it, one extent per "; ".
func (m idMap) String() string {
	s := make([]string, len(m.Extents))
	for i, e := range m.Extents {
		s[i] = fmt.Sprintf("%d %d %d", e.Inside, e.Outside, e.Count)
	}
	return m.Path + ` "` + strings.Join(s, "; ") + `"`
}

func readIDMap(path string) (idMap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return idMap{}, err
	}
	m, err := parseIDMap(string(b))
	m.Path = path
	return m, err
}

func parseIDMap(s string) (idMap, error) {
	var m idMap
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return m, fmt.Errorf("id map line %q: want 3 fields", l)
		}
		var e idExtent
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

// covers reports whether every id of [base, base+count) is mapped.
func (m idMap) covers(base, count uint64) bool {
	for id := base; id < base+count; {
		i := slices.IndexFunc(m.Extents, func(e idExtent) bool { return id >= e.Inside && id < e.Inside+e.Count })
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
func intersect(a, b idMap) []idRun {
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

// The automatic choice never takes ids below autoUIDMin (system users and
// the usual first login users), the overflow id 65534 ("nobody", what
// unmapped ids show as) nor 65535 and 4294967295 (-1 as a 16- and 32-bit
// id), nor any id named in /etc/passwd or /etc/group.
const autoUIDMin = 1000

// uidRangeChoice is the sandbox uid range of a root worker.
type uidRangeChoice struct {
	base, count uint32
}

// chooseUIDRange returns the sandbox uid range of a root worker, given
// the worker's uid and gid maps, the configured Config.UIDBase and
// Config.UIDCount (0: automatic) and the ids in use locally (taken).
//
// The rule: an explicit range must be mapped in both maps, else an error
// wrapping ErrUIDRangeUnmapped that names the map and the fix. Otherwise
// the default range (DefaultUIDBase, DefaultUIDCount ids, or UIDCount) is
// used when it is mapped, as on any host outside a user namespace; and
// else the highest run of ids mapped in both maps that holds UIDCount
// usable ids (not reserved, not taken), of which it takes the top ones.
// When UIDCount is not set and no run holds DefaultUIDCount ids, the
// longest run of usable ids is taken, however short (it bounds the
// worker's concurrent runs).
func chooseUIDRange(uids, gids idMap, base, count uint32, taken []uint64) (uidRangeChoice, error) {
	want := uint64(count)
	if want == 0 {
		want = DefaultUIDCount
	}
	if base != 0 {
		if uids.covers(uint64(base), want) && gids.covers(uint64(base), want) {
			return uidRangeChoice{base, uint32(want)}, nil
		}
		hint := "leave both unset for the automatic choice"
		if c, err := autoUIDRange(uids, gids, want, count == 0, taken); err == nil {
			hint += fmt.Sprintf(" (here: %d..%d)", c.base, c.base+c.count-1)
		}
		return uidRangeChoice{}, fmt.Errorf("%w: uids %d..%d (%s, %s): choose a mapped range with --uid-base/--uid-count (Config.UIDBase/UIDCount), or %s",
			ErrUIDRangeUnmapped, base, uint64(base)+want-1, uids, gids, hint)
	}
	if uids.covers(DefaultUIDBase, want) && gids.covers(DefaultUIDBase, want) {
		return uidRangeChoice{DefaultUIDBase, uint32(want)}, nil
	}
	return autoUIDRange(uids, gids, want, count == 0, taken)
}

func autoUIDRange(uids, gids idMap, want uint64, shrink bool, taken []uint64) (uidRangeChoice, error) {
	// Usable runs, highest first: the mapped runs above autoUIDMin, split
	// at every reserved or taken id.
	cuts := slices.Concat([]uint64{65534, 65535, 1<<32 - 1}, taken)
	slices.Sort(cuts)
	var usable []idRun
	for _, r := range intersect(uids, gids) {
		lo, hi := max(r.base, autoUIDMin), r.base+r.count
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
			return uidRangeChoice{uint32(r.base + r.count - want), uint32(want)}, nil
		}
	}
	if shrink && len(usable) > 0 {
		best := usable[0]
		for _, r := range usable[1:] {
			if r.count > best.count {
				best = r
			}
		}
		return uidRangeChoice{uint32(best.base), uint32(best.count)}, nil
	}
	return uidRangeChoice{}, fmt.Errorf("%w: no run of %d free ids (>= %d, not 65534/65535, not in /etc/passwd or /etc/group) is mapped (%s, %s): map more ids into the worker's user namespace (e.g. 0..65535), or pass a smaller --uid-count",
		ErrUIDRangeUnmapped, want, autoUIDMin, uids, gids)
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

// workerUIDRange resolves the sandbox uid range of a root worker from
// /proc/self/uid_map and gid_map (see chooseUIDRange).
func workerUIDRange(base, count uint32) (uidRangeChoice, error) {
	uids, err := readIDMap(uidMapPath)
	if err != nil {
		return uidRangeChoice{}, fmt.Errorf("sandbox uid range: %w", err)
	}
	gids, err := readIDMap(gidMapPath)
	if err != nil {
		return uidRangeChoice{}, fmt.Errorf("sandbox uid range: %w", err)
	}
	return chooseUIDRange(uids, gids, base, count, localIDs())
}
