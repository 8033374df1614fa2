package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
)

// keys init -> worker --seal-key -> exec --secret: the command sees the
// secret, its output is masked; with the key pinned or taken from the
// registry the workers publish.
func TestE2ESecretsThroughTheCLI(t *testing.T) {
	e := newE2E(t)
	dir := t.TempDir()
	pub, stderr, code := e.run(t, "keys", "init", "--dir", dir)
	require.Zero(t, code, stderr)
	pub = strings.TrimSpace(pub)
	require.True(t, nkeys.IsValidPublicCurveKey(pub), pub)
	st, err := os.Stat(filepath.Join(dir, "pool-default.xkey"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	shown, _, code := e.run(t, "keys", "show", "--dir", dir)
	require.Zero(t, code)
	require.Equal(t, pub, strings.TrimSpace(shown))
	_, stderr, code = e.run(t, "keys", "init", "--dir", dir)
	require.NotZero(t, code, "a second init must not replace the key")
	require.Contains(t, stderr, "exists")

	e.startWorker(t, 1, "--seal-key", filepath.Join(dir, "pool-default.xkey"))
	const secret = "cli-secret-5a8e1f"
	script := `echo "tok=$API_TOKEN"; printf %s "$API_TOKEN" | wc -c`
	for name, args := range map[string][]string{
		"pinned":   {"exec", "--pool-key", pub, "--secret", "API_TOKEN", "--", "sh", "-c", script},
		"registry": {"exec", "--secret", "API_TOKEN", "--", "sh", "-c", script},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := e.cmd(ctx, args...)
			c.Env = append(c.Env, "API_TOKEN="+secret)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			require.NoError(t, c.Run(), errb.String())
			require.Equal(t, "tok=***\n"+strconv.Itoa(len(secret))+"\n", out.String())
			require.NotContains(t, errb.String(), secret)
			if name == "registry" {
				require.Contains(t, errb.String(), "host registry", "an unpinned key is said out loud")
			}
		})
	}
	_, stderr, code = e.run(t, "exec", "--secret", "NOT_SET_ANYWHERE_42", "--", "true")
	require.NotZero(t, code)
	require.Contains(t, stderr, "no such variable")
}
