package coqpolicy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// hostIOCase is a source whose command touches the host, the command the
// plugin must refuse at its line, and the effect (a file in the compile's
// directory) the command has when nothing refuses it: the control.
type hostIOCase struct {
	name    string
	src     string
	files   map[string]string
	command string // the refused command as recorded
	line    int
	effect  string // a file the command writes when allowed ("" when it writes none)
}

// hostIOCases hide the command every way the old text scan could be
// blinded or misled: notation keywords holding "(*" or "*)" in every
// notation form, in modules imported later, a byte-order mark, CRLF line
// ends, attributes, locality and control prefixes, bullets, comments and
// strings around it.
var hostIOCases = []hostIOCase{
	{name: "Load", src: lines(`Load "x".`, `Check loaded.`), files: map[string]string{"x.v": "Definition loaded := 1.\n"},
		command: "Load", line: 1},
	{name: "Redirect", src: lines(`Redirect "leak" Print nat.`), command: "Redirect", line: 1, effect: "leak.out"},
	{name: "Notation keyword opening a comment", src: lines(
		`Notation "x #(* y" := (x + y) (at level 50).`,
		`Definition a := 1 #(* 2.`,
		`Redirect "leak" Print nat.`), command: "Redirect", line: 3, effect: "leak.out"},
	{name: "Infix keyword opening a comment", src: lines(
		`Infix "+(*" := Nat.add (at level 50).`,
		`Check 1 +(* 2.`,
		`Redirect "leak" Print nat.`), command: "Redirect", line: 3, effect: "leak.out"},
	{name: "Notation keyword closing a comment", src: lines(
		`Notation "x *) y" := (x + y) (at level 50).`,
		`Definition a := (* 1 *) 1 *) 2.`,
		`Redirect "leak" Print nat.`), command: "Redirect", line: 3, effect: "leak.out"},
	{name: "Tactic Notation keyword opening a comment", src: lines(
		`Tactic Notation "solve" "#(*" := exact I.`,
		`Goal True. solve #(*. Qed.`,
		`Redirect "leak" Print nat.`), command: "Redirect", line: 3, effect: "leak.out"},
	{name: "notation in a module imported later", src: lines(
		`Module N. Notation "x #(* y" := (x + y) (at level 50). End N.`,
		`Import N.`,
		`Definition a := 1 #(* 2. Redirect "leak" Print nat.`), command: "Redirect", line: 3, effect: "leak.out"},
	{name: "notation keyword holding a dot", src: lines(
		`Notation "x #. y" := (x + y) (at level 50).`,
		`Definition a := 1 #. 2.`,
		`Redirect "leak" Print nat.`), command: "Redirect", line: 3, effect: "leak.out"},
	{name: "unicode notation keyword", src: lines(
		`Notation "x ⊕(* y" := (x + y) (at level 50).`,
		`Definition a := 1 ⊕(* 2.`,
		`Redirect "leak" Print nat.`), command: "Redirect", line: 3, effect: "leak.out"},
	{name: "byte-order mark", src: "\ufeffRedirect \"leak\" Print nat.\n", command: "Redirect", line: 1, effect: "leak.out"},
	{name: "CRLF", src: "Check I.\r\nRedirect \"leak\" Print nat.\r\n", command: "Redirect", line: 2, effect: "leak.out"},
	{name: "comment with a closer in a string", src: lines(`(* "*)" *) Redirect "leak" Print nat.`), command: "Redirect", line: 1, effect: "leak.out"},
	{name: "right after Qed and a comment", src: lines(`Goal True. exact I. Qed. (* c *)Redirect "leak" Print nat.`), command: "Redirect", line: 1, effect: "leak.out"},
	{name: "inside a proof after a bullet", src: lines(`Goal True /\ True.`, `split.`, `- Redirect "leak" Print nat.`, `  exact I.`, `- exact I.`, `Qed.`),
		command: "Redirect", line: 3, effect: "leak.out"},
	{name: "attributes after Redirect", src: lines(`Redirect "leak" #[local] Definition d := 1.`), command: "Redirect", line: 1, effect: "leak.out"},
	{name: "attributes and locality", src: lines(`#[global] Local Add LoadPath "." as Here.`), command: "Add LoadPath", line: 1},
	{name: "under Time", src: lines(`Time Redirect "leak" Print nat.`), command: "Redirect", line: 1, effect: "leak.out"},
	{name: "under Timeout", src: lines(`Timeout 10 Redirect "leak" Print nat.`), command: "Redirect", line: 1, effect: "leak.out"},
	{name: "under Fail", src: lines(`Fail Load "x".`), files: map[string]string{"x.v": "Fail.\n"}, command: "Load", line: 1},
	{name: "under Succeed", src: lines(`Succeed Redirect "leak" Print nat.`), command: "Redirect", line: 1, effect: "leak.out"},
	{name: "inside a section and a module", src: lines(`Module M. Section S.`, `Redirect "leak" Print nat.`, `End S. End M.`),
		command: "Redirect", line: 2, effect: "leak.out"},
	{name: "Cd", src: lines(`Cd "sub".`), files: map[string]string{"sub/.keep": ""}, command: "Cd", line: 1},
	{name: "Add LoadPath", src: lines(`Add LoadPath "." as Here.`), command: "Add LoadPath", line: 1},
	{name: "Add Rec LoadPath", src: lines(`Add Rec LoadPath "." as Here.`), command: "Add LoadPath", line: 1},
	{name: "Remove LoadPath", src: lines(`Remove LoadPath ".".`), command: "Remove LoadPath", line: 1},
	{name: "Add ML Path", src: lines(`Add ML Path ".".`), command: "Add ML Path", line: 1},
	{name: "Declare ML Module off the allow-list", src: lines(`Declare ML Module "coq-core.plugins.ltac2".`),
		command: `Declare ML Module "coq-core.plugins.ltac2"`, line: 1},
	{name: "Print Universes to a file", src: lines(`Print Universes "univ".`), command: "Print Universes to a file", line: 1, effect: "univ"},
	{name: "Print Sorted Universes to a file", src: lines(`Print Sorted Universes "univ".`), command: "Print Universes to a file", line: 1, effect: "univ"},
	{name: "Extraction to a file", src: lines(`Require Extraction.`, `Extraction "out.ml" nat.`), command: `Extraction "file"`, line: 2, effect: "out.ml"},
	{name: "Separate Extraction", src: lines(`Require Extraction.`, `Definition d := 1.`, `Separate Extraction d.`), command: "Separate Extraction", line: 3, effect: "Proof.ml"},
	{name: "Extraction Library", src: lines(`Require Extraction.`, `Extraction Library Datatypes.`), command: "Extraction Library", line: 2, effect: "Datatypes.ml"},
	{name: "Recursive Extraction Library", src: lines(`Require Extraction.`, `Recursive Extraction Library Datatypes.`),
		command: "Recursive Extraction Library", line: 2, effect: "Datatypes.ml"},
	{name: "Extraction TestCompile", src: lines(`Require Extraction.`, `Definition d := 1.`, `Extraction TestCompile d.`), command: "Extraction TestCompile", line: 3},
	{name: "Dump Arith", src: lines(`Require Import ZArith Lia.`, `Set Dump Arith "dumped".`,
		`Goal forall x y : Z, (0 <= x -> 0 <= y -> 0 <= x * y)%Z. intros; nia. Qed.`), command: "Set Dump Arith", line: 2, effect: "dumped*"},
	{name: "NativeCompute profiling", src: lines(`Set NativeCompute Profiling.`), command: "Set NativeCompute Profiling", line: 1},
	{name: "Locate File", src: lines(`Succeed Locate File "/etc/passwd".`), command: "Locate File", line: 1},
	{name: "Extra Dependency", src: lines(`From Top Extra Dependency "x.v".`), files: map[string]string{"x.v": ""}, command: "Extra Dependency", line: 1},
}

// TestHostIORefusedBeforeItRuns: under host_io: reject every case is
// refused at its line before it runs (its effect is absent); the control,
// the same source with the policy off, shows the command runs there (its
// effect is present, or the compile gets past it).
func TestHostIORefusedBeforeItRuns(t *testing.T) {
	p := testPlugin(t)
	for _, tc := range hostIOCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			on := compile(t, p, tc.src, Policy{RejectHostIO: true}, tc.files)
			require.NotZero(t, on.exit, on.output)
			require.NotNil(t, on.reading.Refused, on.output)
			require.Equal(t, tc.command, on.reading.Refused.Command)
			require.Equal(t, tc.line, on.reading.Refused.Line)
			require.Contains(t, on.output, "Warren refuses")
			if tc.effect != "" {
				require.False(t, on.exists(tc.effect), "%s was written", tc.effect)
			}

			off := compile(t, p, tc.src, Policy{}, tc.files)
			require.Nil(t, off.reading.Refused)
			if tc.effect != "" {
				require.True(t, off.exists(tc.effect), "control: %s not written: %s", tc.effect, off.output)
			} else {
				require.NotContains(t, off.output, "Warren refuses")
			}
		})
	}
}

// TestOrdinaryCommandsAllowed: what proofs do, under host_io: reject,
// compiles: commands named like host commands, notations with dots,
// stdout-only extraction and extraction settings, Timeout, Print
// Universes to stdout, an allowed plugin, lia and friends (their caches).
func TestOrdinaryCommandsAllowed(t *testing.T) {
	p := testPlugin(t)
	tests := []struct {
		name    string
		src     string
		plugins []string
	}{
		{"a constant named Cd", lines(`Definition Cd := 1.`, `Definition Load := Cd.`, `Check Load.`), nil},
		{"a notation with .+", lines(`Notation "x .+ y" := (x + y) (at level 50).`, `Check 1 .+ 2.`), nil},
		{"comments and strings naming commands", lines(`(* Load "x". Redirect "f" Print nat. *)`, `Require Import String. Open Scope string_scope.`,
			`Definition s := "Cd ""/"". Load x.".`), nil},
		{"extraction to stdout and its settings", lines(`Require Extraction.`, `Definition d := 1.`, `Extraction Inline d.`, `Extraction NoInline d.`,
			`Extraction Language OCaml.`, `Extraction Implicit d [].`, `Extraction Blacklist List.`, `Extraction d.`, `Recursive Extraction d.`,
			`Set Extraction Optimize.`, `Print Extraction Inline.`, `Reset Extraction Inline.`), nil},
		{"Unset Dump Arith", lines(`Unset Dump Arith.`), nil},
		{"Timeout", lines(`Timeout 10 Check I.`, `Set Default Timeout 10.`, `Unset Default Timeout.`), nil},
		{"Print Universes to stdout", lines(`Print Universes.`, `Print Sorted Universes.`), nil},
		{"Cd without a directory prints it", lines(`Cd.`, `Pwd.`), nil},
		{"an allowed plugin", lines(`Declare ML Module "coq-core.plugins.ltac2".`), []string{"coq-core.plugins.ltac2"}},
		{"lia, nia and their caches", lines(`Require Import Lia ZArith.`, `Goal forall n : nat, n + 0 = n. intros; lia. Qed.`,
			`Goal forall x : Z, (x * x >= 0)%Z. intros; nia. Qed.`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := compile(t, p, tc.src, Policy{RejectHostIO: true, Plugins: tc.plugins}, nil)
			require.Zero(t, c.exit, c.output)
			require.Nil(t, c.reading.Refused)
		})
	}
}
