package main

import (
	"context"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
)

// globals are shared by every command.
type globals struct {
	// Ctx is cancelled by the first SIGINT/SIGTERM; HardCtx by the second.
	Ctx     context.Context `kong:"-"`
	HardCtx context.Context `kong:"-"`
	Log     zerolog.Logger  `kong:"-"`
	IO      stdio           `kong:"-"`
	// Args is the command line (without the program name), for warren-host
	// when the client build hands a command over to it (host_exec.go).
	Args []string `kong:"-"`

	NATS          string        `name:"nats" env:"WARREN_NATS_URL" help:"NATS URL of the broker (e.g. nats://host:4222). Without it, the broker that warren up or warren broker recorded in --data-dir is used while it runs, else client commands start an embedded one in --data-dir. No other local port is ever tried."`
	RetryFor      time.Duration `name:"retry-for" env:"WARREN_RETRY_FOR" default:"2m" help:"How long a client command keeps retrying while the broker is unavailable (restarting, reconnecting, electing a stream leader) before it gives up; publications are retried with the same message id, so nothing is queued twice."`
	DataDir       string        `name:"data-dir" env:"WARREN_DATA_DIR" help:"Directory for the embedded broker's store." default:"${default_data_dir}"`
	PoolKeys      []string      `name:"pool-key" env:"WARREN_POOL_KEY" sep:"," help:"Public key (X...) task secrets are sealed to, or POOL=X... for one pool (repeatable; warren keys show prints it). Defaults to the key the pool's workers publish in the host registry, pinned on first use in --data-dir's pinned-pool-keys.json (per broker): a host publishing another key then makes the command refuse, until 'warren keys pin' pins the new one."`
	InboxPrefixes []string      `name:"inbox-prefix" env:"WARREN_INBOX_PREFIX" sep:"," help:"Subject prefixes a task's reply may use besides its batch's events (repeatable). Defaults to _INBOX.; keep clients and workers the same."`
	LogLevel      string        `name:"log-level" env:"WARREN_LOG_LEVEL" help:"debug, info, warn or error." default:"info" enum:"debug,info,warn,error"`
	Creds         string        `name:"creds" env:"WARREN_CREDS" help:"Credentials file from 'warren auth' (admin.creds, worker.creds, TENANT.creds) for an authenticated broker." type:"path"`
	TLSCA         string        `name:"tls-ca" env:"WARREN_TLS_CA" help:"PEM file of the CA the broker's TLS certificate must chain to (e.g. AUTH_DIR/tls/ca.pem); the connection then requires TLS." type:"path"`

	creds *broker.Creds // loaded from Creds on first use
}

// cli is the command tree: the globals and every command, in the order
// `warren --help` lists them. Each command is the one field of a struct of
// its own, its entry (below), so that a command line naming it is parsed
// against the globals and that entry only (grammar). The same tree is
// both builds': the client build's up, broker, worker and doctor take the
// same flags and hand the command to warren-host (host_exec.go).
type cli struct {
	globals

	upEntry
	brokerEntry
	workerEntry
	setupEntry

	submitEntry
	resultsEntry
	cancelEntry
	replayEntry
	hostsEntry
	execEntry
	verifyEntry

	keysEntry

	sandboxEntry
	doctorEntry

	authEntry
}

// The entries of the command tree. A command's name is its field's, in
// lower case; its help is the summary `warren --help` lists.
type (
	upEntry struct {
		Up upCmd `cmd:"" help:"Run an embedded broker and a worker in one process: Warren on one machine, no setup."`
	}
	brokerEntry struct {
		Broker brokerCmd `cmd:"" help:"Run an embedded NATS broker with JetStream that workers and clients connect to."`
	}
	workerEntry struct {
		Worker workerCmd `cmd:"" help:"Run a worker: pull tasks for free sandbox slots and run them."`
	}
	setupEntry struct {
		Setup setupCmd `cmd:"" help:"(admin) Create or update Warren's streams and buckets: replicas, limits; prints each change."`
	}
	submitEntry struct {
		Submit submitCmd `cmd:"" help:"Publish a JSONL batch of tasks exactly once; prints the batch id."`
	}
	resultsEntry struct {
		Results resultsCmd `cmd:"" help:"Print a batch's results as JSONL (one object per task), waiting for all of them."`
	}
	cancelEntry struct {
		Cancel cancelCmd `cmd:"" help:"Cancel a batch, or one task of it."`
	}
	replayEntry struct {
		Replay replayCmd `cmd:"" help:"Replay a batch, or a sequence/time range of it, as a new attempt."`
	}
	hostsEntry struct {
		Hosts hostsCmd `cmd:"" help:"List the worker hosts in the registry."`
	}
	execEntry struct {
		Exec execCmd `cmd:"" help:"Run one command somewhere in the fleet, streaming its output; exits with its status."`
	}
	verifyEntry struct {
		Verify verifyCmd `cmd:"" help:"Check a batch of proofs in sandboxes and report verdicts (exit 1 only if some could not be checked)."`
	}
	keysEntry struct {
		Keys keysCmd `cmd:"" help:"Create or show a pool's key for sealed task secrets; pin the key a client seals to."`
	}
	sandboxEntry struct {
		Sandbox sandboxCmd `cmd:"" help:"${sandbox_help}"`
	}
	doctorEntry struct {
		Doctor doctorCmd `cmd:"" help:"Launch a probe sandbox and report what isolation this host supports, and how to fix what is missing."`
	}
	authEntry struct {
		Auth authCmd `cmd:"" help:"Keys, credentials and the broker's auth configuration: init, add-submitter, ls, revoke."`
	}
)

// commands are the entries by command name: the tree a command line
// naming one is parsed against, and whether it runs on one P (oneProc).
// TestCommandsAreTheCLIs keeps it and cli the same commands.
var commands = map[string]command{
	"up":      {tree: narrow[upEntry]},
	"broker":  {tree: narrow[brokerEntry]},
	"worker":  {tree: narrow[workerEntry]},
	"setup":   {tree: narrow[setupEntry]},
	"submit":  {tree: narrow[submitEntry]},
	"results": {tree: narrow[resultsEntry]},
	"cancel":  {tree: narrow[cancelEntry]},
	"replay":  {tree: narrow[replayEntry]},
	"hosts":   {tree: narrow[hostsEntry]},
	"exec":    {tree: narrow[execEntry], oneProc: true},
	"verify":  {tree: narrow[verifyEntry]},
	"keys":    {tree: narrow[keysEntry]},
	"sandbox": {tree: narrow[sandboxEntry], oneProc: true},
	"doctor":  {tree: narrow[doctorEntry]},
	"auth":    {tree: narrow[authEntry]},
}

type command struct {
	// tree makes the command's narrowed tree: the globals and its entry.
	tree func() (any, *globals)
	// oneProc marks a command whose start-up and exit are its latency
	// (see oneProc).
	oneProc bool
}

// narrowed is the tree of the globals and one command's entry E.
type narrowed[E any] struct {
	globals
	Entry E `embed:""`
}

func narrow[E any]() (any, *globals) {
	n := &narrowed[E]{}
	return n, &n.globals
}

// grammar is the command tree args are parsed against and its globals:
// when args start with a command, the globals and that command only. Kong
// builds its model of a tree (tags parsed, variables interpolated, every
// field visited) on each start; for the whole cli that is a large part
// of a client command's start (docs/benchmarks.md), and every command
// pays it: a `warren exec` or `warren sandbox run`, whose start-up is
// their latency, most of all. A command is parsed the same in both trees
// (TestNarrowGrammarParsesAsTheWholeCLI); anything else (flags before the
// command, --help alone, a typo) gets the whole tree and its messages.
func grammar(args []string) (any, *globals) {
	if len(args) > 0 {
		if cmd, ok := commands[args[0]]; ok {
			return cmd.tree()
		}
	}
	c := &cli{}
	return c, &c.globals
}

// oneProc reports whether args run a command marked oneProc: one whose
// start-up and exit are its latency (`warren exec`, `warren sandbox ...`)
// and whose work is waiting on the broker or a sandbox. It runs on one P:
// each P caches a span of its own per size class, so a second P has the
// process touch more fresh heap pages (each a page fault, dearer in a VM,
// and the exit frees them again; docs/benchmarks.md). An
// explicit GOMAXPROCS in the environment is kept. Its main goroutine's
// stack is sized once, at the start (presizeStack).
func oneProc(args []string) bool {
	if len(args) == 0 || os.Getenv("GOMAXPROCS") != "" {
		return false
	}
	return commands[args[0]].oneProc
}
