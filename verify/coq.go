package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/verify/coqpolicy"
)

var coqIdent = messages.NewLazyRegexp(`^[\p{L}_][\p{L}\p{N}_']*$`)

// coqCheck is one Coq check in progress: three steps in two sandboxes
// (steps 2 and 3 share one, see trustedSteps).
//
//  1. untrusted: coqc compiles header+proof as <Library>.Proof in a fresh
//     directory, with Warren's policy plugin loaded ahead of the proof
//     (package coqpolicy: Coq's own parser classifies every sentence before
//     it runs) and the stdlib's sources out of sight (coqHost). Only
//     Proof.vo is taken out of it, after a check that the compile wrote
//     nothing else anywhere it could write.
//  2. trusted: in another fresh directory holding only that Proof.vo and a
//     file we generate, coqc elaborates the expected statement BEFORE the
//     proof is loaded (a clean context), then Requires (never Imports) the
//     proof, turns the checking flags back on, defines
//     check : expected := @<Library>.Proof.<theorem>, and Redirects
//     `Print Assumptions check` to a file whose name holds a fresh nonce.
//  3. trusted: coqchk re-checks Proof.vo and Check.vo with its own kernel
//     and prints the context summary with fully qualified names.
//
// The verdict is read from files and outputs of steps 2 and 3, and from
// what the plugin recorded in step 1 (which can only add rejections).
type coqCheck struct {
	p       *Profile
	spec    *messages.VerifySpec
	run     RunFunc
	host    *coqHost
	usage   Usage
	n       string             // nonce for the library root and step 2's names and files
	reading *coqpolicy.Reading // what the policy plugin recorded of the compile
	// blind runs the compile without the policy plugin: a test's way to
	// show the checks behind it (the write check, the hidden stdlib).
	blind bool
}

func (c *Checker) checkCoq(ctx context.Context, run RunFunc, p *Profile, spec *messages.VerifySpec) (*messages.Verdict, Usage, error) {
	for _, part := range strings.Split(spec.Theorem, ".") {
		if !coqIdent.MatchString(part) {
			return nil, Usage{}, &StatementError{Msg: fmt.Sprintf("theorem %q is not a Coq qualified identifier", spec.Theorem)}
		}
	}
	host, err := c.coqHost(ctx, p)
	if err != nil {
		return nil, Usage{}, err
	}
	k := &coqCheck{p: p, spec: spec, run: run, host: host, n: nonce()}
	dir, cleanup, err := c.scratch("coq-")
	if err != nil {
		return nil, Usage{}, err
	}
	defer cleanup()
	v, err := k.check(ctx, dir)
	return v, k.usage, err
}

// lib is the proof's logical root, <Library>_<nonce>: unpredictable, so a
// proof cannot declare modules that mask the absolute name step 2 uses.
func (k *coqCheck) lib() string { return k.p.Coq.Library + "_" + k.n }

func (k *coqCheck) coqArgv(bin string, args ...string) []string {
	argv := append([]string{bin}, k.p.Coq.Flags...)
	return limitArgv(k.p, k.p.Coq.Prlimit, append(argv, args...))
}

// policyRecords is the plugin's record file in the compile's directory.
func (k *coqCheck) policyRecords() string { return "warren_policy_" + k.n + ".jsonl" }

// nativeOff turns native compilation off in every coqc (native_compute
// would compile and link OCaml code inside the step) and silences the
// flag's deprecation warning (Coq 8.16 on), which would otherwise head
// every compile error a user reads. -w must come first to reach it.
var nativeOff = []string{"-w", "-deprecated-native-compiler-option", "-native-compiler", "no"}

// compileSpec is step 1: coqc with the plugin ahead of the proof, the
// stdlib read from the compiled-only view, the real one hidden, and /tmp
// and /dev/shm inside the directory, so the write check sees them.
func (k *coqCheck) compileSpec(dir string) sandbox.Spec {
	args := append([]string{"-q", "-noglob"}, nativeOff...)
	args = append(args, "-coqlib", k.host.lib)
	var env map[string]string
	if !k.blind {
		args = append(args, k.host.plugin.Args()...)
		env = coqpolicy.Policy{RejectHostIO: k.p.HostIO == HostIOReject, Plugins: k.p.Coq.Plugins, Out: k.policyRecords(),
			HeaderLines: k.headerLines()}.Env()
	}
	args = append(args, "-Q", ".", k.lib(), "Proof.v")
	return sandbox.Spec{
		Argv:      k.coqArgv(k.p.Coq.Coqc, args...),
		Env:       env,
		Scratch:   dir,
		ReadOnly:  []string{k.host.dir, k.host.coqCore},
		Hide:      []string{k.host.coqlib},
		TmpInHome: true,
	}
}

func (k *coqCheck) check(ctx context.Context, dir string) (*messages.Verdict, error) {
	compileDir, checkDir := filepath.Join(dir, "compile"), filepath.Join(dir, "check")
	src := k.spec.Proof
	if k.spec.Header != "" {
		// coqc skips a byte-order mark at the start of a file only: the
		// proof's own moves there with it, as if compiled alone.
		src = k.spec.Header + "\n" + strings.TrimPrefix(src, "\ufeff")
	}
	if err := writeScratch(compileDir, map[string][]byte{"Proof.v": []byte(src)}); err != nil {
		return nil, err
	}
	// Step 1: untrusted compile.
	out, v, err := runStep(ctx, k.run, k.p, &k.usage, k.compileSpec(compileDir))
	if v != nil || err != nil {
		return v, err
	}
	if v, err := k.readPolicy(compileDir); v != nil || err != nil {
		return v, err
	}
	if out.res.ExitCode != 0 {
		return reject(messages.ReasonCompileError, out.output()), nil
	}
	vo, err := readResult(compileDir, "Proof.vo", k.p.Limits.FileSizeBytes)
	if err != nil {
		return reject(messages.ReasonCompileError, "coqc exited 0 but left no usable Proof.vo: "+err.Error()), nil
	}
	if k.p.HostIO == HostIOReject {
		if extra, err := unexpectedFiles(compileDir, k.compileOutputs()); err != nil {
			return nil, err
		} else if len(extra) > 0 {
			return reject(messages.ReasonDisallowedCommand,
				"the proof's compile wrote files besides its own outputs (host_io: reject): "+strings.Join(extra, ", ")), nil
		}
	}

	// Steps 2 and 3 (both trusted) in one sandbox, in a fresh directory.
	if err := writeScratch(checkDir, map[string][]byte{"Proof.vo": vo, "Check.v": []byte(k.checkFile())}); err != nil {
		return nil, err
	}
	out, step2, v, err := k.trustedSteps(ctx, checkDir)
	if v != nil || err != nil {
		return v, err
	}
	if !k.marker(checkDir, "stmt") {
		return nil, &StatementError{Msg: tail(step2.output())}
	}
	if !k.marker(checkDir, "req") {
		return reject(messages.ReasonCompileError, "the compiled proof cannot be loaded on its own:\n"+step2.output()), nil
	}
	if msg := k.notConstant(checkDir); msg != "" {
		return reject(messages.ReasonStatementMismatch, msg+k.headerHint()), nil
	}
	assumptions, err := readResult(checkDir, k.file("assumptions")+".out", 1<<20)
	if step2.res.ExitCode != 0 || err != nil {
		return reject(messages.ReasonStatementMismatch,
			fmt.Sprintf("%s.Proof.%s is missing or does not have the expected type\n%s%s", k.lib(), k.spec.Theorem, step2.output(), k.headerHint())), nil
	}
	used, err := parsePrintAssumptions(string(assumptions))
	if err != nil {
		return reject(messages.ReasonUnsafeFlag, err.Error()), nil
	}

	// Step 3's end: coqchk ran only because step 2 exited 0.
	if out.res.ExitCode != 0 {
		return reject(messages.ReasonUnsafeFlag, "coqchk rejected the compiled proof (the kernel check was bypassed):\n"+out.output()), nil
	}
	// coqchk prints its summary on stderr.
	sum, err := parseCoqchkSummary(out.stderr)
	if err != nil {
		return reject(messages.ReasonUnsafeFlag, err.Error()+"\n"+out.output()), nil
	}
	return k.decide(used, sum), nil
}

// readPolicy reads what the plugin recorded of the compile. A refused
// command rejects as disallowed_command, naming it and its line. Records
// missing, or without the plugin's ready record, mean the policy did not
// run (the plugin loads before the proof's first sentence, so no proof can
// cause that): not a verdict, an error (fail closed).
func (k *coqCheck) readPolicy(dir string) (*messages.Verdict, error) {
	k.reading = &coqpolicy.Reading{}
	if k.blind {
		return nil, nil
	}
	raw, err := readResult(dir, k.policyRecords(), 4<<20)
	if err != nil {
		return nil, &InfraError{Step: "coq policy plugin", Err: fmt.Errorf("the compile left no policy records: %w", err)}
	}
	r, err := coqpolicy.Parse(raw)
	if err != nil {
		return nil, &InfraError{Step: "coq policy plugin", Err: err}
	}
	if !r.Ready {
		return nil, &InfraError{Step: "coq policy plugin", Err: errors.New("the compile ran without the policy plugin")}
	}
	k.reading = r
	if r.Refused != nil {
		return reject(messages.ReasonDisallowedCommand,
			"the proof uses a command the profile forbids (host_io: reject):\n"+r.Refused.Describe(k.lineOf)), nil
	}
	return nil, nil
}

// headerHint explains a statement mismatch that the task's header may
// make certain: the header is compiled twice (before the proof, and alone
// before the statement), so what it declares anew each time (an inductive
// type, a record, a module, an opaque constant, an assumption) exists in
// two copies that never match; a statement naming one can be proven by no
// proof. Empty when the header declares none.
func (k *coqCheck) headerHint() string {
	if len(k.reading.Header) == 0 {
		return ""
	}
	var what []string
	for _, h := range k.reading.Header {
		what = append(what, fmt.Sprintf("header line %d: %s", h.Line, h.Command))
	}
	return "\nnote: the task's header declares what is made anew each time it is compiled (" + strings.Join(what, "; ") +
		"): the statement is checked with its own copy of the header, so if it names one of these, no proof can match; " +
		"a header may Require, Import, open scopes and make transparent definitions; put the rest in a library on the profile's load path"
}

// headerLines is how many lines of the compiled file are the header.
func (k *coqCheck) headerLines() int {
	if k.spec.Header == "" {
		return 0
	}
	return strings.Count(k.spec.Header, "\n") + 1
}

// lineOf names a line of the compiled file (header, then proof) as the
// task's author sees it.
func (k *coqCheck) lineOf(n int) string {
	h := k.headerLines()
	if n <= h {
		return fmt.Sprintf("header line %d", n)
	}
	return fmt.Sprintf("line %d", n-h)
}

// checkFile is step 2's input. The statement is elaborated before the
// proof is loaded, so nothing the proof declares (notations, shadowing
// definitions, coercions, options) can change its meaning.
func (k *coqCheck) checkFile() string {
	var b strings.Builder
	if k.spec.Header != "" {
		b.WriteString(k.spec.Header + "\n")
	}
	fmt.Fprintf(&b, "Definition warren_expected_%s : Type := (\n%s\n).\n", k.n, k.spec.Statement)
	fmt.Fprintf(&b, "Redirect %q Check warren_expected_%s.\n", k.file("stmt"), k.n)
	fmt.Fprintf(&b, "Require %s.Proof.\n", k.lib())
	fmt.Fprintf(&b, "Redirect %q Check warren_expected_%s.\n", k.file("req"), k.n)
	// A Global Unset in the proof survives Require; turn checking back on.
	// A Global Set Program Mode survives too, with a #[global] Obligation
	// Tactic: the Definition below would then turn a type mismatch into
	// obligations and run the proof's tactic on them here.
	b.WriteString("Set Guard Checking.\nSet Positivity Checking.\nSet Universe Checking.\nUnset Program Mode.\n")
	// What the name is, then a guard that stops the file unless it denotes
	// a reference: Print Assumptions resolves the name without elaborating
	// it, and fails on a notation that is not an alias of a reference (an
	// ltac:(...) abbreviation would otherwise run the proof's tactic here).
	fmt.Fprintf(&b, "Redirect %q Locate Term %s.\n", k.file("locate"), k.ref())
	fmt.Fprintf(&b, "Redirect %q Print Assumptions %s.\n", k.file("guard"), k.ref())
	fmt.Fprintf(&b, "Definition warren_check_%s : warren_expected_%s := @%s.\n", k.n, k.n, k.ref())
	fmt.Fprintf(&b, "Redirect %q Print Assumptions warren_check_%s.\n", k.file("assumptions"), k.n)
	return b.String()
}

// ref is the theorem's absolute name.
func (k *coqCheck) ref() string { return k.lib() + ".Proof." + k.spec.Theorem }

// file names a Redirect target; coqc appends ".out".
func (k *coqCheck) file(what string) string { return "warren_" + what + "_" + k.n }

func (k *coqCheck) marker(dir, what string) bool {
	_, err := readResult(dir, k.file(what)+".out", 1<<20)
	return err == nil
}

// decide combines the theorem's own assumptions (short names, from
// Print Assumptions) with coqchk's fully qualified context summary. A used
// name counts as every context axiom it is a dotted suffix of, so an
// axiom the proof names to look like an allowed one is still caught.
func (k *coqCheck) decide(used *assumptions, sum *coqchkSummary) *messages.Verdict {
	if len(used.unsafe) > 0 {
		return reject(messages.ReasonUnsafeFlag, "the theorem relies on unchecked definitions:\n"+strings.Join(used.unsafe, "\n"))
	}
	if msg := sum.unsafe(); msg != "" {
		return reject(messages.ReasonUnsafeFlag, msg)
	}
	self := k.ref()
	var axioms, bad []string
	incomplete := false
	for _, name := range used.axioms {
		matched := false
		for _, full := range sum.axioms {
			if full != name && !strings.HasSuffix(full, "."+name) {
				continue
			}
			matched = true
			axioms = append(axioms, full)
			if !k.p.allowed(full) {
				bad = append(bad, k.describeAxiom(full))
				incomplete = incomplete || full == self
			}
		}
		if !matched {
			bad = append(bad, name+" (not found in the checked context)")
		}
	}
	switch {
	case incomplete:
		return &messages.Verdict{Reason: messages.ReasonIncomplete, Axioms: axioms,
			Messages: self + " is assumed, not proven (Admitted, admit or Conjecture)"}
	case k.p.DeclaredAxioms == AxiomsReject && len(k.declared(sum)) > 0:
		return &messages.Verdict{Reason: messages.ReasonDisallowedAxiom, Axioms: axioms,
			Messages: "the proof declares axioms (profile policy declared_axioms: reject):\n" + strings.Join(k.declared(sum), "\n")}
	case len(bad) > 0:
		return &messages.Verdict{Reason: messages.ReasonDisallowedAxiom, Axioms: axioms,
			Messages: "depends on axioms outside the profile's allow-list: " + strings.Join(bad, ", ")}
	}
	return &messages.Verdict{Accepted: true, Axioms: axioms}
}

// writeScratch creates dir (fresh, ours) with files and the tmp directory
// the sandbox points TMPDIR at.
func writeScratch(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755); err != nil {
		return &InfraError{Step: "create scratch", Err: err}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return &InfraError{Step: "write scratch", Err: err}
		}
	}
	return nil
}
