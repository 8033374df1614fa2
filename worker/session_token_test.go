package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func TestSessionToken(t *testing.T) {
	k, err := loadTokenKey("")
	require.NoError(t, err)
	now := time.Now()
	a, b := "h1.0123456789abcdef", "h1.fedcba9876543210"
	tok := k.mint(a, "alice", now.Add(time.Hour))
	require.NoError(t, k.check(tok, a, "alice", now))
	require.ErrorIs(t, k.check(tok, b, "alice", now), messages.ErrTokenInvalid, "a token for A is refused on B")
	require.ErrorIs(t, k.check(tok, a, "bob", now), messages.ErrTokenInvalid, "another tenant")
	require.ErrorIs(t, k.check(tok, a, "alice", now.Add(time.Hour)), messages.ErrTokenExpired)
	other, err := loadTokenKey("")
	require.NoError(t, err)
	require.ErrorIs(t, other.check(tok, a, "alice", now), messages.ErrTokenInvalid, "another host's key")
	// Moving the expiry forward breaks the MAC.
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + "99999999999" + "." + parts[2]
	require.ErrorIs(t, k.check(forged, a, "alice", now), messages.ErrTokenInvalid)
	for _, bad := range []string{"", "v1", "v2.1.x", "v1.x.y", "v1.1.%%%"} {
		require.ErrorIs(t, k.check(bad, a, "alice", now), messages.ErrTokenInvalid, bad)
	}
}

func TestSessionTokenKeyFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(f, []byte(strings.Repeat("ab", 32)+"\n"), 0o600))
	k1, err := loadTokenKey(f)
	require.NoError(t, err)
	k2, err := loadTokenKey(f)
	require.NoError(t, err)
	exp := time.Now().Add(time.Minute)
	require.NoError(t, k2.check(k1.mint("h.0123456789abcdef", "", exp), "h.0123456789abcdef", "", time.Now()), "the same key file checks the other's tokens")
	require.NoError(t, os.WriteFile(f, []byte("abcd"), 0o600))
	_, err = loadTokenKey(f)
	require.ErrorContains(t, err, "SessionKeyFile")
}
