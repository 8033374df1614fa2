//go:build !race

package broker_test

const raceEnabled = false
