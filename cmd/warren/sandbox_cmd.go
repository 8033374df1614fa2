package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/warrenhq/warren/sandbox"
	"golang.org/x/sys/unix"
)

// sandboxCmd groups the by-hand sandbox commands.
type sandboxCmd struct {
	Run sandboxRunCmd `cmd:"" help:"Run one command in a sandbox, like bwrap: stdio passed through, exits with the command's status (125 when the sandbox could not be set up)."`

	// Sessions: a sandbox that lives on a fleet host (sandbox_session_cmd.go).
	Create sandboxCreateCmd `cmd:"" help:"Create a long-lived sandbox on a host with a free slot; prints its id (the token is kept in --data-dir)."`
	Exec   sandboxExecCmd   `cmd:"" help:"Run a command in a sandbox, streaming its output; exits with its status."`
	Ps     sandboxPsCmd     `cmd:"" help:"List the commands running in a sandbox."`
	Kill   sandboxKillCmd   `cmd:"" help:"Signal a command of a sandbox."`
	Cp     sandboxCpCmd     `cmd:"" help:"Copy a file into (cp LOCAL ID:PATH) or out of (cp ID:PATH LOCAL) a sandbox."`
	Ls     sandboxLsCmd     `cmd:"" help:"List your sandboxes, or (ls ID[:PATH]) a sandbox's files."`
	Stat   sandboxStatCmd   `cmd:"" help:"Describe a file of a sandbox (ID:PATH); symlinks are not followed."`
	Mkdir  sandboxMkdirCmd  `cmd:"" help:"Create a directory (and its parents) in a sandbox (ID:PATH)."`
	Rm     sandboxRmCmd     `cmd:"" help:"End a sandbox (rm ID), or remove a file of it (rm ID:PATH)."`
	Status sandboxStatusCmd `cmd:"" help:"Print a sandbox's state as JSON."`
}

// exitSetupFailed is the exit status when the sandbox could not be set up
// and the command never ran (exitInfra, as in exec); a command's own
// statuses are passed through, a wall timeout is exitTimedOut.
const exitSetupFailed = exitInfra

type sandboxRunCmd struct {
	Isolation string        `help:"Isolation mode: auto, namespace or landlock." enum:"auto,namespace,landlock" default:"auto"`
	RO        []string      `name:"ro" help:"Host path visible read-only at the same path (repeatable)." placeholder:"PATH"`
	RW        string        `name:"rw" help:"Host directory used as the writable scratch directory and working directory (default: a fresh one, removed afterwards)." placeholder:"PATH"`
	Timeout   time.Duration `help:"Wall-time limit; the whole process tree is killed when it passes." default:"5m"`
	Memory    string        `help:"Memory limit, e.g. 512M or 2G (address space and, where available, cgroup)." placeholder:"SIZE"`
	Network   string        `help:"Network: none (no interfaces) or loopback (a private lo)." enum:"none,loopback" default:"none"`
	Disk      string        `help:"Disk limit of the home (a size-capped tmpfs; writes past it fail with ENOSPC), e.g. 200M; 'unbounded' for none. Ignored with --rw." default:"1G" placeholder:"SIZE"`
	sandboxHostFlags
	Cmd []string `arg:"" passthrough:"partial" help:"Command and arguments; put -- before them when they start with a dash."`
}

func (c *sandboxRunCmd) Run(g *globals) error {
	argv := c.Cmd
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return errors.New("sandbox run: no command given (warren sandbox run [flags] -- CMD ARGS...)")
	}
	var mem int64
	if c.Memory != "" {
		m, err := parseSize(c.Memory)
		if err != nil {
			return fmt.Errorf("--memory: %w", err)
		}
		mem = m
	}
	disk, err := parseDisk(c.Disk)
	if err != nil {
		return fmt.Errorf("--disk: %w", err)
	}
	r, err := sandbox.New(c.apply(sandbox.Config{Isolation: sandbox.Isolation(c.Isolation), Logger: g.Log}))
	if err != nil {
		return err
	}
	// No Start: one cold run needs no warm pool, and the sweep of dead
	// workers' leftovers is a worker's start-up work (warren up, warren
	// worker), not a by-hand command's (it read the scratch root and
	// every run cgroup on each call).
	defer r.Close()
	res, err := r.Run(g.Ctx, sandbox.Spec{
		Argv:     argv,
		Stdin:    g.IO.In,
		Stdout:   g.IO.Out,
		Stderr:   g.IO.Err,
		ReadOnly: c.RO,
		Scratch:  c.RW,
		Network:  sandbox.Network(c.Network),
		Limits:   sandbox.Limits{Wall: c.Timeout, Memory: mem, Disk: disk},
	})
	if err != nil {
		fmt.Fprintf(g.IO.Err, "warren sandbox: %v\n", err)
		return &exitCodeError{Code: exitSetupFailed}
	}
	g.Log.Debug().Str("in_force", res.InForce).Str("resource_limits", res.ResourceLimits).
		Dur("wall", res.Wall).Int64("peak_memory", res.PeakMemory).Msg("sandbox run ended")
	if res.DiskFull {
		fmt.Fprintf(g.IO.Err, "warren sandbox: the home's disk limit (--disk %s) was reached\n", c.Disk)
	}
	return commandExit(g, res.TimedOut, res.Signal, res.ExitCode, c.Timeout)
}

// commandExit is the exit status of a warren command that ran one: a
// timeout is exitTimedOut, a signal 128 + its number (as a shell reports
// it), else the command's own status.
func commandExit(g *globals, timedOut bool, signal string, code int, timeout time.Duration) error {
	switch {
	case timedOut:
		fmt.Fprintf(g.IO.Err, "warren sandbox: timed out after %s\n", timeout)
		return &exitCodeError{Code: exitTimedOut}
	case signal != "":
		return &exitCodeError{Code: 128 + int(unix.SignalNum(signal))}
	case code != 0:
		return &exitCodeError{Code: code}
	}
	return nil
}
