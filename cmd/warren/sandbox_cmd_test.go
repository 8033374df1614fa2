package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// runSandboxCLI parses args against the sandbox and doctor commands alone,
// so these tests do not depend on the rest of the command tree.
func runSandboxCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var c struct {
		globals
		Sandbox sandboxCmd `cmd:""`
		Doctor  doctorCmd  `cmd:""`
	}
	var out, errb bytes.Buffer
	p, err := kong.New(&c, kong.Name("warren"), kong.Writers(&out, &errb), kong.Vars{"default_data_dir": t.TempDir()})
	require.NoError(t, err)
	kctx, err := p.Parse(args)
	require.NoError(t, err)
	c.Ctx, c.HardCtx = context.Background(), context.Background()
	c.IO = stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb}
	c.Log = zerolog.Nop()
	err = kctx.Run(&c.globals)
	var ec *exitCodeError
	switch {
	case err == nil:
	case errors.As(err, &ec):
		code = ec.Code
	default:
		t.Fatalf("unexpected error: %v", err)
	}
	return out.String(), errb.String(), code
}

func TestSandboxRunPassesStdioAndExitStatus(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	out, _, code := runSandboxCLI(t, "in\n", "sandbox", "run", "--isolation", "namespace", "--", "/bin/sh", "-c", "cat; echo $HOME >/dev/null; exit 3")
	require.Equal(t, "in\n", out)
	require.Equal(t, 3, code)

	out, _, code = runSandboxCLI(t, "", "sandbox", "run", "--", "/bin/sh", "-c", "test ! -e /root && echo isolated")
	require.Equal(t, "isolated\n", out)
	require.Equal(t, 0, code)
}

func TestSandboxRunROAndRW(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	rw := mkHostDir(t)
	ro := mkHostDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(ro, "in.txt"), []byte("tool"), 0o644))
	_, errs, code := runSandboxCLI(t, "", "sandbox", "run", "--ro", ro, "--rw", rw, "--memory", "512M", "--timeout", "20s", "--",
		"/bin/sh", "-c", "cp "+ro+"/in.txt ./out.txt && ! touch "+ro+"/x 2>/dev/null")
	require.Equal(t, 0, code, errs)
	b, err := os.ReadFile(filepath.Join(rw, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "tool", string(b))
}

func TestSandboxRunSetupFailureAndTimeoutHaveTheirOwnStatus(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	_, errs, code := runSandboxCLI(t, "", "sandbox", "run", "--ro", "/nonexistent/x", "--", "/bin/true")
	require.Equal(t, exitSetupFailed, code)
	require.Contains(t, errs, "sandbox setup failed at resolve read-only path")

	_, errs, code = runSandboxCLI(t, "", "sandbox", "run", "--timeout", "200ms", "--", "/bin/sleep", "30")
	require.Equal(t, exitTimedOut, code)
	require.Contains(t, errs, "timed out")

	_, _, code = runSandboxCLI(t, "", "sandbox", "run", "--", "/bin/sh", "-c", "kill -KILL $$")
	require.Equal(t, 0, code, "pid 1 cannot be killed from inside: the KILL is ignored")
}

func TestDoctorReportsNamespaceMode(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	out, _, code := runSandboxCLI(t, "", "doctor")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "usable isolation modes: namespace")
}

// mkHostDir is a directory a root worker's sandbox uid can reach.
func mkHostDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "warren-cli-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	require.NoError(t, os.Chmod(d, 0o755))
	return d
}

// The narrowed tree a command is parsed against (its own and the
// globals) reads the same flags and arguments as the whole cli; anything
// not starting with a command gets the whole cli.
func TestNarrowGrammarParsesAsTheWholeCLI(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		entry func(cli) any // whole's entry of the command
	}{
		{[]string{"sandbox", "run", "--log-level", "warn", "--isolation", "landlock", "--ro", "/opt", "--timeout", "3s", "--network", "loopback", "--uid-base", "70000", "--", "/bin/sh", "-c", "true"}, func(c cli) any { return c.sandboxEntry }},
		{[]string{"exec", "--nats", "nats://h:1", "-t", "5s", "--profile", "coq", "-e", "A=1", "--stdin", "--", "sh", "-c", "exit 3"}, func(c cli) any { return c.execEntry }},
		{[]string{"submit", "--log-level", "debug", "-b", "b1", "--wait", "--max-inflight", "7", "tasks.jsonl"}, func(c cli) any { return c.submitEntry }},
		{[]string{"worker", "--capacity", "3", "--disk", "2G", "--retry-for", "5s"}, func(c cli) any { return c.workerEntry }},
		{[]string{"results", "b1", "--files", "/tmp/x"}, func(c cli) any { return c.resultsEntry }},
	} {
		args := tt.args
		t.Run(args[0], func(t *testing.T) {
			parse := func(tree any) {
				p, err := kong.New(tree, kong.Name("warren"), kong.Vars{"default_data_dir": "/d", "sandbox_help": "h"})
				require.NoError(t, err)
				_, err = p.Parse(args)
				require.NoError(t, err)
			}
			narrow, g := grammar(args)
			require.NotEqual(t, reflect.TypeOf(&cli{}), reflect.TypeOf(narrow), "narrowed")
			require.Equal(t, 2, reflect.TypeOf(narrow).Elem().NumField(), "the globals and one command")
			parse(narrow)
			var whole cli
			parse(&whole)
			require.Equal(t, tt.entry(whole), reflect.ValueOf(narrow).Elem().Field(1).Interface())
			require.Equal(t, whole.globals, *g, "the globals")
		})
	}
	for _, args := range [][]string{{"--log-level", "warn", "exec", "--", "true"}, {"--help"}, {"exce"}, {}} {
		other, _ := grammar(args)
		require.IsType(t, &cli{}, other, "%q", args)
	}
}

// commands holds every command of cli, each under its kong name with a
// narrowed tree of that command alone.
func TestCommandsAreTheCLIs(t *testing.T) {
	vars := kong.Vars{"default_data_dir": "/d", "sandbox_help": "h"}
	names := func(tree any) []string {
		p, err := kong.New(tree, vars)
		require.NoError(t, err)
		var ns []string
		for _, n := range p.Model.Children {
			ns = append(ns, n.Name)
		}
		return ns
	}
	whole := names(&cli{})
	require.Len(t, commands, len(whole))
	for _, name := range whole {
		cmd, ok := commands[name]
		require.True(t, ok, name)
		tree, _ := cmd.tree()
		require.Equal(t, []string{name}, names(tree))
	}
}

// The latency-bound commands run on one P; every other command, and one
// whose environment names GOMAXPROCS, keeps the runtime's default.
func TestOneProcCommands(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	for _, tt := range []struct {
		args []string
		one  bool
	}{
		{[]string{"exec", "--", "true"}, true},
		{[]string{"sandbox", "run", "--", "true"}, true},
		{[]string{"sandbox", "exec", "x", "--", "true"}, true},
		{[]string{"submit", "batch.jsonl"}, false},
		{[]string{"results", "b"}, false},
		{[]string{"up"}, false},
		{[]string{"--help"}, false},
		{nil, false},
		{[]string{"exce"}, false},
	} {
		require.Equal(t, tt.one, oneProc(tt.args), "%q", tt.args)
	}
	t.Setenv("GOMAXPROCS", "2")
	require.False(t, oneProc([]string{"exec", "--", "true"}), "an explicit GOMAXPROCS is kept")
}
