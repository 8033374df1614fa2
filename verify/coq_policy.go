package verify

import (
	"fmt"
	"slices"
	"strings"
)

// coqFinding is one policy violation found in a proof's source.
type coqFinding struct {
	line    int
	command string // the command as written, prefixes stripped, e.g. "Add LoadPath"
	why     string
}

func (f coqFinding) String() string {
	return fmt.Sprintf("line %d: %s (%s)", f.line, f.command, f.why)
}

// coqScan is what the policy scan of a proof found.
type coqScan struct {
	hostIO   []coqFinding // commands outside host_io: reject
	declared []coqFinding // axiom declarations (Axiom, Parameter, Conjecture, Declare Module, assumptions outside sections)
	blocks   []string     // open Section / Module blocks, innermost last
}

// coqPrefixes are sentence prefixes that modify the command after them:
// locality, attributes' legacy keywords and control commands. They are
// stripped, repeatedly, before the command is classified.
var coqPrefixes = []string{
	"Local", "Global", "Export", "Polymorphic", "Monomorphic", "Cumulative", "NonCumulative",
	"Private", "Program", "Time", "Fail", "Succeed", "Instructions", "Profile",
}

// scanCoq classifies every sentence of a proof. It never runs Coq: it is
// the lexer-level scan of docs/verify.md, built to see more sentence heads
// than coqc does (see lexCoqSentences), never fewer.
func scanCoq(src string, plugins []string) *coqScan {
	s := &coqScan{}
	for _, sent := range lexCoqSentences(src) {
		for _, cmd := range coqCommands(sent.tokens) {
			s.classify(cmd, plugins)
			s.track(cmd)
		}
	}
	return s
}

// coqSectionAssumptions are assumptions that a closed section discharges
// (they become arguments); anywhere else (top level, a module, a functor
// body, a module type) they are axioms or module-type parameters.
var coqSectionAssumptions = []string{"Variable", "Variables", "Hypothesis", "Hypotheses", "Context"}

// track follows the Section / Module / Module Type blocks, so that a
// section assumption is told from one outside any section.
func (s *coqScan) track(cmd []coqToken) {
	if len(cmd) < 2 || cmd[0].str {
		return
	}
	defines := false // the command holds ":=" (lexed as ':' then '=')
	for i := 1; i < len(cmd); i++ {
		defines = defines || (!cmd[i-1].str && !cmd[i].str && cmd[i-1].text == ":" && cmd[i].text == "=")
	}
	switch {
	case cmd[0].text == "Section":
		s.blocks = append(s.blocks, "Section")
	case cmd[0].text == "Module" && !defines:
		s.blocks = append(s.blocks, "Module") // Module, Module Type, functors; ":=" forms open nothing
	case cmd[0].text == "End" && len(s.blocks) > 0:
		s.blocks = s.blocks[:len(s.blocks)-1]
	}
}

func (s *coqScan) inSection() bool {
	return len(s.blocks) > 0 && s.blocks[len(s.blocks)-1] == "Section"
}

// coqCommands strips a sentence's prefixes and returns the command after
// them, plus the commands a control prefix carries (Redirect and Timeout
// are themselves reported, and their argument command is still a command).
func coqCommands(toks []coqToken) [][]coqToken {
	var out [][]coqToken
	for len(toks) > 0 {
		t := toks[0]
		switch {
		case !t.str && (t.text == "#" && len(toks) > 1 && toks[1].text == "["):
			toks = skipBracket(toks[1:])
		case !t.str && slices.Contains(coqPrefixes, t.text):
			toks = toks[1:]
		case !t.str && (t.text == "Redirect" || t.text == "Timeout"):
			// Reported, then the carried command is classified too.
			out = append(out, toks[:1])
			toks = toks[1:]
			if len(toks) > 0 && (toks[0].str || isDigits(toks[0].text)) {
				for len(toks) > 0 && isDigits(toks[0].text) {
					toks = toks[1:]
				}
				if len(toks) > 0 && toks[0].str {
					toks = toks[1:]
				}
			}
		case !t.str && isSelectorPunct(t.text):
			toks = toks[1:] // bullets, braces, goal selectors "1:", "all:", "[H]:"
		case !t.str && (t.text == "all" || t.text == "par") && len(toks) > 1 && toks[1].text == ":":
			toks = toks[2:]
		case !t.str && t.text == "[" && len(toks) > 3 && toks[2].text == "]" && toks[3].text == ":":
			toks = toks[4:]
		default:
			return append(out, toks)
		}
	}
	return out
}

func isSelectorPunct(s string) bool {
	return s == "-" || s == "+" || s == "*" || s == "{" || s == "}" || s == ":" || s == "!" || s == "," || isDigits(s)
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// skipBracket drops a balanced [...] group (toks[0] is "[").
func skipBracket(toks []coqToken) []coqToken {
	depth := 0
	for i, t := range toks {
		if t.str {
			continue
		}
		switch t.text {
		case "[":
			depth++
		case "]":
			depth--
			if depth == 0 {
				return toks[i+1:]
			}
		}
	}
	return nil
}

// head returns the first n words of a command (identifiers only).
func head(cmd []coqToken, n int) []string {
	var w []string
	for _, t := range cmd {
		if len(w) == n || t.str {
			break
		}
		w = append(w, t.text)
	}
	return w
}

func hasPrefixWords(cmd []coqToken, words ...string) bool {
	h := head(cmd, len(words))
	return slices.Equal(h, words)
}

func hasString(cmd []coqToken) bool {
	return slices.ContainsFunc(cmd, func(t coqToken) bool { return t.str })
}

// coqHostCommands are the commands host_io: reject refuses, by their
// leading words, and why (docs/verify.md has the same table).
var coqHostCommands = []struct {
	words []string
	why   string
}{
	{[]string{"Load"}, "reads a .v file from the host"},
	{[]string{"Redirect"}, "writes a file"},
	{[]string{"Cd"}, "changes the working directory"},
	{[]string{"Drop"}, "leaves to the OCaml toplevel"},
	{[]string{"Add", "LoadPath"}, "changes the load path to a host directory"},
	{[]string{"Add", "Rec", "LoadPath"}, "changes the load path to a host directory"},
	{[]string{"Remove", "LoadPath"}, "changes the load path"},
	{[]string{"Add", "ML", "Path"}, "changes the native plugin path to a host directory"},
	{[]string{"Add", "Rec", "ML", "Path"}, "changes the native plugin path to a host directory"},
	{[]string{"Extraction"}, "extraction writes files or runs the OCaml compiler"},
	{[]string{"Recursive", "Extraction"}, "extraction writes files or runs the OCaml compiler"},
	{[]string{"Separate", "Extraction"}, "writes one file per module"},
	{[]string{"Set", "Extraction"}, "configures extraction (output directory)"},
	{[]string{"Unset", "Extraction"}, "configures extraction (output directory)"},
	{[]string{"Set", "NativeCompute"}, "native_compute profiling writes files"},
	{[]string{"Unset", "NativeCompute"}, "native_compute profiling writes files"},
	{[]string{"Timeout"}, "the verdict would depend on the host's speed"},
	{[]string{"Set", "Default", "Timeout"}, "the verdict would depend on the host's speed"},
}

// coqAxiomCommands declare assumptions wherever they appear (a module, a
// functor body, a module type): declared_axioms: reject refuses them.
var coqAxiomCommands = []string{"Axiom", "Axioms", "Parameter", "Parameters", "Conjecture", "Conjectures"}

func (s *coqScan) classify(cmd []coqToken, plugins []string) {
	if len(cmd) == 0 || cmd[0].str {
		return
	}
	line := cmd[0].line
	add := func(dst *[]coqFinding, n int, why string) {
		*dst = append(*dst, coqFinding{line: line, command: strings.Join(head(cmd, n), " "), why: why})
	}
	for _, hc := range coqHostCommands {
		if hasPrefixWords(cmd, hc.words...) {
			add(&s.hostIO, len(hc.words), hc.why)
			return
		}
	}
	switch {
	case hasPrefixWords(cmd, "Print", "Universes"), hasPrefixWords(cmd, "Print", "Sorted", "Universes"):
		if hasString(cmd) {
			add(&s.hostIO, 3, "writes the universe graph to a file")
		}
	case hasPrefixWords(cmd, "Declare", "ML", "Module"):
		for _, t := range cmd[3:] {
			if t.str && !slices.Contains(plugins, t.text) {
				s.hostIO = append(s.hostIO, coqFinding{line: line, command: fmt.Sprintf("Declare ML Module %q", t.text),
					why: "loads a native plugin that is not on the profile's coq.plugins allow-list"})
			}
		}
	case hasPrefixWords(cmd, "Declare", "Module"):
		add(&s.declared, 2, "declares a module whose fields are axioms")
	case slices.Contains(coqAxiomCommands, cmd[0].text):
		add(&s.declared, 1, "declares "+strings.Join(declaredNames(cmd[1:]), ", "))
	case slices.Contains(coqSectionAssumptions, cmd[0].text) && !s.inSection():
		add(&s.declared, 1, "declares "+strings.Join(declaredNames(cmd[1:]), ", ")+" outside a section")
	}
}

// declaredNames lists the names an Axiom-like command declares: the
// identifiers before the first ':' (Axiom a b : T), or those opening each
// parenthesised group (Axiom (a : A) (b : B)).
func declaredNames(toks []coqToken) []string {
	var names []string
	depth, inGroup := 0, false
	for _, t := range toks {
		switch {
		case t.str:
		case t.text == "(":
			depth++
			inGroup = depth == 1
		case t.text == ")":
			depth--
		case t.text == ":":
			if depth == 0 {
				return orAssumption(names)
			}
			inGroup = false
		case (depth == 0 || inGroup) && isCoqIdentStart([]rune(t.text)[0]):
			names = append(names, t.text)
		}
	}
	return orAssumption(names)
}

func orAssumption(names []string) []string {
	if len(names) == 0 {
		return []string{"an assumption"}
	}
	return names
}

// findingsText lists findings one a line, for a verdict's messages.
func findingsText(fs []coqFinding) string {
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}
