package files

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  error
	}{
		{in: "a/b", want: "a/b"},
		{in: "/etc/passwd", want: "etc/passwd"},
		{in: "../../etc/passwd", want: "etc/passwd"},
		{in: "a/../../b", want: "b"},
		{in: "a/./b//c/", want: "a/b/c"},
		{in: "..", want: ""},
		{in: "/", want: ""},
		{in: "", want: ""},
		{in: "a/b/../..", want: ""},
		{in: "...", want: "..."},
		{in: "a\x00b", wantErr: ErrInvalidPath},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// FuzzNormalize: whatever the input, the result names something inside
// the home, is already normal, and agrees with filepath.Join rooted at /.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"a/b", "/../..", "../x/../../y", "a//b/./c", "..a/..", "\x00", "/./.", "a/b/c/../../../../d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := Normalize(p)
		if strings.IndexByte(p, 0) >= 0 {
			require.ErrorIs(t, err, ErrInvalidPath)
			return
		}
		require.NoError(t, err)
		require.False(t, strings.HasPrefix(got, "/"), got)
		for _, c := range strings.Split(got, "/") {
			require.NotContains(t, []string{".", ".."}, c, got)
			if got != "" {
				require.NotEmpty(t, c, got)
			}
		}
		again, err := Normalize(got)
		require.NoError(t, err)
		require.Equal(t, got, again, "idempotent")
		joined := filepath.Join("/home", got)
		require.True(t, joined == "/home" || strings.HasPrefix(joined, "/home/"), joined)
		require.Equal(t, filepath.Join("/", p)[1:], got, "agrees with lexical cleaning rooted at /")
	})
}
