package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// Sandbox sessions from the command line (docs/sandboxes.md): create,
// exec, ps, kill and status; the file commands are in sandbox_files_cmd.go,
// the kept tokens in sandbox_tokens.go.

func (g *globals) sandboxClient() (*brokerConn, *scheduler.Client, error) {
	return g.client("warren-sandbox", false)
}

type sandboxCreateCmd struct {
	Profile string            `help:"Exec profile whose settings apply." default:"default"`
	Pool    string            `help:"Worker pool to place it in." default:"default"`
	Idle    time.Duration     `help:"End it after this long with nothing running (default: the host's, 10m)."`
	TTL     time.Duration     `name:"ttl" help:"End it this long after create, whatever runs (default: the host's, 1h, capped by your tenant's session_ttl quota; above the cap is refused); also its token's expiry."`
	Memory  string            `help:"Memory limit, e.g. 512M." placeholder:"SIZE"`
	Disk    string            `help:"Disk limit of the home, e.g. 1G (default: the host's --disk): what its commands write there, in /tmp and /dev/shm, and what sandbox cp copies in (refused past it: disk_full); also each file's size (RLIMIT_FSIZE)." placeholder:"SIZE"`
	Network string            `help:"none or loopback." enum:"none,loopback" default:"none"`
	Env     map[string]string `help:"Environment of every command (repeatable K=V); kept in the host's memory only." placeholder:"K=V"`
	Wait    bool              `help:"While no host has a free slot, keep trying (up to --wait-for) instead of failing at once."`
	WaitFor time.Duration     `name:"wait-for" help:"How long --wait keeps trying." default:"10m"`
	JSON    bool              `name:"json" help:"Print {\"id\",\"token\",\"host\",\"expires\"} instead of the id."`
}

func (c *sandboxCreateCmd) wait() time.Duration {
	if !c.Wait {
		return 0
	}
	return c.WaitFor
}

func (c *sandboxCreateCmd) Run(g *globals) error {
	var mem, disk int64
	var err error
	if c.Memory != "" {
		if mem, err = parseSize(c.Memory); err != nil {
			return fmt.Errorf("--memory: %w", err)
		}
	}
	if c.Disk != "" {
		if disk, err = parseSize(c.Disk); err != nil {
			return fmt.Errorf("--disk: %w", err)
		}
	}
	s, client, err := g.sandboxClient()
	if err != nil {
		return err
	}
	defer s.Close()
	sb, err := client.CreateSandbox(g.Ctx, scheduler.CreateOptions{Pool: c.Pool, Profile: c.Profile, Idle: c.Idle, TTL: c.TTL,
		Memory: mem, Disk: disk, Network: messages.Network(c.Network), Env: c.Env, Wait: c.wait()})
	if err != nil {
		return err
	}
	rec := sandboxRecord{ID: sb.ID, Token: sb.Token, Host: sb.Host, Pool: sb.Pool, Expires: sb.Expires}
	pruneSandboxes(g, time.Now())
	if err := saveSandbox(g, rec); err != nil {
		return fmt.Errorf("sandbox %s created, but its token could not be kept (%w); it is: %s", sb.ID, err, sb.Token)
	}
	if c.JSON {
		return json.NewEncoder(g.IO.Out).Encode(map[string]any{"id": rec.ID, "token": rec.Token, "host": rec.Host, "expires": rec.Expires})
	}
	_, err = fmt.Fprintln(g.IO.Out, sb.ID)
	return err
}

type sandboxExecCmd struct {
	sandboxTokenFlag
	Background bool              `help:"Return once it started (prints its pid); output is discarded."`
	Timeout    time.Duration     `help:"Kill it after this long (default: none)."`
	Cwd        string            `help:"Working directory, relative to the sandbox's home."`
	Env        map[string]string `help:"Environment (repeatable K=V)." placeholder:"K=V"`
	Stdin      bool              `help:"Pass this command's stdin (at most 1 MiB) to it."`
	ID         string            `arg:"" help:"Sandbox id."`
	Cmd        []string          `arg:"" passthrough:"partial" help:"Command and arguments; put -- before them."`
}

func (c *sandboxExecCmd) Run(g *globals) error {
	argv := c.Cmd
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return errors.New("sandbox exec: no command given (warren sandbox exec ID -- CMD ARGS...)")
	}
	var stdin []byte
	if c.Stdin {
		b, err := io.ReadAll(io.LimitReader(g.IO.In, messages.MaxSandboxChunk+1))
		if err != nil {
			return err
		}
		if len(b) > messages.MaxSandboxChunk {
			return fmt.Errorf("--stdin: more than %d bytes; copy the input in with warren sandbox cp", messages.MaxSandboxChunk)
		}
		stdin = b
	}
	s, client, err := g.sandboxClient()
	if err != nil {
		return err
	}
	defer s.Close()
	sb, err := c.open(g, client, c.ID)
	if err != nil {
		return err
	}
	exit, err := sb.Exec(g.Ctx, scheduler.ExecOptions{Argv: argv, Env: c.Env, Cwd: c.Cwd, Stdin: stdin, Background: c.Background, Timeout: c.Timeout}, g.IO.Out, g.IO.Err)
	if exit == nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(g.IO.Err, "warren sandbox: %v\n", err)
	}
	if c.Background {
		_, err := fmt.Fprintln(g.IO.Out, exit.PID)
		return err
	}
	return commandExit(g, exit.TimedOut, exit.Signal, exit.ExitCode, c.Timeout)
}

type sandboxPsCmd struct {
	sandboxTokenFlag
	ID string `arg:"" help:"Sandbox id."`
}

func (c *sandboxPsCmd) Run(g *globals) error {
	return withSandbox(g, c.sandboxTokenFlag, c.ID, func(sb *scheduler.Sandbox) error {
		ps, err := sb.Ps(g.Ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(g.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PID\tSTARTED\tBACKGROUND\tSTATE\tCOMMAND")
		for _, p := range ps {
			fmt.Fprintf(tw, "%d\t%s\t%t\t%s\t%s\n", p.PID, p.Started.Format(time.RFC3339), p.Background, processState(p), strings.Join(p.Argv, " "))
		}
		return tw.Flush()
	})
}

// processState is "running", "exited:N" or "killed:SIGNAL" (one word, for
// the table).
func processState(p messages.SandboxProcess) string {
	switch {
	case p.Ended.IsZero():
		return "running"
	case p.Signal != "":
		return "killed:" + p.Signal
	}
	return fmt.Sprintf("exited:%d", p.ExitCode)
}

type sandboxKillCmd struct {
	sandboxTokenFlag
	Signal string `help:"Signal to send." default:"SIGTERM" enum:"SIGTERM,SIGKILL,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2"`
	ID     string `arg:"" help:"Sandbox id."`
	PID    int    `arg:"" name:"pid" help:"Process id (see ps)."`
}

func (c *sandboxKillCmd) Run(g *globals) error {
	return withSandbox(g, c.sandboxTokenFlag, c.ID, func(sb *scheduler.Sandbox) error { return sb.Kill(g.Ctx, c.PID, c.Signal) })
}

type sandboxStatusCmd struct {
	sandboxTokenFlag
	ID string `arg:"" help:"Sandbox id."`
}

func (c *sandboxStatusCmd) Run(g *globals) error {
	return withSandbox(g, c.sandboxTokenFlag, c.ID, func(sb *scheduler.Sandbox) error {
		info, err := sb.Status(g.Ctx)
		if err != nil {
			return err
		}
		return json.NewEncoder(g.IO.Out).Encode(info)
	})
}

// withSandbox connects, opens id and runs fn on it.
func withSandbox(g *globals, tf sandboxTokenFlag, id string, fn func(*scheduler.Sandbox) error) error {
	s, client, err := g.sandboxClient()
	if err != nil {
		return err
	}
	defer s.Close()
	sb, err := tf.open(g, client, id)
	if err != nil {
		return err
	}
	return fn(sb)
}
