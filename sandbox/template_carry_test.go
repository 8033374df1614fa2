package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// carryProbe prints, one "name: value" line each, what a task can find
// of an earlier task on its template: files in its home, /tmp and /dev/shm,
// SysV IPC objects, other processes, an abstract unix socket, an
// environment variable, its open-files rlimit, its seccomp filters and
// its mounts.
const carryProbe = `
import ctypes, os, socket
def exists(p): return "found" if os.path.exists(p) else "none"
print("home:", exists(os.environ["HOME"] + "/trace"))
print("tmp:", exists("/tmp/trace"))
print("shm:", exists("/dev/shm/trace"))
print("ipc:", sum(len(open("/proc/sysvipc/" + k).readlines()) - 1 for k in ("shm", "msg", "sem")))
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
print("processes:", len(others))
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0warren-carry"); print("abstract: found")
except OSError:
    print("abstract: none")
print("env:", os.environ.get("CARRY", "none"))
print("nofile:", [l.split()[3] for l in open("/proc/self/limits") if l.startswith("Max open files")][0])
print("filters:", [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp_filters")][0])
print("mounts:", len(open("/proc/self/mountinfo").readlines()))
`

// carryLeave leaves every trace carryProbe looks for (a daemon holds the
// abstract socket), refused keyring calls aside, then probes: the control
// that the probe sees traces when they are there.
const carryLeave = `
import ctypes, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
for p in (os.environ["HOME"] + "/trace", "/tmp/trace", "/dev/shm/trace"):
    open(p, "w").write("x")
IPC_CREAT = 0o1000
assert libc.shmget(0x5741, 4096, IPC_CREAT | 0o600) >= 0
assert libc.msgget(0x5741, IPC_CREAT | 0o600) >= 0
assert libc.semget(0x5741, 1, IPC_CREAT | 0o600) >= 0
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        s = socket.socket(socket.AF_UNIX); s.bind("\0warren-carry"); s.listen()
        os.write(w, b"x")
        time.sleep(1000)
    os._exit(0)
os.close(w)
assert os.read(r, 1) == b"x", "the daemon holds the socket"
# add_key(2) into the user keyring, which a template's user namespace keeps.
ADD_KEY = 248
k = libc.syscall(ADD_KEY, b"user", b"warren-carry", b"x", 1, -4)
print("add_key:", "refused" if k < 0 else "added")
exec(open(sys.argv[1]).read())
`

// TestTemplateCarriesNothingOver: a task leaves traces of every kind its
// template could keep (and sees them itself: the control); the next task on
// the same template finds none, with its own rlimits, environment, seccomp
// state and cgroup counters. Peak memory and OOM kills are the task's
// own, not the template's so far.
func TestTemplateCarriesNothingOver(t *testing.T) {
	r := templateRunner(t, 1)
	// Unix sockets allowed (the seccomp layer refuses AF_UNIX otherwise):
	// a view of its own, whose pool the first run creates.
	view := Spec{UnixSockets: true}
	runIn(t, r, Spec{Argv: sh(`true`), UnixSockets: true})
	parent := waitTemplatesFor(t, r, view, 1)
	waitTemplates := func(*testing.T, *Runner, int) []int { return waitTemplatesFor(t, r, view, 1) }
	files := map[string][]byte{"probe.py": []byte(carryProbe)}
	leave := runIn(t, r, Spec{
		Argv:  []string{python, "-c", carryLeave + "\nbytearray(160 << 20)\n", "probe.py"},
		Files: files, Env: map[string]string{"CARRY": "1"}, Limits: Limits{OpenFiles: 99}, UnixSockets: true,
	})
	require.Equal(t, 0, leave.res.ExitCode, leave.stderr)
	require.Equal(t, parent, waitTemplates(t, r, 1), "the first task ran in the template, which serves again")
	got := probeLines(t, leave.stdout)
	require.Equal(t, "refused", got["add_key"], "keyring calls are refused by the seccomp layer")
	require.Equal(t, map[string]string{"home": "found", "tmp": "found", "shm": "found", "ipc": "3", "abstract": "found", "env": "1", "nofile": "99"},
		pick(got, "home", "tmp", "shm", "ipc", "abstract", "env", "nofile"), "control: the probe sees the traces")
	require.NotEqual(t, "0", got["processes"], "control: the daemon is seen")
	require.Greater(t, leave.res.PeakMemory, int64(150<<20), "the first task's peak")

	next := runIn(t, r, Spec{Argv: []string{python, "probe.py"}, Files: files, UnixSockets: true})
	require.Equal(t, 0, next.res.ExitCode, next.stderr)
	require.Equal(t, parent, waitTemplates(t, r, 1), "the same template ran the next task")
	again := probeLines(t, next.stdout)
	require.Equal(t, map[string]string{"home": "none", "tmp": "none", "shm": "none", "ipc": "0", "processes": "0", "abstract": "none", "env": "none"},
		pick(again, "home", "tmp", "shm", "ipc", "processes", "abstract", "env"), "nothing of the first task is left")
	require.NotEqual(t, "99", again["nofile"], "its own open-files limit")
	require.Equal(t, got["filters"], again["filters"], "seccomp filters do not pile up")
	require.Equal(t, got["mounts"], again["mounts"], "the same mounts")
	require.Less(t, next.res.PeakMemory, int64(100<<20), "its own peak, not the template's")

	if r.cgroups.Version == 0 {
		t.Logf("no cgroup here (%s): memory is RLIMIT_AS, no OOM kill to count", r.cgroups.Why)
		return
	}
	oom := runIn(t, r, Spec{Argv: py(`bytearray(400 << 20)`), Limits: Limits{Memory: 128 << 20}, UnixSockets: true})
	require.GreaterOrEqual(t, oom.res.OOMKills, 1, "control: the OOM kill is counted")
	require.Equal(t, parent, waitTemplates(t, r, 1), "an OOM-killed task leaves the template serving")
	after := runIn(t, r, Spec{Argv: sh(`true`), UnixSockets: true})
	require.Equal(t, 0, after.res.OOMKills, "the OOM kill was the earlier task's")
	require.Equal(t, parent, waitTemplates(t, r, 1))
}

func probeLines(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		require.True(t, ok, "probe line %q", l)
		m[k] = v
	}
	return m
}

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}
