package worker

import (
	"bytes"
	"cmp"
	"slices"
)

// maskText replaces a secret value in output, events and dead letters.
const maskText = "***"

// secretMask knows a task's secret values. Empty values are not masked
// (they would match everywhere).
type secretMask struct {
	values [][]byte // distinct, longest first
	first  [256]bool
	maxLen int
}

func newSecretMask(secrets map[string]string) *secretMask {
	m := &secretMask{}
	for _, v := range secrets {
		if v != "" && !slices.ContainsFunc(m.values, func(b []byte) bool { return string(b) == v }) {
			m.values = append(m.values, []byte(v))
		}
	}
	if len(m.values) == 0 {
		return nil
	}
	slices.SortFunc(m.values, func(a, b []byte) int { return cmp.Compare(len(b), len(a)) })
	for _, v := range m.values {
		m.first[v[0]] = true
		m.maxLen = max(m.maxLen, len(v))
	}
	return m
}

// String masks every secret in s (nil mask: s unchanged).
func (m *secretMask) String(s string) string {
	if m == nil {
		return s
	}
	var st maskStream
	st.m = m
	return string(st.write([]byte(s), true))
}

// maskStream masks one output stream written in chunks: it holds back a
// tail that may be the start of a secret until the next chunk decides, so
// a secret split across two writes is masked too.
type maskStream struct {
	m       *secretMask
	pending []byte
}

// write adds p and returns the bytes that are now safe to pass on; final
// flushes everything held back.
func (s *maskStream) write(p []byte, final bool) []byte {
	s.pending = append(s.pending, p...)
	out := make([]byte, 0, len(s.pending))
	i := 0
scan:
	for i < len(s.pending) {
		if !s.m.first[s.pending[i]] {
			j := i + 1
			for j < len(s.pending) && !s.m.first[s.pending[j]] {
				j++
			}
			out = append(out, s.pending[i:j]...)
			i = j
			continue
		}
		rest := s.pending[i:]
		if !final && len(rest) < s.m.maxLen {
			for _, v := range s.m.values {
				if len(rest) < len(v) && bytes.HasPrefix(v, rest) {
					break scan // may be a secret still arriving
				}
			}
		}
		for _, v := range s.m.values {
			if bytes.HasPrefix(rest, v) {
				out = append(out, maskText...)
				i += len(v)
				continue scan
			}
		}
		out = append(out, s.pending[i])
		i++
	}
	s.pending = append(s.pending[:0], s.pending[i:]...)
	return out
}
