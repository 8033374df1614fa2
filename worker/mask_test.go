package worker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMaskStreamMasksSecretsSplitAcrossWrites(t *testing.T) {
	secrets := map[string]string{"A": "tok-SECRET-123", "B": "tok-SEC", "C": "zz", "EMPTY": ""}
	cases := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"whole", []string{"x tok-SECRET-123 y"}, "x *** y"},
		{"split in two", []string{"x tok-SEC", "RET-123 y"}, "x *** y"},
		{"byte by byte", strings.Split("a tok-SECRET-123 b zz c", ""), "a *** b *** c"},
		{"shorter secret when the longer does not follow", []string{"tok-SE", "C!"}, "***!"},
		{"prefix at the end is not a secret", []string{"ends with tok-S", "E"}, "ends with tok-SE"},
		{"the longer one cut short", []string{"tok-SECRET-12", "\n"}, "***RET-12\n"},
		{"repeated", []string{"zzzz", "z"}, "******z"},
		{"no secret", []string{"plain ", "text"}, "plain text"},
		{"adjacent", []string{"tok-SECRET-123tok-SECRET-123"}, "******"},
	}
	m := newSecretMask(secrets)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &maskStream{m: m}
			var out strings.Builder
			for _, ch := range c.chunks {
				got := s.write([]byte(ch), false)
				out.Write(got)
				for _, v := range []string{"tok-SECRET-123", "tok-SEC"} {
					require.NotContains(t, out.String(), v, "a secret was passed on before it was masked")
				}
			}
			out.Write(s.write(nil, true))
			require.Equal(t, c.want, out.String())
		})
	}
	require.Equal(t, "id *** and ***", m.String("id tok-SECRET-123 and zz"))
	require.Nil(t, newSecretMask(map[string]string{"E": ""}))
	require.Equal(t, "unchanged", (*secretMask)(nil).String("unchanged"))
}

// A capture with a mask keeps and streams only masked bytes, and the held
// back tail is flushed into the result.
func TestCaptureMasksResultAndEvents(t *testing.T) {
	em := &emitter{mask: newSecretMask(map[string]string{"K": "hunter2"}), closed: true}
	c := &capture{em: em, limit: 1 << 20}
	for _, ch := range []string{"pw=hun", "ter2\n", "tail hu"} {
		n, err := c.Write([]byte(ch))
		require.NoError(t, err)
		require.Equal(t, len(ch), n)
	}
	out, truncated := c.result()
	require.False(t, truncated)
	require.Equal(t, "pw=***\ntail hu", string(out))
}

// BenchmarkMaskStream: masking 1 MiB of output written in 4 KiB chunks
// with three secrets.
func BenchmarkMaskStream(b *testing.B) {
	m := newSecretMask(map[string]string{"A": "tok-SECRET-123", "B": "hunter2hunter2", "C": "sk-live-abcdef"})
	chunk := []byte(strings.Repeat("some ordinary log output, tok-SE and hunter ", 100)[:4096])
	b.SetBytes(int64(len(chunk)) * 256)
	for b.Loop() {
		s := &maskStream{m: m}
		for range 256 {
			s.write(chunk, false)
		}
		s.write(nil, true)
	}
}

// FuzzMaskStream: however the output is cut into writes, the stream masks
// it exactly as the whole text is masked, and what it passes on never
// holds a secret.
func FuzzMaskStream(f *testing.F) {
	f.Add([]byte("x tok-SECRET-123 y zz"), []byte{3, 7, 1})
	f.Add([]byte("tok-SEtok-SECRET-12tok-SEC"), []byte{1, 1, 1, 1})
	m := newSecretMask(map[string]string{"A": "tok-SECRET-123", "B": "tok-SEC", "C": "zz"})
	f.Fuzz(func(t *testing.T, text, cuts []byte) {
		s := &maskStream{m: m}
		var out []byte
		rest := text
		for _, c := range cuts {
			n := min(int(c), len(rest))
			out = append(out, s.write(rest[:n], false)...)
			rest = rest[n:]
		}
		out = append(out, s.write(rest, true)...)
		want := m.String(string(text))
		require.Equal(t, want, string(out))
		for _, v := range m.values {
			if strings.Contains(string(text), string(v)) {
				// A secret in the input: the output may only hold it where
				// masking made it up from surrounding bytes, which "***"
				// cannot do for these values.
				require.NotContains(t, string(out), string(v))
			}
		}
	})
}
