package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// `warren doctor` with a broker named reports the broker side, and fails
// naming the field and `warren setup` when a stream was made incompatible.
func TestDoctorReportsTheBroker(t *testing.T) {
	e := newE2E(t)
	out, stderr, code := e.run(t, "doctor")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	require.Regexp(t, `ok\s+JetStream\s+a single server`, out)
	require.Regexp(t, `ok\s+JetStream storage\s+streams and buckets reserve [0-9.]+ GiB and store`, out)
	require.Regexp(t, `ok\s+stream WARREN_TASKS\s+1 replica\(s\), compatible`, out)
	require.Regexp(t, `ok\s+bucket warren_claims\s+1 replica\(s\), compatible`, out)
	require.Regexp(t, `ok\s+broker auth\s+not required`, out, "plaintext without auth is fine on loopback, but said")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.b.JS.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgsPerSubject = 2
	_, err = e.b.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	out, _, code = e.run(t, "doctor")
	require.Equal(t, 1, code, out)
	require.Regexp(t, `NO\s+stream WARREN_RESULTS\s+max_msgs_per_subject is 2, Warren needs 1`, out)
	require.Contains(t, out, "warren setup")
}

// doctor reports a broker that does not answer as it is now, at once: it
// does not wait --retry-for for it as client commands do.
func TestDoctorDoesNotWaitForABrokerAway(t *testing.T) {
	e := newE2E(t)
	e.b.Server.Stop()
	out, stderr, _ := e.run(t, "doctor", "--retry-for", "10m")
	require.Regexp(t, `NO\s+broker\s+`, out, stderr)
	require.NotContains(t, stderr, "retrying")
}
