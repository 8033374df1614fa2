package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
	"golang.org/x/sys/unix"
)

// execCmd runs one command somewhere in the fleet with live output and
// exits with its exit status.
type execCmd struct {
	Timeout       time.Duration     `name:"timeout" short:"t" help:"Wall-clock limit of the command (e.g. 30s); 0 takes the worker's default."`
	Isolation     string            `name:"isolation" default:"auto" enum:"auto,namespace,landlock,none" help:"Sandbox mode: auto, namespace, landlock or none (only on workers started with the insecure flag)."`
	Profile       string            `name:"profile" help:"Toolchain profile the command needs; only hosts with it run it."`
	Pool          string            `name:"pool" help:"Worker pool. Defaults to default."`
	Network       string            `name:"network" default:"none" enum:"none,loopback" help:"Network policy: none or loopback."`
	Env           map[string]string `name:"env" short:"e" help:"KEY=VALUE added to the command's environment (repeatable)."`
	Secrets       []string          `name:"secret" help:"NAME: pass your environment variable NAME to the command as a secret: sealed to the pool's key, masked in its output (repeatable)."`
	Stdin         bool              `name:"stdin" help:"Read standard input fully and give it to the command (any bytes, up to 1 GiB: a large one goes through the inputs object store)."`
	Files         []string          `name:"file" short:"f" help:"LOCAL or DEST=LOCAL: put a local file (any bytes, e.g. a static tool) in the command's home as DEST, by default its base name (repeatable). Files are written mode 0644: chmod +x one to run it. Up to 1 GiB each: large ones go through the inputs object store." placeholder:"[DEST=]LOCAL"`
	QueueUnserved bool              `name:"queue-unserved" help:"Queue the command and wait even when no live worker serves its pool/profile; without it, exec fails at once naming what is served."`
	Cmd           []string          `arg:"" passthrough:"partial" help:"Command and arguments; put -- before them when they start with a dash."`
}

func (c *execCmd) Run(g *globals) error {
	argv := c.Cmd
	if len(argv) > 0 && argv[0] == "--" { // kong keeps the separator for a passthrough argument
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return errors.New("exec: no command given; usage: warren exec [flags] -- CMD [ARGS...]")
	}
	task := messages.Task{
		Kind: messages.KindExec, Argv: argv, Env: c.Env, Pool: c.Pool, Profile: c.Profile,
		Isolation: messages.Isolation(c.Isolation), Network: messages.Network(c.Network),
		Limits: messages.Limits{WallTimeoutMS: c.Timeout.Milliseconds()},
	}
	for _, name := range c.Secrets {
		v, ok := os.LookupEnv(name)
		if !ok {
			return fmt.Errorf("--secret %s: no such variable in your environment; export it first (values are never taken from the command line, where other users can read them)", name)
		}
		if task.Secrets == nil {
			task.Secrets = map[string]string{}
		}
		task.Secrets[name] = v
	}
	if err := c.addFiles(&task); err != nil {
		return err
	}
	if c.Stdin {
		data, err := io.ReadAll(io.LimitReader(g.IO.In, messages.MaxInputObjectBytes+1))
		if err != nil {
			return err
		}
		if len(data) > messages.MaxInputObjectBytes {
			return fmt.Errorf("--stdin: input exceeds %d bytes; ship it in a session (warren sandbox cp) instead", messages.MaxInputObjectBytes)
		}
		task.Stdin = data
	}
	s, client, err := g.client("warren-exec", true)
	if err != nil {
		return err
	}
	defer s.Close()
	// The registry check runs while Exec subscribes (nothing is published
	// before it passes).
	served := scheduler.BeforePublish(func(context.Context) error {
		return checkServed(g, s, client, []messages.Task{task}, c.QueueUnserved)
	})
	res, err := client.Exec(g.Ctx, task, g.IO.Out, g.IO.Err, served)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(g.IO.Err, "warren: interrupted; the task was cancelled")
		return &exitCodeError{Code: exitCancelled}
	}
	if err != nil {
		return err
	}
	code, msg := execExit(res)
	if msg != "" {
		fmt.Fprintln(g.IO.Err, "warren: "+msg)
	}
	if code != 0 {
		return &exitCodeError{Code: code}
	}
	return nil
}

// addFiles reads each --file into the task's files.
func (c *execCmd) addFiles(task *messages.Task) error {
	for _, f := range c.Files {
		dest, local, ok := strings.Cut(f, "=")
		if !ok {
			dest, local = filepath.Base(f), f
		}
		data, err := readLimited(local, messages.MaxInputObjectBytes)
		if err != nil {
			return fmt.Errorf("--file %s: %w", f, err)
		}
		if task.Files == nil {
			task.Files = map[string]messages.Bytes{}
		}
		if _, dup := task.Files[dest]; dup {
			return fmt.Errorf("--file %s: %s is given twice; name it with DEST=LOCAL", f, dest)
		}
		task.Files[dest] = data
	}
	return nil
}

// readLimited reads a regular file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("over %d bytes, more than a task input takes; ship it in a session (warren sandbox cp) instead", limit)
	}
	return data, nil
}

// execExit maps a result to the process exit status and, for outcomes that
// are not a plain exit, a line saying what happened.
func execExit(r *messages.Result) (int, string) {
	where := ""
	if r.Host != "" {
		where = " on " + r.Host
	}
	switch r.Status {
	case messages.StatusOK:
		return 0, ""
	case messages.StatusFailed:
		if r.ExitCode > 0 && r.ExitCode < 256 {
			return r.ExitCode, ""
		}
		return 1, fmt.Sprintf("failed with exit code %d%s", r.ExitCode, where)
	case messages.StatusKilled:
		if n := unix.SignalNum(r.Signal); n > 0 {
			return 128 + int(n), fmt.Sprintf("killed by %s%s", r.Signal, where)
		}
		return 128 + int(unix.SIGKILL), fmt.Sprintf("killed%s", where)
	case messages.StatusTimedOut:
		return exitTimedOut, fmt.Sprintf("timed out after %s%s", time.Duration(r.WallMS)*time.Millisecond, where)
	case messages.StatusCancelled:
		return exitCancelled, "cancelled"
	case messages.StatusInvalid:
		return exitInvalid, fmt.Sprintf("task refused: %v", errOrStatus(r))
	default:
		return exitInfra, fmt.Sprintf("could not run%s: %v", where, errOrStatus(r))
	}
}

func errOrStatus(r *messages.Result) any {
	if r.Error != nil {
		return r.Error
	}
	return r.Status
}
