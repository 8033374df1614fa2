package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/worker"
)

// TestIdleProfilesDoNotHoldSlots: a worker serving several profiles must
// not park its slots in pulls of profiles that have no work. With one slot,
// three idle profiles and a PullWait of an hour, a batch of the busy
// profile completes (a slot parked in an idle profile's pull would stall
// it for the hour; the collect deadline is only a liveness bound); the
// control is the same batch with a single profile. A task that later
// arrives on a profile that was idle is still picked up.
func TestIdleProfilesDoNotHoldSlots(t *testing.T) {
	for _, tc := range []struct {
		name     string
		profiles []string
	}{
		{"single profile (control)", []string{"busy"}},
		{"three idle profiles", []string{"idle-a", "busy", "idle-b", "idle-c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Options{})
			startProfileWorker(t, b, tc.profiles, time.Hour)
			batch := "busy-batch"
			for _, id := range ids(20) {
				publishTo(t, b, "busy", execTask(batch, id, "/bin/true"))
			}
			res := collect(t, b.JS, batch, 20, time.Minute)
			for id, r := range res {
				require.Equal(t, messages.StatusOK, r.Status, id)
			}
		})
	}
	t.Run("a task on a profile that was idle", func(t *testing.T) {
		b := brokertest.Start(t, brokertest.Options{})
		startProfileWorker(t, b, []string{"busy", "quiet"}, 300*time.Millisecond)
		publishTo(t, b, "busy", execTask("first", "a", "/bin/true"))
		collect(t, b.JS, "first", 1, time.Minute)
		publishTo(t, b, "quiet", execTask("later", "b", "/bin/true"))
		res := collect(t, b.JS, "later", 1, time.Minute)
		require.Equal(t, messages.StatusOK, res["b"].Status)
	})
}

func startProfileWorker(t *testing.T, b *brokertest.Broker, profiles []string, pullWait time.Duration) {
	t.Helper()
	startWorker(t, b, "profiles", workerOpts{profiles: profiles, pullWait: pullWait})
}

// publishTo publishes task on profile's subject, as the scheduler does.
func publishTo(t *testing.T, b *brokertest.Broker, profile string, task messages.Task) {
	t.Helper()
	task.Profile = profile
	data, err := json.Marshal(task)
	require.NoError(t, err)
	msg := &nats.Msg{Subject: messages.TaskSubject(messages.DefaultPool, profile, task.Batch), Data: data, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMsgID, messages.MsgID(task.Batch, task.ID, 1))
	msg.Header.Set(messages.HeaderTaskID, task.ID)
	msg.Header.Set(messages.HeaderBatch, task.Batch)
	msg.Header.Set(messages.HeaderAttempt, "1")
	_, err = b.JS.PublishMsg(context.Background(), msg)
	require.NoError(t, err)
}

// TestStopEndsAnIdlePull: a worker serving one profile waits for tasks in
// a long pull that holds its slot; Stop must end that pull at once, not
// wait out PullWait (an hour here: the deadline is only a liveness bound).
func TestStopEndsAnIdlePull(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	nc, _ := b.Dial(t, "idle")
	w, err := worker.New(nc, worker.Config{
		HostID: "idle", Capacity: 1, Runner: insecureRunner(t),
		Isolation: []messages.Isolation{messages.IsolationNone},
		PullWait:  time.Hour,
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	// Control: the pull is parked (the worker runs and took its slot).
	publishTo(t, b, messages.DefaultProfile, execTask("warm", "a", "/bin/true"))
	collect(t, b.JS, "warm", 1, time.Minute)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Stop is still waiting for the idle pull")
	}
}

// TestIdleWorkerParksAPullPerProfile: once no profile has work, a worker
// serving several keeps a waiting pull on each profile's consumer (as
// many as it has free slots), so a one-off task starts without waiting
// out a poll pause, and it parks them again after running one. (The old
// loop only polled, so no pull was ever waiting.)
func TestIdleWorkerParksAPullPerProfile(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	profiles := []string{"park-a", "park-b"}
	startWorker(t, b, "parker", workerOpts{profiles: profiles, pullWait: time.Hour, capacity: 2})
	parked := func() bool {
		for _, p := range profiles {
			cons, err := b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName(messages.DefaultPool, p))
			if err != nil {
				return false
			}
			ci, err := cons.Info(context.Background())
			if err != nil || ci.NumWaiting != 1 {
				return false
			}
		}
		return true
	}
	require.Eventually(t, parked, 30*time.Second, 10*time.Millisecond, "a waiting pull on every idle profile")
	publishTo(t, b, "park-b", execTask("one-off", "x", "/bin/true"))
	require.Equal(t, messages.StatusOK, collect(t, b.JS, "one-off", 1, time.Minute)["x"].Status)
	require.Eventually(t, parked, 30*time.Second, 10*time.Millisecond, "parked again once idle")
}

// TestIdleWorkerHearsATaskOnAProfileWithoutAPull: one slot, two idle
// profiles, so one profile's pull is parked and the other has none (the
// turns last an hour here: only a liveness bound). A task published on
// the profile without a pull starts anyway: its doorbell preempts the
// parked pull and takes the slot. Then the same the other way round, and
// the pulls park again.
func TestIdleWorkerHearsATaskOnAProfileWithoutAPull(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	profiles := []string{"bell-a", "bell-b"}
	startWorker(t, b, "bell", workerOpts{profiles: profiles, pullWait: time.Hour, capacity: 1, rotateWait: time.Hour})
	waiting := func(p string) int {
		cons, err := b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName(messages.DefaultPool, p))
		if err != nil {
			return -1
		}
		ci, err := cons.Info(context.Background())
		if err != nil {
			return -1
		}
		return ci.NumWaiting
	}
	// unparked is the profile without a waiting pull, once one is parked.
	unparked := func() string {
		var p string
		require.Eventually(t, func() bool {
			a, b := waiting(profiles[0]), waiting(profiles[1])
			switch {
			case a == 1 && b == 0:
				p = profiles[1]
			case a == 0 && b == 1:
				p = profiles[0]
			default:
				return false
			}
			return true
		}, 30*time.Second, 10*time.Millisecond, "one parked pull, the other profile waiting for the slot")
		return p
	}
	for i := range 2 {
		p := unparked()
		batch := fmt.Sprintf("bell-%d", i)
		publishTo(t, b, p, execTask(batch, "x", "/bin/true"))
		require.Equal(t, messages.StatusOK, collect(t, b.JS, batch, 1, time.Minute)["x"].Status, "a task on %s, which had no pull", p)
	}
	unparked()
}
