package scheduler_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// spy records the subjects of the requests clients send on a subject
// pattern (a plain subscriber in the same account sees every one).
type spy struct {
	mu   sync.Mutex
	seen []string
	nc   *nats.Conn
}

func apiSpy(t *testing.T, url, pattern string) *spy {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	s := &spy{nc: nc}
	_, err = nc.Subscribe(pattern, func(m *nats.Msg) {
		s.mu.Lock()
		s.seen = append(s.seen, m.Subject)
		s.mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return s
}

// subjects returns what was seen once at least n requests were, after
// letting any later one arrive (a round trip on the spy's connection).
func (s *spy) subjects(t *testing.T, n int) []string {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.seen) >= n
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, s.nc.Flush())
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// reset forgets what was seen.
func (s *spy) reset() {
	s.mu.Lock()
	s.seen = nil
	s.mu.Unlock()
}
