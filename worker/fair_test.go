package worker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/worker"
)

// resultOrder records, in the order results are stored, the batch of each
// result of the given tenants' namespaces.
type resultOrder struct {
	mu    sync.Mutex
	order []string
}

func (o *resultOrder) add(batch string) {
	o.mu.Lock()
	o.order = append(o.order, batch)
	o.mu.Unlock()
}

func (o *resultOrder) snapshot() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.order...)
}

func count(order []string, batch string) int {
	n := 0
	for _, b := range order {
		if b == batch {
			n++
		}
	}
	return n
}

// watchResults follows every stored result of the namespaces of batches.
func watchResults(t *testing.T, js jetstream.JetStream, batches ...string) *resultOrder {
	t.Helper()
	o := &resultOrder{}
	for _, batch := range batches {
		c, err := js.OrderedConsumer(context.Background(), messages.NamespaceOf(batch).Results(),
			jetstream.OrderedConsumerConfig{FilterSubjects: []string{messages.BatchResultFilter(batch, 0)}})
		require.NoError(t, err)
		cc, err := c.Consume(func(m jetstream.Msg) {
			r, err := messages.DecodeResult(m.Data())
			if err == nil {
				o.add(r.Batch)
			}
		})
		require.NoError(t, err)
		t.Cleanup(cc.Stop)
	}
	return o
}

func setupTenants(t *testing.T, b *brokertest.Broker, tenants ...broker.Tenant) {
	t.Helper()
	_, err := broker.SetupTenants(context.Background(), b.JS, broker.StreamConfig{}, tenants, false)
	require.NoError(t, err)
}

func quickTasks(batch string, n int) []messages.Task {
	tasks := make([]messages.Task, n)
	for i := range tasks {
		tasks[i] = shTask(batch, fmt.Sprintf("t%d", i), "true")
	}
	return tasks
}

// TestTenantsTakeTurnsForSlots: with bob holding hundreds of queued tasks
// on a one-slot worker, alice's small batch, published later, starts on
// the next free slots, taking turns with bob's; bob's batch still
// completes. The control: the same small batch in bob's own namespace
// (one queue, no turns) waits behind all of bob's tasks.
func TestTenantsTakeTurnsForSlots(t *testing.T) {
	const bobs, alices = 300, 10
	for _, tc := range []struct {
		name, small string
		fair        bool
	}{
		{"two tenants", "alice.small", true},
		{"control: one namespace", "bob.small", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Options{})
			setupTenants(t, b, broker.Tenant{Name: "alice"}, broker.Tenant{Name: "bob"})
			started := make(chan string, bobs+alices)
			// PullWait as in production: an idle tenant's loop sleeps up to
			// it between looks, unless its doorbell rings.
			startWorker(t, b, "w1", workerOpts{capacity: 1, started: started, pullWait: 2 * time.Second})
			order := watchResults(t, b.JS, "bob.big", tc.small)
			publish(t, b.JS, quickTasks("bob.big", bobs)...)
			for range 60 {
				<-started // bob's queue is being worked through, alice's loop long idle
			}
			atPublish := count(order.snapshot(), "bob.big")
			publish(t, b.JS, quickTasks(tc.small, alices)...)
			require.Eventually(t, func() bool { return count(order.snapshot(), tc.small) == alices }, 120*time.Second, 10*time.Millisecond)
			if o := order.snapshot(); tc.fair {
				first := slices.Index(o, tc.small)
				// Its loop slept (up to PullWait) but heard the publish:
				// alice's first task takes one of the next free slots.
				require.LessOrEqual(t, count(o[:first], "bob.big")-atPublish, 5, "alice's first task waited for her loop to wake")
			}
			bobDone := count(order.snapshot(), "bob.big")
			if tc.fair {
				require.Less(t, bobDone-60, 2*alices+5, "alice's batch waited behind bob's queue: %d of bob's %d ran first", bobDone, bobs)
			} else {
				require.Equal(t, bobs, bobDone, "the control: one queue serves in order")
			}
			require.Eventually(t, func() bool { return count(order.snapshot(), "bob.big") == bobs }, 120*time.Second, 10*time.Millisecond,
				"bob's batch completes")
		})
	}
}

// TestTenantWeights: a tenant's weight is its share of the slots while
// others queue too: with alice at weight 3 and bob at 1, both holding more
// tasks than are run here, alice's results are about three in four.
func TestTenantWeights(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	setupTenants(t, b, broker.Tenant{Name: "alice", Quota: messages.TenantQuota{Weight: 3}}, broker.Tenant{Name: "bob"})
	startWorker(t, b, "w1", workerOpts{capacity: 4})
	order := watchResults(t, b.JS, "alice.w", "bob.w")
	publish(t, b.JS, quickTasks("bob.w", 200)...)
	publish(t, b.JS, quickTasks("alice.w", 200)...)
	require.Eventually(t, func() bool { return len(order.snapshot()) >= 120 }, 120*time.Second, 10*time.Millisecond)
	first := order.snapshot()[40:120] // past the start, while both queue
	a := count(first, "alice.w")
	require.Greater(t, a, 48, "alice at weight 3 got %d of 80 slots", a)
	require.Less(t, a, 76, "bob at weight 1 was starved: alice got %d of 80", a)
}

// TestTenantRunningCap: a tenant's quota may cap its tasks running at once
// on a host (running): bob at 1 never runs two at once on a 3-slot
// worker, while alice, uncapped, uses the other slots meanwhile. The
// control: without the cap bob's tasks fill all three.
func TestTenantRunningCap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running int
		peak    int64
	}{
		{"capped at one", 1, 1},
		{"control: no cap", 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Options{})
			setupTenants(t, b, broker.Tenant{Name: "bob", Quota: messages.TenantQuota{Running: tc.running}}, broker.Tenant{Name: "alice"})
			bobRunner := &countingRunner{inner: insecureRunner(t)}
			startWorker(t, b, "w1", workerOpts{capacity: 3, runner: &byCommand{runners: map[string]*countingRunner{"sleep 0.2": bobRunner}, inner: insecureRunner(t)}})
			order := watchResults(t, b.JS, "bob.capped", "alice.free")
			tasks := make([]messages.Task, 9)
			for i := range tasks {
				tasks[i] = shTask("bob.capped", fmt.Sprintf("t%d", i), "sleep 0.2")
			}
			publish(t, b.JS, tasks...)
			publish(t, b.JS, quickTasks("alice.free", 5)...)
			require.Eventually(t, func() bool { return len(order.snapshot()) == 14 }, 60*time.Second, 10*time.Millisecond)
			require.Equal(t, tc.peak, bobRunner.peak.Load())
		})
	}
}

// byCommand runs a task with the runner its command's last argument names
// (each test batch runs its own command), else with inner.
type byCommand struct {
	runners map[string]*countingRunner
	inner   worker.Runner
}

func (r *byCommand) Run(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
	if len(s.Argv) > 0 {
		if c, ok := r.runners[s.Argv[len(s.Argv)-1]]; ok {
			return c.Run(ctx, s)
		}
	}
	return r.inner.Run(ctx, s)
}
