package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/scheduler"
)

// TestOutageReportSaysWhatItWaitsFor: a broker that is connected but does
// not answer is told as such (it may be restarting or its disk full), once
// per outageEvery, and its end as "going on"; an end with nothing told
// before prints nothing.
func TestOutageReportSaysWhatItWaitsFor(t *testing.T) {
	var out strings.Builder
	r := newOutageReport(&out, "nats://b:4222", time.Minute)
	r.note(scheduler.Outage{Op: "publish", Over: true})
	require.Empty(t, out.String(), "no outage told, no end told")
	r.note(scheduler.Outage{Op: "publish", Err: nats.ErrTimeout, Reachable: true, Left: 50 * time.Second})
	r.note(scheduler.Outage{Op: "publish", Err: nats.ErrTimeout, Reachable: true, Left: 49 * time.Second})
	r.note(scheduler.Outage{Op: "publish", Over: true})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())
	require.Contains(t, lines[0], "broker at nats://b:4222 is connected but does not answer in time (it may be restarting, or its disk full; publish: nats: timeout), retrying for 50s more")
	require.Equal(t, "warren: broker reachable again at nats://b:4222; going on", lines[1])
}
