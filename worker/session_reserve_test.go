package worker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/worker"
)

// A pull loop that took the only slot but had not yet registered its
// waiting fetch when a create preempted the pulls registers it after the
// preemption: the pending reservation ends that fetch at once, and the
// create gets the slot instead of waiting out the pull's 30 s PullWait.
func TestSessionReservationOutranksAPullNotYetWaiting(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	h := startSessionHost(t, b, "h1", sessionOpts{capacity: 1, pullWait: 30 * time.Second,
		beforeWaiting: func() {
			once.Do(func() { close(held); <-release })
		}})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	c := sessionClient(t, b)
	ctx := tctx(t)
	<-held // the pull loop holds the slot, not yet preemptible
	created := make(chan error, 1)
	go func() {
		sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
		if err == nil {
			t.Cleanup(func() { _ = sb.Delete(ctx) }) // else Stop waits out its drain for it
		}
		created <- err
	}()
	require.Eventually(t, func() bool { return worker.ReservationPending(h.w) }, 10*time.Second, time.Millisecond)
	close(release)
	require.NoError(t, <-created)
}

// On an idle host serving more profiles than slots, parked pulls rotate
// and the profiles without a slot re-enter their wait for one on their own
// tickers: the token a preempted pull hands back must reach the create,
// not another profile's pull loop. Each create here finds its one free
// slot held by a parked pull.
func TestSessionReservationWinsOverRotatingPulls(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startSessionHost(t, b, "h1", sessionOpts{capacity: 2, pullWait: 30 * time.Second,
		profiles: []string{"default", "p2", "p3", "p4"}, rotateWait: 5 * time.Second})
	c := sessionClient(t, b)
	ctx := tctx(t)
	held, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Delete(ctx) })
	for i := range 10 {
		sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
		require.NoError(t, err, "create %d", i)
		require.NoError(t, sb.Delete(ctx))
	}
}
