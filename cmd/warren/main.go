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
	"runtime"
	"syscall"
	"unicode/utf8"

	"github.com/alecthomas/kong"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
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

func run(ctx, hard context.Context, args []string, io stdio) error {
	if err := checkArgsUTF8(args); err != nil {
		return err
	}
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

// checkArgsUTF8 refuses an argument that is not valid UTF-8 before it is
// parsed: a task's argv and env are JSON text, and the parser and the
// encoder would turn its bytes into U+FFFD, so the command would run with
// other bytes than the ones given. It names the argument as the task
// would (argv[i] after --), never quoting it (it may be a secret).
func checkArgsUTF8(args []string) error {
	cmd := -1 // index of the command's first word, after --
	for i, a := range args {
		if cmd < 0 && a == "--" {
			cmd = i + 1
			continue
		}
		if utf8.ValidString(a) {
			continue
		}
		what := fmt.Sprintf("argument %d", i+1)
		if cmd >= 0 {
			what = fmt.Sprintf("argv[%d]", i-cmd)
		}
		return fmt.Errorf("%s is not valid UTF-8: a task's argv and env are JSON text, which cannot carry these bytes unchanged; "+
			"give binary content as a file (--file) or as --stdin, which take any bytes", what)
	}
	return nil
}

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
