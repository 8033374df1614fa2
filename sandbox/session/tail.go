package session

import (
	"io"
	"strings"
	"sync"
)

// tailBuffer keeps the last max bytes written (the agent's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// summary is the line that says why the agent died: a Go runtime's
// "fatal error:" or "panic:" line when there is one (the stack trace
// follows it), else the last non-empty line.
func (t *tailBuffer) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(string(t.b), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			if strings.Contains(l, "memory") {
				l += " (the Go agent needs about 1.3 GiB of address space where memory is an rlimit: raise Limits.Memory or give the worker cgroups)"
			}
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

var _ io.Writer = (*tailBuffer)(nil)
