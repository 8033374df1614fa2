package messages

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var patterns = map[string]pattern{"id": idPattern, "name": namePattern, "env": envPattern, "reply": replyPattern}

var patternSeeds = []string{
	"", "a", "A", "0", "_", "-", "a-b_C9", "-a", "_a", "9a", "a.b", "a..b", ".a", "a.", ".", "a b", "a*b", "a>b", "a.*", "a.>",
	"_INBOX.x", "warren.reply.x-1", "café", "a\x00b", "\xff", "a\tb", "~!?=+", strings.Repeat("a", 64), strings.Repeat("a", 65),
	strings.Repeat("a", 128), strings.Repeat("a", 129), "PATH", "my_VAR2", "1VAR",
}

// matchesExpr checks each pattern against its regular expression on s.
func matchesExpr(t *testing.T, s string) {
	for name, p := range patterns {
		want := regexp.MustCompile(p.String()).MatchString(s)
		require.Equal(t, want, p.MatchString(s), "%s pattern %s on %q", name, p, s)
	}
}

// TestPatternsMatchTheirExpressions: each byte-loop pattern accepts
// exactly what the regular expression its messages name accepts.
func TestPatternsMatchTheirExpressions(t *testing.T) {
	for _, s := range patternSeeds {
		matchesExpr(t, s)
	}
	require.False(t, replyPattern.MatchString("a..b"), "a subject has no empty token")
	require.True(t, replyPattern.MatchString("_INBOX.abc.1"))
}

func FuzzPatterns(f *testing.F) {
	for _, s := range patternSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { matchesExpr(t, s) })
}
