package worker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// A slot is free once its sandbox is done: the next task runs while the
// last one's result is still being stored. As many tasks as there are
// slots may be storing at once; past that a finished run keeps its slot,
// so a broker slow to store holds the next runs back.
func TestSlotTakesTheNextTaskWhileAResultIsStored(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	started := make(chan string, 8)
	storing := make(chan string, 8)
	release := make(chan struct{})
	counting := &countingRunner{inner: insecureRunner(t)}
	startWorker(t, b, "w1", workerOpts{capacity: 1, runner: counting, started: started,
		beforeStore: func(r *messages.Result) {
			storing <- r.TaskID
			<-release
		}})
	// Runs before the worker's Stop: a failing test does not leave a store held.
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	publish(t, b.JS, execTask("rel", "a", "/bin/true"))

	next := func(ch <-chan string, what string) string {
		t.Helper()
		select {
		case id := <-ch:
			return id
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10 s", what)
			return ""
		}
	}
	require.Equal(t, "a", next(started, "start"))
	require.Equal(t, "a", next(storing, "store")) // a's store is held
	publish(t, b.JS, execTask("rel", "b", "/bin/true"), execTask("rel", "c", "/bin/true"))
	// b runs on the slot a's sandbox left, a's result not yet stored.
	require.Equal(t, "b", next(started, "start of the next task while a result is stored"))
	// b's run ends, but a holds the one finishing place: b keeps its slot
	// and c does not start.
	require.Eventually(t, func() bool { return counting.calls.Load() >= 2 && counting.running.Load() == 0 },
		10*time.Second, 5*time.Millisecond)
	select {
	case id := <-started:
		t.Fatalf("%s started while two results waited to be stored on a one-slot worker", id)
	case id := <-storing:
		t.Fatalf("%s was stored before a's store finished", id)
	case <-time.After(300 * time.Millisecond):
	}

	once.Do(func() { close(release) })
	res := collect(t, b.JS, "rel", 3, 10*time.Second)
	for _, id := range []string{"a", "b", "c"} {
		require.Equal(t, messages.StatusOK, res[id].Status, id)
	}
	require.Equal(t, "c", next(started, "start"))
	require.EqualValues(t, 1, counting.peak.Load(), "never more sandboxes than slots")
}
