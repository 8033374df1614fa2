package verify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// RunFunc runs one sandboxed step; the worker passes its sandbox Runner.Run.
type RunFunc func(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error)

// Usage is what a check cost, summed over its steps (peak memory is the
// largest of any step).
type Usage struct {
	Wall       time.Duration
	CPU        time.Duration
	PeakMemory int64
	Steps      int
	// InForce is the isolation the sandbox reported for the last step.
	InForce string
}

func (u *Usage) add(r *sandbox.Result) {
	u.Wall += r.Wall
	u.CPU += r.CPU
	u.PeakMemory = max(u.PeakMemory, r.PeakMemory)
	u.Steps++
	u.InForce = r.InForce
}

// stepOutput is what a finished step left behind.
type stepOutput struct {
	res    *sandbox.Result
	stdout string
	stderr string
}

func (o *stepOutput) output() string {
	switch {
	case o.stdout == "":
		return o.stderr
	case o.stderr == "":
		return o.stdout
	}
	return o.stdout + "\n" + o.stderr
}

// cappedBuffer keeps the first n bytes written and drops the rest.
type cappedBuffer struct {
	buf bytes.Buffer
	n   int
	cut bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.n - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	if c.buf.Len()+len(p) > c.n {
		c.cut = true
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	if c.cut {
		return c.buf.String() + "\n[output truncated]"
	}
	return c.buf.String()
}

// runStep runs argv in a sandbox with the profile's toolchain and limits.
// A nil error with a non-nil verdict means the step decided the check
// (timeout, out of memory, crash, sandbox error); a nil verdict means it
// ran to an exit the caller interprets.
func runStep(ctx context.Context, run RunFunc, p *Profile, u *Usage, spec sandbox.Spec) (*stepOutput, *messages.Verdict, error) {
	return runSteps(ctx, run, p, u, spec, 1)
}

// runSteps is runStep for a sandbox that runs steps programs one after
// another (each under its own CPU and memory limits): its wall limit is
// the profile's per-step limit times steps.
func runSteps(ctx context.Context, run RunFunc, p *Profile, u *Usage, spec sandbox.Spec, steps int) (*stepOutput, *messages.Verdict, error) {
	stdout := &cappedBuffer{n: int(p.Limits.OutputBytes)}
	stderr := &cappedBuffer{n: int(p.Limits.OutputBytes)}
	spec.Stdout, spec.Stderr = stdout, stderr
	spec.ReadOnly = append(append([]string(nil), p.Toolchain...), spec.ReadOnly...)
	spec.Env = mergeEnv(p.Env, spec.Env)
	spec.Limits = p.sandboxLimits()
	spec.Limits.Wall *= time.Duration(steps)
	spec.Network = sandbox.NetworkNone
	res, err := run(ctx, spec)
	if err != nil {
		var se *sandbox.SetupError
		if errors.As(err, &se) && ctx.Err() == nil {
			return nil, reject(messages.ReasonSandboxError, se.Error()), nil
		}
		return nil, nil, &InfraError{Step: spec.Argv[0], Err: err}
	}
	u.add(res)
	out := &stepOutput{res: res, stdout: stdout.String(), stderr: stderr.String()}
	if v := classifyEnd(p, out); v != nil {
		return out, v, nil
	}
	return out, nil, nil
}

// classifyEnd turns an abnormal end into a verdict. The reason of a
// rejection may use the step's output (a proof can only pick which way it
// is rejected); acceptance never does.
func classifyEnd(p *Profile, o *stepOutput) *messages.Verdict {
	r := o.res
	switch {
	case r.TimedOut:
		return reject(messages.ReasonTimeout, fmt.Sprintf("step exceeded its %s wall/CPU limit\n%s", p.Limits.Wall.D(), tail(o.output())))
	case outOfMemory(p, o):
		return reject(messages.ReasonOutOfMemory, fmt.Sprintf("step exceeded its %d-byte memory limit (peak %d)\n%s", p.Limits.MemoryBytes, r.PeakMemory, tail(o.output())))
	case r.Signal != "":
		return reject(messages.ReasonCrash, fmt.Sprintf("step killed by %s\n%s", r.Signal, tail(o.output())))
	}
	return nil
}

// outOfMemory: a cgroup OOM kill is a SIGKILL that is not ours (no
// timeout); an address-space limit makes OCaml/Lean die with an
// out-of-memory message (abort or segfault), or leaves the peak close to
// the limit.
func outOfMemory(p *Profile, o *stepOutput) bool {
	r := o.res
	if r.ExitCode == 0 && r.Signal == "" {
		return false
	}
	if r.Signal == "SIGKILL" || r.PeakMemory >= p.Limits.MemoryBytes/10*9 {
		return true
	}
	return strings.Contains(o.stderr, "out of memory") || strings.Contains(o.stderr, "Out of memory")
}

// limitArgv prefixes argv with prlimit, when the profile has it, so the
// limits hold even under a sandbox mode that does not set rlimits.
func limitArgv(p *Profile, prlimit string, argv []string) []string {
	if prlimit == "" || prlimit == "none" {
		return argv
	}
	cpu := int64(p.Limits.CPU.D().Seconds() + 1)
	return append([]string{prlimit,
		"--as=" + strconv.FormatInt(p.Limits.MemoryBytes, 10),
		"--cpu=" + strconv.FormatInt(cpu, 10),
		"--fsize=" + strconv.FormatInt(p.Limits.FileSizeBytes, 10),
		"--core=0", "--"}, argv...)
}

func reject(r messages.Reason, msg string) *messages.Verdict {
	return &messages.Verdict{Accepted: false, Reason: r, Messages: tail(msg)}
}

// maxMessages bounds Verdict.Messages.
const maxMessages = 16 << 10

func tail(s string) string {
	if len(s) <= maxMessages {
		return s
	}
	return "[...]\n" + s[len(s)-maxMessages:]
}

func mergeEnv(a, b map[string]string) map[string]string {
	if len(a) == 0 {
		return b
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// nonce returns an unguessable token the proof cannot know in advance.
func nonce() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// readResult reads a regular file a step left in its scratch directory,
// refusing symlinks and anything larger than max.
func readResult(dir, name string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", name, fi.Size(), max)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max+1))
}
