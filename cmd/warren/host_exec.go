//go:build client

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// The client build of cmd/warren (`go build -tags client`, installed as
// warren) links no embedded broker, worker, Prometheus or checkers. The
// commands that need them replace this process with warren-host, the full
// build, given the same arguments and environment: its exit status and
// the signals sent to it are theirs, as if warren-host had been run. This
// file and the host build's counterparts (up_cmd.go, broker_cmd.go,
// worker_cmd.go, doctor_cmd.go, embedded_conn.go) define the same
// methods: the seam between the two builds.

func (c *upCmd) Run(g *globals) error     { return g.execHost(hostCommand) }
func (c *brokerCmd) Run(g *globals) error { return g.execHost(hostCommand) }
func (c *workerCmd) Run(g *globals) error { return g.execHost(hostCommand) }
func (c *doctorCmd) Run(g *globals) error { return g.execHost(hostCommand) }

// Why warren-host is needed, for the error when it is missing.
const (
	hostCommand = "this command needs warren-host (the embedded broker, the worker, the checkers)"
	noBroker    = "no broker is named (--nats, WARREN_NATS_URL) or running for --data-dir %s, so this command needs warren-host's embedded broker"
)

// hostIfNoBroker runs before a command that reaches a broker: when none
// is named or recorded in --data-dir, the command needs an embedded one
// (and maybe an in-process worker), so warren-host runs it. It is decided
// before the command reads anything (its stdin above all), so warren-host
// starts from the same state.
func (g *globals) hostIfNoBroker() error {
	url, _, err := g.target()
	if err != nil || url != "" {
		return err
	}
	return g.execHost(fmt.Sprintf(noBroker, g.DataDir))
}

// embeddedConn is reached only if the broker recorded in --data-dir
// stopped after hostIfNoBroker found it: warren-host runs the command.
func (g *globals) embeddedConn(context.Context, string) (*brokerConn, error) {
	return nil, g.execHost(fmt.Sprintf(noBroker, g.DataDir))
}

// hostBinaryEnv names warren-host where it is neither beside warren nor
// on $PATH.
const hostBinaryEnv = "WARREN_HOST_BINARY"

// execHost replaces this process with warren-host running g's command
// line. It returns only on failure; why says what warren-host is needed
// for.
func (g *globals) execHost(why string) error {
	path, err := findHost(why)
	if err != nil {
		return err
	}
	argv := append([]string{path}, g.Args...)
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}

// findHost is warren-host beside this binary (symlinks resolved), else on
// $PATH, else $WARREN_HOST_BINARY.
func findHost(why string) (string, error) {
	beside := "warren-host beside warren"
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			p := filepath.Join(filepath.Dir(self), "warren-host")
			if isExecutable(p) {
				return p, nil
			}
			beside = p
		}
	}
	if p, err := exec.LookPath("warren-host"); err == nil {
		return p, nil
	}
	env := os.Getenv(hostBinaryEnv)
	if env != "" && isExecutable(env) {
		return env, nil
	}
	if env == "" {
		env = "unset"
	}
	return "", errors.New(why + ", and no warren-host was found: looked for " +
		beside + ", on $PATH, and in $" + hostBinaryEnv + " (" + env + "); install warren-host beside warren (`make build` puts bin/warren-host there) or set " + hostBinaryEnv)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
