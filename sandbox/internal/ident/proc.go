package ident

import (
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// LivePIDs lists the live (non-zombie) processes of uid.
func LivePIDs(uid uint32) ([]int, error) {
	live, _, err := Processes(uid)
	return live, err
}

// Processes scans /proc once for processes whose real, effective, saved
// or fs uid is uid, split into live ones and zombies. It reads
// /proc/<pid>/status, which a non-dumpable process cannot hide.
func Processes(uid uint32) (live, zombies []int, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, err
	}
	want := strconv.FormatUint(uint64(uid), 10)
	buf := make([]byte, 4096)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // exited meanwhile
		}
		n, _ := io.ReadFull(f, buf)
		f.Close()
		zombie, match := false, false
		for line := range strings.SplitSeq(string(buf[:n]), "\n") {
			if st, ok := strings.CutPrefix(line, "State:"); ok {
				zombie = strings.HasPrefix(strings.TrimSpace(st), "Z")
			}
			if ids, ok := strings.CutPrefix(line, "Uid:"); ok {
				match = slices.Contains(strings.Fields(ids), want)
				break
			}
		}
		switch {
		case match && zombie:
			zombies = append(zombies, pid)
		case match:
			live = append(live, pid)
		}
	}
	return live, zombies, nil
}
