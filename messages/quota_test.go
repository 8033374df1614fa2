package messages

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseQuota(t *testing.T) {
	t.Parallel()
	q, err := ParseQuota("task_bytes=1G, sessions=8,session_ttl=2h,weight=3", TenantQuota{Running: 2})
	require.NoError(t, err)
	require.Equal(t, TenantQuota{TaskBytes: 1 << 30, Sessions: 8, SessionTTLMS: int64(2 * time.Hour / time.Millisecond), Weight: 3, Running: 2}, q)
	require.Equal(t, 2*time.Hour, q.SessionTTL())

	for _, bad := range []struct{ spec, want string }{
		{"bogus=1", `unknown key "bogus"`},
		{"task_bytes", "not key=value"},
		{"task_bytes=lots", "task_bytes"},
		{"session_ttl=-1h", "session_ttl"},
		{"weight=-2", "weight"},
	} {
		_, err := ParseQuota(bad.spec, TenantQuota{})
		require.ErrorContains(t, err, bad.want, bad.spec)
	}
}

// TestQuotaStringRoundTrips: what String writes, ParseQuota reads back.
func TestQuotaStringRoundTrips(t *testing.T) {
	t.Parallel()
	q := TenantQuota{TaskBytes: 3 << 20, TaskMsgs: 7, SessionTTLMS: 90_000, Weight: 2}.WithDefaults()
	back, err := ParseQuota(q.String(), TenantQuota{})
	require.NoError(t, err)
	require.Equal(t, q, back)
}

func TestValidateQuotaNamesTheField(t *testing.T) {
	t.Parallel()
	err := TenantQuota{Consumers: -1}.Validate()
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "quota.consumers", e.Field)
}
