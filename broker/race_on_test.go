//go:build race

package broker_test

// raceEnabled: the race detector slows the in-process cluster about
// fourfold; the cluster tests default to a smaller batch under it.
const raceEnabled = true
