package messages

import (
	"fmt"
	"time"
)

// CodeOverCeiling: a task asks for a limit above what the hosts of its
// pool allow (HostInfo.Ceilings). The field names the limit; the message
// says the ceiling.
const CodeOverCeiling Code = "over_ceiling"

// limitField is one limit of Limits with its wire name and unit.
type limitField struct {
	name     string
	ask, max int64
	unit     limitUnit
}

// limitUnit says how a limit is printed.
type limitUnit int

const (
	unitCount limitUnit = iota
	unitBytes
	unitMillis
)

func (u limitUnit) format(v int64) string {
	switch u {
	case unitBytes:
		return FormatSize(v)
	case unitMillis:
		return (time.Duration(v) * time.Millisecond).String()
	}
	return fmt.Sprint(v)
}

func limitFields(l, c Limits) []limitField {
	return []limitField{
		{"limits.wall_timeout_ms", l.WallTimeoutMS, c.WallTimeoutMS, unitMillis},
		{"limits.cpu_time_ms", l.CPUTimeMS, c.CPUTimeMS, unitMillis},
		{"limits.memory_bytes", l.MemoryBytes, c.MemoryBytes, unitBytes},
		{"limits.processes", l.Processes, c.Processes, unitCount},
		{"limits.file_size_bytes", l.FileSizeBytes, c.FileSizeBytes, unitBytes},
		{"limits.output_bytes", l.OutputBytes, c.OutputBytes, unitBytes},
		{"limits.open_files", l.OpenFiles, c.OpenFiles, unitCount},
		{"limits.disk_bytes", l.DiskBytes, c.DiskBytes, unitBytes},
	}
}

// Above returns the first limit of l above its ceiling in c, as an *Error
// with CodeOverCeiling naming the field, or nil. A zero ceiling bounds
// nothing; where says whose ceiling it is ("host h1", "pool default").
func (l Limits) Above(c Limits, where string) *Error {
	for _, f := range limitFields(l, c) {
		if f.max > 0 && f.ask > f.max {
			return fieldErr(CodeOverCeiling, f.name, "%s is above the ceiling of %s, %s; ask for at most that (`warren hosts` lists each host's ceilings)",
				f.unit.format(f.ask), where, f.unit.format(f.max))
		}
	}
	return nil
}

// Max is the larger of each limit of l and c, a zero meaning unbounded.
func (l Limits) Max(c Limits) Limits {
	pick := func(a, b int64) int64 {
		if a == 0 || b == 0 {
			return 0
		}
		return max(a, b)
	}
	return Limits{
		WallTimeoutMS: pick(l.WallTimeoutMS, c.WallTimeoutMS),
		CPUTimeMS:     pick(l.CPUTimeMS, c.CPUTimeMS),
		MemoryBytes:   pick(l.MemoryBytes, c.MemoryBytes),
		Processes:     pick(l.Processes, c.Processes),
		FileSizeBytes: pick(l.FileSizeBytes, c.FileSizeBytes),
		OutputBytes:   pick(l.OutputBytes, c.OutputBytes),
		OpenFiles:     pick(l.OpenFiles, c.OpenFiles),
		DiskBytes:     pick(l.DiskBytes, c.DiskBytes),
	}
}

// Summary prints the set limits, e.g. "memory 8G, wall 6h0m0s, disk 1G".
func (l Limits) Summary() string {
	short := map[string]string{
		"limits.wall_timeout_ms": "wall", "limits.cpu_time_ms": "cpu", "limits.memory_bytes": "memory",
		"limits.processes": "processes", "limits.file_size_bytes": "file", "limits.output_bytes": "output",
		"limits.open_files": "files", "limits.disk_bytes": "disk",
	}
	s := ""
	for _, f := range limitFields(l, Limits{}) {
		if f.ask == 0 {
			continue
		}
		if s != "" {
			s += ", "
		}
		s += short[f.name] + " " + f.unit.format(f.ask)
	}
	return s
}
