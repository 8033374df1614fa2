package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/warrenhq/warren/broker"
)

// workerFlags configure a worker; shared by `worker` and `up`.
type workerFlags struct {
	Capacity            int           `help:"Sandbox slots: the most tasks this host runs at once. 0 means one per CPU." default:"0"`
	Disk                string        `help:"Disk limit of each task's home (a tmpfs: held in memory), also the most a task's limits.disk_bytes may ask; 'unbounded' leaves homes on the host's disk. --capacity × --disk must fit the host's memory and swap." default:"1G" placeholder:"SIZE"`
	Pool                string        `help:"Worker pool to serve." default:"default"`
	Profiles            []string      `name:"profile" help:"Exec profiles served (repeatable)." default:"default"`
	UnixSocketProfiles  []string      `name:"unix-socket-profile" help:"Exec profile (one of --profile, repeatable) whose tasks and sandboxes may create AF_UNIX sockets, for programs serving a unix socket in their own home. Needs namespace or layered isolation. Default: none (socket(AF_UNIX) refused)."`
	Isolation           string        `help:"Sandbox mode: auto (strongest available, refuse if none), namespace, landlock, or none (needs --insecure-no-isolation)." enum:"auto,namespace,landlock,none" default:"auto"`
	InsecureNoIsolation bool          `name:"insecure-no-isolation" help:"Allow --isolation=none: tasks run WITHOUT a sandbox (timeouts, process-group kill, output caps and a cleared environment only). Never for untrusted code."`
	HostID              string        `name:"host-id" help:"Name of this host in results and the registry (default: hostname-pid)."`
	VerifyProfiles      string        `name:"verify-profiles" help:"Verify profiles file (see deploy/profiles.yaml). Defaults to the built-in coq profiles. Profiles whose checker is not installed are not offered." type:"path"`
	SealKey             string        `name:"seal-key" env:"WARREN_SEAL_KEY" help:"The pool's seed file (warren keys init) that opens tasks' sealed secrets. Without it, a task with secrets gets a secrets_unavailable result." type:"path"`
	MetricsListen       string        `name:"metrics-listen" help:"Serve Prometheus metrics (/metrics) and health checks (/healthz, /readyz) on this host:port, e.g. 127.0.0.1:9464. Off by default."`
	NoVerdictCache      bool          `name:"no-verdict-cache" help:"Check every proof, never answering one from the shared verdict cache (bucket warren_verdicts)."`
	DrainTimeout        time.Duration `name:"drain-timeout" help:"On the first SIGTERM/SIGINT, how long running tasks may finish before they are cancelled and handed back to the queue." default:"5m"`
	sandboxHostFlags
	sessionFlags

	pullWait time.Duration // shorter for a client's short-lived in-process worker
	sealKey  nkeys.KeyPair // used when SealKey (a file) is not given
}

// dialedLink is `warren worker`'s link: a remote broker, dialed at Start.
type dialedLink struct {
	g    *globals
	url  string
	rec  *brokerRecord
	sess *session
}

func (l *dialedLink) open(ctx context.Context) (*nats.Conn, error) {
	sess, err := l.g.dialChecked(ctx, l.url, "warren-worker", l.rec)
	if err != nil {
		return nil, err
	}
	l.sess = sess
	return sess.NC, nil
}

func (l *dialedLink) close() { l.sess.Close() }

type workerCmd struct {
	workerFlags
}

func (c *workerCmd) Run(g *globals) error {
	url, rec, err := g.target()
	if err != nil {
		return err
	}
	if url == "" {
		return fmt.Errorf("no broker to serve: pass --nats URL (or set WARREN_NATS_URL), or start `warren broker` with this --data-dir (%s)", g.DataDir)
	}
	if c, err := g.loadCreds(); err != nil {
		return err
	} else if c != nil && c.Role != broker.RoleWorker && c.Role != broker.RoleAdmin {
		return fmt.Errorf("--creds %s are %s credentials; a worker needs a worker's (AUTH_DIR/%s)", g.Creds, c.Role, broker.WorkerCreds)
	}
	h, err := newHost(g, c.workerFlags, &dialedLink{g: g, url: url, rec: rec})
	if err != nil {
		return err
	}
	return h.serve(g, nil)
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"
