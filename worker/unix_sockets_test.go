package worker_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/worker"
)

// unixSocketScript serves and connects to a unix socket in the task's own
// home: what a program that needs AF_UNIX (a local database, a language
// server) does.
const unixSocketScript = `import socket
s = socket.socket(socket.AF_UNIX)
s.bind("s.sock")
s.listen(1)
c = socket.socket(socket.AF_UNIX)
c.connect("s.sock")
print("unix ok")
`

// TestUnixSocketProfiles: the operator's opt-in (UnixSocketProfiles) lets
// tasks of that exec profile use a unix socket in their home, through real
// sandboxes; every other profile is refused socket(AF_UNIX), and so is a
// task of the opted-in profile that asks for Landlock-only isolation
// (where the host's pathname sockets would be reachable).
func TestUnixSocketProfiles(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "w1", workerOpts{capacity: 2, runner: sandboxedRunner(t, 0), maxDeliver: 1,
		profiles: []string{"default", "sock"}, unix: []string{"sock"},
		isolation: []messages.Isolation{messages.IsolationAuto}})
	task := func(id, profile string, iso messages.Isolation) messages.Task {
		tk := execTask("unix", id, "python3", "-c", unixSocketScript)
		tk.Profile, tk.Isolation = profile, iso
		return tk
	}
	for _, tk := range []messages.Task{
		task("opted-in", "sock", ""),
		task("default", "default", ""),
		task("opted-in-landlock", "sock", messages.IsolationLandlock),
	} {
		data, err := json.Marshal(tk)
		require.NoError(t, err)
		publishMsg(t, b.JS, messages.TaskSubject(messages.DefaultPool, tk.Profile, tk.Batch), data, map[string]string{"Nats-Msg-Id": tk.Batch + "." + tk.ID})
	}
	got := collect(t, b.JS, "unix", 3, 2*time.Minute)
	r := got["opted-in"]
	require.Equal(t, messages.StatusOK, r.Status, "stderr: %s error: %v", string(r.Stderr), r.Error)
	require.Equal(t, "unix ok\n", string(r.Stdout))
	for _, id := range []string{"default", "opted-in-landlock"} {
		r := got[id]
		require.Equal(t, messages.StatusFailed, r.Status, id)
		require.Contains(t, string(r.Stderr), "Address family not supported", id) // the seccomp filter: EAFNOSUPPORT
		require.NotContains(t, string(r.Stdout), "unix ok", id)
	}
}

// TestUnixSocketProfilesMustBeServed: an opt-in for a profile the worker
// does not serve is a configuration error naming the field.
func TestUnixSocketProfilesMustBeServed(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	nc, _ := b.Dial(t, "w")
	_, err := worker.New(nc, worker.Config{Runner: insecureRunner(t), ExecProfiles: []string{"default"}, UnixSocketProfiles: []string{"sock"}})
	require.ErrorContains(t, err, `worker config: UnixSocketProfiles[0]: "sock" is not one of the exec profiles served`)
}
