// Command warren is Warren's command line: broker, worker, scheduler
// client, sandbox runner and doctor. See `warren --help`.
//
// It builds two binaries. `go build -tags client` is warren, the client
// users run: it links no embedded broker, worker, Prometheus or checkers,
// so it starts fast, and hands the commands that need them (up, broker,
// worker, doctor, and any client command when no broker runs) to
// warren-host by exec (host_exec.go). Without the tag it is warren-host,
// every command in-process.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/sandbox"
)

func main() {
	// A sandbox init re-execs this binary; it must take over before
	// anything else runs.
	sandbox.MaybeInit()
	if oneProc(os.Args[1:]) {
		runtime.GOMAXPROCS(1)
		presizeStack()
	}
	soft, cancelSoft := context.WithCancel(context.Background())
	hard, cancelHard := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		cancelSoft() // first signal: stop taking work, finish what runs
		<-sigs
		cancelHard() // second signal: cancel running work
	}()
	err := run(soft, hard, os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	cancelSoft()
	cancelHard()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode maps run's error to a process exit status, printing it unless
// the command already reported it.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return ec.Code
	}
	fmt.Fprintf(stderr, "warren: %v\n", err)
	return 1
}

type stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

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

// cli is the command tree.
type cli struct {
	globals

	Up     upCmd     `cmd:"" help:"Run an embedded broker and a worker in one process: Warren on one machine, no setup."`
	Broker brokerCmd `cmd:"" help:"Run an embedded NATS broker with JetStream that workers and clients connect to."`
	Worker workerCmd `cmd:"" help:"Run a worker: pull tasks for free sandbox slots and run them."`
	Setup  setupCmd  `cmd:"" help:"(admin) Create or update Warren's streams and buckets: replicas, limits; prints each change."`

	Submit  submitCmd  `cmd:"" help:"Publish a JSONL batch of tasks exactly once; prints the batch id."`
	Results resultsCmd `cmd:"" help:"Print a batch's results as JSONL (one object per task), waiting for all of them."`
	Cancel  cancelCmd  `cmd:"" help:"Cancel a batch, or one task of it."`
	Replay  replayCmd  `cmd:"" help:"Replay a batch, or a sequence/time range of it, as a new attempt."`
	Hosts   hostsCmd   `cmd:"" help:"List the worker hosts in the registry."`
	Exec    execCmd    `cmd:"" oneproc:"" help:"Run one command somewhere in the fleet, streaming its output; exits with its status."`
	Verify  verifyCmd  `cmd:"" help:"Check a batch of proofs in sandboxes and report verdicts (exit 1 only if some could not be checked)."`

	Keys keysCmd `cmd:"" help:"Create or show a pool's key for sealed task secrets; pin the key a client seals to."`

	Sandbox sandboxCmd `cmd:"" oneproc:"" help:"${sandbox_help}"`
	Doctor  doctorCmd  `cmd:"" help:"Launch a probe sandbox and report what isolation this host supports, and how to fix what is missing."`

	Auth authCmd `cmd:"" help:"Keys, credentials and the broker's auth configuration: init, add-submitter, ls, revoke."`
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
		if f, ok := commandField(args[0]); ok {
			// The globals as a named field kong flattens (embed): reflect
			// cannot make a struct embedding an unexported type.
			g := reflect.StructField{Name: "Globals", Type: reflect.TypeOf(globals{}), Tag: `embed:""`}
			t := reflect.StructOf([]reflect.StructField{g, f})
			v := reflect.New(t)
			return v.Interface(), v.Elem().Field(0).Addr().Interface().(*globals)
		}
	}
	c := &cli{}
	return c, &c.globals
}

// oneProc reports whether args run a command tagged oneproc: one whose
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
	f, ok := commandField(args[0])
	if !ok {
		return false
	}
	_, tagged := f.Tag.Lookup("oneproc")
	return tagged
}

// commandField is the field of cli that holds the command named name.
func commandField(name string) (reflect.StructField, bool) {
	t := reflect.TypeOf(cli{})
	for i := range t.NumField() {
		f := t.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); isCmd && commandName(f) == name {
			f.Index, f.Offset = nil, 0
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// commandName is kong's name for a command field: its name tag, else the
// field's name in lower case (every command here is one word).
func commandName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	return strings.ToLower(f.Name)
}

func run(ctx, hard context.Context, args []string, io stdio) error {
	tree, c := grammar(args)
	parser, err := kong.New(tree,
		kong.Name("warren"),
		kong.Description("Warren runs untrusted work in Linux sandboxes across a fleet of hosts, queued on NATS JetStream."),
		kong.UsageOnError(),
		kong.Vars{"default_data_dir": defaultDataDir(), "sandbox_help": "Run one command in a sandbox, like bwrap; or create, use and end long-lived sandboxes on the fleet."},
		kong.Writers(io.Out, io.Err),
		kong.Exit(func(code int) { panic(kongExit(code)) }),
	)
	if err != nil {
		return err
	}
	kctx, err := parseArgs(parser, args)
	if err != nil {
		return err
	}
	if kctx == nil { // --help
		return nil
	}
	c.Ctx, c.HardCtx, c.IO, c.Args = ctx, hard, io, args
	c.Log = newLogger(io.Err, c.LogLevel)
	if !isOffline(kctx) {
		if err := c.hostIfNoBroker(); err != nil {
			return err
		}
	}
	return c.unavailableHint(kctx.Run(c))
}

// offline is a command that never reaches a broker, so the client build
// runs it even when no broker runs (see hostIfNoBroker). A command not
// marked reaching none only costs that build an exec of warren-host.
type offline interface{ offline() }

func isOffline(kctx *kong.Context) bool {
	sel := kctx.Selected()
	if sel == nil || !sel.Target.CanAddr() {
		return false
	}
	_, ok := sel.Target.Addr().Interface().(offline)
	return ok
}

func (*sandboxRunCmd) offline() {}
func (*authInitCmd) offline()   {}
func (*authAddCmd) offline()    {}
func (*authWorkerCmd) offline() {}
func (*authLsCmd) offline()     {}
func (*authRevokeCmd) offline() {}
func (*keysInitCmd) offline()   {}
func (*keysShowCmd) offline()   {}

// kongExit carries kong's requested exit (after --help) out of Parse.
type kongExit int

func parseArgs(p *kong.Kong, args []string) (kctx *kong.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			kctx = nil
			if code != 0 {
				err = &exitCodeError{Code: int(code)}
			}
		}
	}()
	return p.Parse(args)
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return d + "/warren"
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h + "/.local/state/warren"
	}
	return "/var/lib/warren"
}

// newLogger is human-readable on a terminal and JSON otherwise.
func newLogger(w io.Writer, level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05"}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}
