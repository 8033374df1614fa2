package scheduler_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// spy records the subjects of the requests clients send on a subject
// pattern (a plain subscriber in the same account sees every one). It is
// a synchronous subscription: a message the server sent before the PONG
// of a flush is in its queue when the flush returns (the connection's read
// loop queues them in order), so drain sees everything sent so far.
type spy struct {
	nc   *nats.Conn
	sub  *nats.Subscription
	seen []string
}

func apiSpy(t *testing.T, url, pattern string) *spy {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(pattern)
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return &spy{nc: nc, sub: sub}
}

// drain adds what the server has sent the spy so far to seen.
func (s *spy) drain(t *testing.T) {
	t.Helper()
	require.NoError(t, s.nc.Flush())
	for {
		m, err := s.sub.NextMsg(time.Millisecond)
		if errors.Is(err, nats.ErrTimeout) {
			return
		}
		require.NoError(t, err)
		s.seen = append(s.seen, m.Subject)
	}
}

// subjects returns what was seen once at least n requests were.
func (s *spy) subjects(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.drain(t); len(s.seen) < n && time.Now().Before(deadline); s.drain(t) {
	}
	return s.seen
}

// reset forgets what was seen, including what is on its way.
func (s *spy) reset(t *testing.T) {
	t.Helper()
	s.drain(t)
	s.seen = nil
}
