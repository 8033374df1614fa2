package coqpolicy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeclarations: the plugin records an assumption where it is one (top
// level, a module, a functor body, a section's Axiom, a Variable or
// Context outside a section, Declare Instance) with the command and names
// as Coq parsed them, and nothing where it is not (a module type's
// parameters, a closed section's variables, Fail or Succeed, which leave
// nothing). A Declare Module is recorded as such; coqchk's summary says
// whether it brings axioms.
func TestDeclarations(t *testing.T) {
	p := testPlugin(t)
	tests := []struct {
		name     string
		src      string
		declared []string // "line: Command names"
		modules  []string
	}{
		{"axiom", lines(`Axiom a b : False.`), []string{"1: Axiom a,b"}, nil},
		{"parameters and conjecture", lines(`Parameters (p : nat) (q r : bool).`, `Conjecture c : 0 = 1.`),
			[]string{"1: Parameter p,q,r", "2: Conjecture c"}, nil},
		{"nested module", lines(`Module M. Module N.`, `#[local] Axiom a : False.`, `End N. End M.`), []string{"2: Axiom a"}, nil},
		{"functor body", lines(`Module Type T. End T.`, `Module F (X : T).`, `Local Axiom a : False.`, `End F.`), []string{"3: Axiom a"}, nil},
		{"module type parameters are an interface", lines(`Class C := c : nat.`, `Module Type U. End U.`, `Module Type T.`, `Parameter p : nat.`, `Axiom a : p = 0.`,
			`Hypothesis h : False.`, `Declare Module X : U.`, `#[global] Declare Instance i : C.`, `End T.`), nil, nil},
		{"section variables are discharged", lines(`Section S.`, `Variable A : Type.`, `Context (x : A).`, `Hypothesis h : A = A.`,
			`Definition d := x.`, `End S.`), nil, nil},
		{"an axiom in a section is an axiom", lines(`Section S.`, `Axiom a : False.`, `End S.`), []string{"2: Axiom a"}, nil},
		{"variables outside a section", lines(`Variable v : nat.`, `Hypotheses h1 h2 : True.`, `Context (c : nat) {d : bool}.`),
			[]string{"1: Variable v", "2: Hypothesis h1,h2", "3: Context c,d"}, nil},
		{"Fail and Succeed leave nothing", lines(`Fail Axiom a : Flase.`, `Succeed Axiom b : False.`), nil, nil},
		{"Declare Instance", lines(`Class C := c : nat.`, `#[global] Declare Instance i : C.`), []string{"2: Declare Instance i"}, nil},
		{"Declare Module", lines(`Module Type T. Parameter p : nat. End T.`, `Declare Module X : T.`), nil, []string{"2: Declare Module X"}},
		{"an unapplied functor's body", lines(`Module Type T. Parameter p : False. End T.`, `Module Type E. End E.`, `Module F (X : E).`,
			`Declare Module M : T.`, `Include T.`, `Lemma junk : False. Admitted.`, `End F.`),
			[]string{"4: Declare Module in a functor M", "5: Include of a module type in a functor T", "6: Admitted in a functor"}, nil},
		{"Admit Obligations in a functor", lines(`Require Import Program.`, `Module Type E. End E.`, `Module F (X : E).`,
			`Program Definition bad : {n : nat | n = 1} := 0.`, `Admit Obligations.`, `End F.`),
			[]string{"5: Admit Obligations in a functor"}, nil},
		{"a functor including its parameter declares nothing", lines(`Module Type T. Parameter p : nat. End T.`, `Module F (X : T).`,
			`Include X.`, `End F.`), nil, nil},
		{"the same outside a functor is left to coqchk", lines(`Module Type T. Parameter p : False. End T.`, `Module M.`,
			`Declare Module N : T.`, `Include T.`, `Lemma junk : False. Admitted.`, `End M.`), nil, []string{"3: Declare Module N"}},
		{"a proof declares nothing", lines(`Theorem t : True. Proof. exact I. Qed.`, `Lemma l : 1 = 1. Proof. reflexivity. Qed.`), nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := compile(t, p, tc.src, Policy{RejectHostIO: true}, nil)
			require.Zero(t, c.exit, c.output)
			require.Equal(t, tc.declared, summarize(c.reading.Declared))
			require.Equal(t, tc.modules, summarize(c.reading.Modules))
		})
	}
}

func summarize(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, strings.TrimSpace(itoa(r.Line)+": "+r.Command+" "+strings.Join(r.Names, ",")))
	}
	return out
}

func itoa(n int) string { return fmtInt(n) }

// TestHeaderDeclarations: what the header makes anew each time it is
// compiled (an inductive, a record, a module, an opaque constant, an
// assumption) is recorded with its line; transparent definitions,
// Require, Import and scopes are not; the same commands in the proof
// (after the header's lines) are not header records.
func TestHeaderDeclarations(t *testing.T) {
	p := testPlugin(t)
	header := lines(`Require Import Arith.`, `Open Scope nat_scope.`, `Definition k := 3.`, `Inductive color := Red | Green.`,
		`Record pt := { x : nat }.`, `Definition o : nat. Proof. exact 3. Qed.`, `Definition t : nat. Proof. exact 3. Defined.`,
		`Module M. End M.`, `Parameter q : nat.`)
	proof := lines(`Inductive shade := Dark.`, `Lemma l : True. Proof. exact I. Qed.`)
	c := compile(t, p, header+proof, Policy{RejectHostIO: true, HeaderLines: 9}, nil)
	require.Zero(t, c.exit, c.output)
	var got []string
	for _, h := range c.reading.Header {
		got = append(got, itoa(h.Line)+": "+h.Command)
	}
	require.Equal(t, []string{"4: an inductive type or record", "5: an inductive type or record", "6: an opaque constant (Qed)",
		"8: a module", "9: an assumption"}, got)
}

// TestOrigins: where axioms that coqchk lists come from (Admitted, Admit
// Obligations, an Include of a module type) is recorded with its line and
// the names it gives, so a rejection names the line; inside a module type
// or under Fail nothing is.
func TestOrigins(t *testing.T) {
	p := testPlugin(t)
	tests := []struct {
		name    string
		src     string
		origins []string // "line: Command names"
	}{
		{"Admitted", lines(`Lemma junk : False.`, `Proof.`, `Admitted.`), []string{"3: Admitted junk"}},
		{"an admitted obligation", lines(`Require Import Program.`, `Program Definition bad : {n : nat | n = 1} := 0.`,
			`Next Obligation.`, `Admitted.`), []string{"4: Admitted bad_obligation_1"}},
		{"Admit Obligations", lines(`Require Import Program.`, `Program Definition bad : {n : nat | n = 1} := 0.`,
			`Admit Obligations.`), []string{"3: Admit Obligations"}},
		{"Include of a module type", lines(`Module Type T. Parameter p : False. Definition d := 1. End T.`, `Module M.`,
			`Include T.`, `End M.`), []string{"3: Include p,d"}},
		{"Fail and module types leave none", lines(`Fail Admitted.`, `Module Type T. Parameter p : nat. End T.`,
			`Module Type U. Include T. End U.`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := compile(t, p, tc.src, Policy{RejectHostIO: true}, nil)
			require.Zero(t, c.exit, c.output)
			require.Equal(t, tc.origins, summarize(c.reading.Origins))
		})
	}
}
