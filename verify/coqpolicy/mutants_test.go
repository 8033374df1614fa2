package coqpolicy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// forbidden are host commands a mutant inserts; each writes leak* when
// it runs (or reads a host file), so a mutant that slipped through shows.
var forbidden = []struct{ src, command string }{
	{`Redirect "leak" Print nat.`, "Redirect"},
	{`Load "x".`, "Load"},
	{`Time Redirect "leak1" Check I.`, "Redirect"},
	{`Fail Load "x".`, "Load"},
	{`Redirect "leak2" #[local] Definition leak := 0.`, "Redirect"},
	{`Timeout 10 Redirect "leak3" Check I.`, "Redirect"},
	{`Cd "sub".`, "Cd"},
	{`Add LoadPath "." as Here.`, "Add LoadPath"},
	{`Add ML Path ".".`, "Add ML Path"},
	{`Declare ML Module "coq-core.plugins.ltac2".`, `Declare ML Module "coq-core.plugins.ltac2"`},
	{`Print Universes "leak4".`, "Print Universes to a file"},
	{`Extraction "leak5.ml" nat.`, `Extraction "file"`},
	{`Separate Extraction nat.`, "Separate Extraction"},
	{`Set NativeCompute Profiling.`, "Set NativeCompute Profiling"},
	{`Set Dump Arith "leak6".`, "Set Dump Arith"},
	{`Locate File "/etc/passwd".`, "Locate File"},
	{`From Top Extra Dependency "x.v".`, "Extra Dependency"},
	{`Remove LoadPath ".".`, "Remove LoadPath"},
	{`Extraction Library Datatypes.`, "Extraction Library"},
	{`Extraction TestCompile nat.`, "Extraction TestCompile"},
}

// declarations are assumptions a mutant inserts; outside a module type
// each is recorded as declared at its line, or the mutant does not
// compile (an assumption inside a proof).
var declarations = []struct{ src, command, name string }{
	{`Axiom leak_a : False.`, "Axiom", "leak_a"},
	{`Parameter leak_p : nat.`, "Parameter", "leak_p"},
	{`Conjecture leak_c : 0 = 1.`, "Conjecture", "leak_c"},
	{`#[local] Axiom leak_l : False.`, "Axiom", "leak_l"},
}

// inModuleType reports whether a sentence inserted after sentences is
// inside a module type (where an assumption is an interface).
func inModuleType(sentences []string) bool {
	var open []bool // per open module, module type or section: a module type?
	for _, s := range sentences {
		switch {
		case strings.HasPrefix(s, "Module Type "):
			open = append(open, true)
		case strings.HasPrefix(s, "Module "), strings.HasPrefix(s, "Section "):
			open = append(open, false)
		case strings.HasPrefix(s, "End "):
			open = open[:len(open)-1]
		}
	}
	return slices.Contains(open, true)
}

// baseProofs are accepted proofs, sentence by sentence, with sections,
// modules, a module type, bullets, braces, goal selectors and notations
// whose keywords hold "(*" and "*)". They hold no comments or strings, so
// a command inserted anywhere in them is a command or a syntax error.
var baseProofs = [][]string{
	{"Require Extraction.", "Notation \"x #(* y\" := (x + y) (at level 50).", "Module M.", "Section S.", "Variable n : nat.",
		"Definition d := n #(* 1.", "Lemma l : d = n + 1.", "Proof.", "unfold d.", "reflexivity.", "Qed.", "End S.", "End M.",
		"Theorem t : forall n, M.d n = n + 1.", "Proof.", "intros.", "apply M.l.", "Qed."},
	{"Require Extraction.", "Notation \"x *) y\" := (x * y) (at level 40).", "Module Type T.", "Parameter p : nat.", "End T.",
		"Module F (X : T).", "Definition q := X.p *) 2.", "End F.", "Theorem t : True /\\ 1 = 1.", "Proof.", "split.", "-", "exact I.",
		"-", "{", "reflexivity.", "}", "Qed."},
	{"Require Extraction.", "Tactic Notation \"go\" \"#(*\" := reflexivity.", "Goal 2 = 2 /\\ 3 = 3.", "split.", "1: go #(*.",
		"all: go #(*.", "Qed.", "Definition e := 5.", "Theorem t : e = 5.", "Proof.", "go #(*.", "Qed."},
}

func mutantCount(def int) int {
	if n, err := strconv.Atoi(os.Getenv("WARREN_COQ_MUTANTS")); err == nil && n > 0 {
		return n
	}
	return def
}

// TestInsertedCommandsAreRefused inserts forbidden commands into accepted
// proofs: at a sentence boundary (anywhere: in a section, a module, a
// functor, a proof, after a bullet) the plugin refuses exactly that
// command at its line; after any other word of the proof the mutant does
// not compile cleanly (refused or a syntax error). No mutant leaves a file
// behind. The base proofs compile cleanly: the control. WARREN_COQ_MUTANTS
// sets how many mutants of each kind (default 24). An assumption inserted
// at a sentence boundary outside a module type is recorded as declared at
// its line, or the mutant does not compile.
func TestInsertedCommandsAreRefused(t *testing.T) {
	p := testPlugin(t)
	files := map[string]string{"x.v": "Definition loaded := 1.\n", "sub/.keep": ""}
	for i, base := range baseProofs {
		t.Run(fmt.Sprintf("control %d", i), func(t *testing.T) {
			t.Parallel()
			c := compile(t, p, strings.Join(base, "\n")+"\n", Policy{RejectHostIO: true}, files)
			require.Zero(t, c.exit, c.output)
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := mutantCount(24)
	for i := range n {
		base := baseProofs[rng.IntN(len(baseProofs))]
		cmd := forbidden[rng.IntN(len(forbidden))]
		at := 1 + rng.IntN(len(base)) // after the Require that Extraction needs
		sentences := append(append(append([]string{}, base[:at]...), cmd.src), base[at:]...)
		src := strings.Join(sentences, "\n") + "\n"
		t.Run(fmt.Sprintf("boundary %d", i), func(t *testing.T) {
			t.Parallel()
			c := compile(t, p, src, Policy{RejectHostIO: true}, files)
			require.NotZero(t, c.exit, src)
			require.NotNil(t, c.reading.Refused, "%s\n%s", src, c.output)
			require.Equal(t, cmd.command, c.reading.Refused.Command)
			require.Equal(t, at+1, c.reading.Refused.Line)
			requireNoLeak(t, c)
		})
	}
	for i := range n {
		base := baseProofs[rng.IntN(len(baseProofs))]
		d := declarations[rng.IntN(len(declarations))]
		at := 1 + rng.IntN(len(base))
		for inModuleType(base[:at]) {
			at = 1 + rng.IntN(len(base))
		}
		sentences := append(append(append([]string{}, base[:at]...), d.src), base[at:]...)
		src := strings.Join(sentences, "\n") + "\n"
		t.Run(fmt.Sprintf("declaration %d", i), func(t *testing.T) {
			t.Parallel()
			c := compile(t, p, src, Policy{RejectHostIO: true}, files)
			if c.exit != 0 {
				return // not a proof that could be accepted
			}
			require.Contains(t, summarize(c.reading.Declared), fmt.Sprintf("%d: %s %s", at+1, d.command, d.name), src)
		})
	}
	for i := range n {
		words := strings.Fields(strings.Join(baseProofs[rng.IntN(len(baseProofs))], "\n"))
		cmd := forbidden[rng.IntN(len(forbidden))]
		at := 2 + rng.IntN(len(words)-2)
		src := strings.Join(words[:at], " ") + " " + cmd.src + " " + strings.Join(words[at:], " ") + "\n"
		t.Run(fmt.Sprintf("word %d", i), func(t *testing.T) {
			t.Parallel()
			c := compile(t, p, src, Policy{RejectHostIO: true}, files)
			require.NotZero(t, c.exit, "a mutant compiled cleanly:\n%s", src)
			requireNoLeak(t, c)
		})
	}
}

func requireNoLeak(t *testing.T, c compiled) {
	t.Helper()
	entries, err := os.ReadDir(c.dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), "leak"), "%s was written", e.Name())
	}
}
