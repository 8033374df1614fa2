package verify

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// trustedSteps runs steps 2 (coqc Check.v) and 3 (coqchk) in ONE sandbox
// over checkDir, saving a sandbox start per proof. The trust argument:
// both are trusted programs on our generated Check.v and the compiled
// Proof.vo, and step 3 already reads what step 2 left in checkDir, so
// step 3 never had more isolation from step 2 than this directory (a step
// 2 that a malicious Proof.vo could subvert could already rewrite
// Check.vo for step 3). No untrusted program runs in this sandbox.
//
// What stays separate: step 2's output goes to files named with the nonce
// (never into the stream step 3's coqchk summary is parsed from), its
// exit status to a third file, and coqchk runs only when step 2 exited 0
// (otherwise the verdict is decided from step 2 alone). Each
// program keeps its own CPU and memory limits (prlimit, the sandbox's
// rlimits are per process); the wall limit covers both steps, so it is
// twice the profile's per-step limit.
//
// It returns step 3's output (from the sandbox run) and step 2's (from its
// files, with its end as a sandbox.Result), or a verdict when a step ended
// abnormally (timeout, out of memory, crash).
func (k *coqCheck) trustedSteps(ctx context.Context, checkDir string) (step3, step2 *stepOutput, v *messages.Verdict, err error) {
	check := k.coqArgv(k.p.Coq.Coqc, append(append([]string{"-q", "-noglob"}, nativeOff...), "-Q", ".", k.lib(), "Check.v")...)
	coqchk := k.coqArgv(k.p.Coq.Coqchk, "-silent", "-o", "-Q", ".", k.lib(), "-norec", k.lib()+".Proof", "-norec", k.lib()+".Check")
	stdout, stderr, status := k.file("check_stdout"), k.file("check_stderr"), k.file("check_status")
	script := fmt.Sprintf("%s >%s 2>%s </dev/null; rc=$?; echo $rc >%s; [ $rc -eq 0 ] || exit 0; exec %s",
		shellJoin(check), stdout, stderr, status, shellJoin(coqchk))
	out, v, err := runSteps(ctx, k.run, k.p, &k.usage, sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Scratch: checkDir}, 2)
	if v != nil || err != nil {
		return nil, nil, v, err
	}
	raw, err := readResult(checkDir, status, 64)
	if err != nil {
		// The shell always writes it unless it could not run at all.
		return nil, nil, nil, &InfraError{Step: "trusted steps", Err: fmt.Errorf("no exit status of step 2 (%w): %s", err, tail(out.output()))}
	}
	rc, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, nil, nil, &InfraError{Step: "trusted steps", Err: fmt.Errorf("step 2's exit status %q: %w", raw, err)}
	}
	n := int(k.p.Limits.OutputBytes)
	step2 = &stepOutput{res: shellEnd(rc), stdout: readCapped(checkDir, stdout, n), stderr: readCapped(checkDir, stderr, n)}
	step2.res.PeakMemory = out.res.PeakMemory // step 2 ran alone when it failed: the run's peak is its own
	if v := classifyEnd(k.p, step2); v != nil {
		return nil, nil, v, nil
	}
	return out, step2, nil, nil
}

// shellEnd is how a program ended, from the status the shell reported: above
// 128 a signal (SIGXCPU being the CPU limit).
func shellEnd(rc int) *sandbox.Result {
	if rc <= 128 {
		return &sandbox.Result{ExitCode: rc}
	}
	sig := syscall.Signal(rc - 128)
	r := &sandbox.Result{ExitCode: -1, Signal: unix.SignalName(sig)}
	if sig == syscall.SIGXCPU {
		r.TimedOut, r.Timeout = true, sandbox.TimeoutCPU
	}
	return r
}

// readCapped reads the first n bytes of a file a trusted step wrote, like a
// cappedBuffer would have kept them; a missing file reads as empty.
func readCapped(dir, name string, n int) string {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return ""
	}
	defer root.Close()
	if fi, err := root.Lstat(name); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	f, err := root.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	c := &cappedBuffer{n: n}
	_, _ = io.Copy(c, io.LimitReader(f, int64(n)+1))
	return c.String()
}

// shellJoin quotes argv for /bin/sh.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
