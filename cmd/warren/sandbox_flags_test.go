package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512M": 512 << 20, "2G": 2 << 30, "100k": 100 << 10, "1.5GiB": 3 << 29, "4096": 4096, "64MB": 64 << 20} {
		got, err := parseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "M", "-1G", "12Q", "lots"} {
		_, err := parseSize(bad)
		require.Error(t, err, bad)
	}
}
