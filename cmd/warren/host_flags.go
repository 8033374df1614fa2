package main

import (
	"time"

	"github.com/nats-io/nkeys"
)

// The commands warren-host runs in-process (up, broker, worker, doctor):
// their flags are defined once, here, for both builds of cmd/warren, so
// `warren up --help` from the client binary prints what warren-host's
// does. Their Run methods are in the host build (up_cmd.go, broker_cmd.go,
// worker_cmd.go, doctor_cmd.go); the client build's (host_exec.go) replace
// the process with warren-host.

// brokerFlags configure the embedded broker; shared by `broker` and `up`.
type brokerFlags struct {
	Listen         string `help:"Address the broker listens on (host:port). Anything but loopback needs --auth-dir and TLS (see --insecure-no-auth)." default:"127.0.0.1:4222"`
	AuthDir        string `name:"auth-dir" help:"Enforce the accounts, users and permissions of this directory (from 'warren auth init'), reloading it when it changes; serves TLS if it was made with --tls." type:"path"`
	TLSCert        string `name:"tls-cert" help:"Serve TLS with this PEM certificate (chain) instead of the auth directory's." type:"path"`
	TLSKey         string `name:"tls-key" help:"PEM private key of --tls-cert." type:"path"`
	InsecureNoAuth bool   `name:"insecure-no-auth" help:"Listen beyond loopback without authentication or TLS: anyone who reaches the port can run code on every worker. Only on a network you trust completely."`
	// A cluster node: see deploy/README.md.
	Name          string   `name:"name" env:"WARREN_BROKER_NAME" help:"Server name, unique in a cluster (default: warren)."`
	Cluster       string   `name:"cluster" env:"WARREN_CLUSTER" help:"Join a JetStream cluster of this name (with --cluster-listen and --routes)."`
	ClusterListen string   `name:"cluster-listen" env:"WARREN_CLUSTER_LISTEN" help:"Address the cluster (route) listener binds, e.g. 0.0.0.0:6222." default:"0.0.0.0:6222"`
	Routes        []string `name:"routes" env:"WARREN_ROUTES" help:"Route URLs of the cluster's nodes (this one may be listed), e.g. nats-route://broker-1:6222. Repeatable or comma separated."`
}

type brokerCmd struct {
	brokerFlags
}

type upCmd struct {
	brokerFlags
	workerFlags
}

// workerFlags configure a worker; shared by `worker` and `up`.
type workerFlags struct {
	Capacity            int           `help:"Sandbox slots: the most tasks this host runs at once. 0 means one per CPU." default:"0"`
	Disk                string        `help:"Disk limit of each task's home (a tmpfs: held in memory), also the most a task's limits.disk_bytes may ask; 'unbounded' leaves homes on the host's disk. --capacity × --disk must fit the host's memory and swap." default:"1G" placeholder:"SIZE"`
	MaxMemory           string        `name:"max-memory" help:"Largest limits.memory_bytes a task may ask for (e.g. 8G); a task above it is refused at submit. Default: half the host's RAM." placeholder:"SIZE"`
	MaxTime             time.Duration `name:"max-time" help:"Longest wall and CPU time a task may ask for (limits.wall_timeout_ms, cpu_time_ms). Default: 24h."`
	MaxProcesses        int64         `name:"max-processes" help:"Largest limits.processes a task may ask for. Default: 4096."`
	Pool                string        `help:"Worker pool to serve." default:"default"`
	Profiles            []string      `name:"profile" help:"Exec profiles served (repeatable)." default:"default"`
	UnixSocketProfiles  []string      `name:"unix-socket-profile" help:"Exec profile (one of --profile, repeatable) whose tasks and sandboxes may create AF_UNIX sockets, for programs serving a unix socket in their own home. Needs namespace or layered isolation. Default: none (socket(AF_UNIX) refused)."`
	Isolation           string        `help:"Sandbox mode: auto (strongest available, refuse if none), namespace, landlock, or none (needs --insecure-no-isolation)." enum:"auto,namespace,landlock,none" default:"auto"`
	InsecureNoIsolation bool          `name:"insecure-no-isolation" help:"Allow --isolation=none: tasks run WITHOUT a sandbox (timeouts, process-group kill, output caps and a cleared environment only). Never for untrusted code."`
	HostID              string        `name:"host-id" help:"Name of this host in results and the registry (default: hostname-pid)."`
	VerifyProfiles      string        `name:"verify-profiles" help:"Verify profiles file (see deploy/profiles.yaml). Defaults to the built-in coq profiles. Profiles whose checker is not installed are not offered." type:"path"`
	SealKey             string        `name:"seal-key" env:"WARREN_SEAL_KEY" help:"The pool's seed file (warren keys init) that opens tasks' sealed secrets. For warren up --auth-dir DIR it defaults to DIR/pool-POOL.xkey when that file exists; otherwise, without it, a task with secrets gets a secrets_unavailable result." type:"path"`
	MetricsListen       string        `name:"metrics-listen" help:"Serve Prometheus metrics (/metrics) and health checks (/healthz, /readyz) on this host:port, e.g. 127.0.0.1:9464. Off by default."`
	NoVerdictCache      bool          `name:"no-verdict-cache" help:"Check every proof, never answering one from the shared verdict cache (bucket warren_verdicts)."`
	DrainTimeout        time.Duration `name:"drain-timeout" help:"On the first SIGTERM/SIGINT, how long running tasks may finish before they are cancelled and handed back to the queue." default:"5m"`
	sandboxHostFlags
	sessionFlags

	//lint:ignore U1000 the client build has no host to read it
	pullWait time.Duration // shorter for a client's short-lived in-process worker
	//lint:ignore U1000 the client build has no host to read it
	sealKey nkeys.KeyPair // used when SealKey (a file) is not given
}

type workerCmd struct {
	workerFlags
}

// sessionFlags configure the sandbox sessions a worker serves.
type sessionFlags struct {
	SessionRoot    string        `name:"session-root" help:"Directory for sandbox session homes (default: $TMPDIR/warren-sessions)." type:"path"`
	SessionKeyFile string        `name:"session-key-file" help:"Hex key (at least 32 bytes: openssl rand -hex 32) that signs sandbox tokens; default: a random key per start. Changing it invalidates every token." type:"path"`
	SessionIdle    time.Duration `name:"session-idle" help:"Default idle timeout of a sandbox." default:"10m"`
	SessionTTL     time.Duration `name:"session-ttl" help:"Default lifetime of a sandbox." default:"1h"`
	SessionMaxTTL  time.Duration `name:"session-max-ttl" help:"Longest lifetime a create may ask for." default:"24h"`
	SessionAgent   string        `name:"session-agent" env:"WARREN_SESSION_AGENT" help:"The sandbox session agent binary (static; make build puts it next to warren). Default: warren-sandbox-agent next to the warren binary." type:"path"`
}

// doctorCmd launches a probe sandbox and reports what this host supports;
// with a broker named (--nats, WARREN_NATS_URL, or the one `warren up`
// recorded), also the broker side: TLS, auth, JetStream, cluster size,
// and each stream's replicas and compatibility.
type doctorCmd struct {
	sandboxHostFlags
	Disk string `help:"The disk limit the host's worker runs tasks with (its --disk): the probe sandboxes run with it, so a mode that cannot enforce it is not reported usable." default:"1G" placeholder:"SIZE"`
}
