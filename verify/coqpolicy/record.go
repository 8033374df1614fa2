package coqpolicy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Kind is what a record says.
type Kind string

// Record kinds (warren_policy.ml writes them).
const (
	// KindReady: the hook is set; written when the plugin loads.
	KindReady Kind = "ready"
	// KindRefused: a command refused under host_io: reject; coqc stopped
	// there.
	KindRefused Kind = "refused"
	// KindDeclared: an assumption the proof declares (outside a section
	// and a module type, not under Fail or Succeed).
	KindDeclared Kind = "declared"
	// KindModule: a Declare Module outside a module type (its fields are
	// axioms when its type has parameters; coqchk's summary says which).
	KindModule Kind = "module"
	// KindHeader: the task's header declares something made anew each
	// time it is compiled (an inductive type, a module, an opaque
	// constant, an assumption), so the statement, elaborated with its own
	// copy of the header, can never name the proof's: the task is invalid.
	KindHeader Kind = "header"
	// KindOrigin: where axioms coqchk's summary lists come from (Admitted,
	// Admit Obligations, an Include of a module type), so a rejection
	// names their line. It decides nothing: the summary does.
	KindOrigin Kind = "origin"
)

// Record is one line of the plugin's record file.
type Record struct {
	Kind Kind `json:"kind"`
	// Line is the line of the command in the compiled file, 1-based.
	Line int `json:"line,omitempty"`
	// Command is the command as Coq parsed it, e.g. "Load", "Axiom",
	// `Declare ML Module "p"`.
	Command string `json:"command,omitempty"`
	// Why a refused command is refused.
	Why string `json:"why,omitempty"`
	// Names a declaration introduces.
	Names []string `json:"names,omitempty"`
}

// Reading is what the plugin recorded of one compile.
type Reading struct {
	// Ready: the plugin loaded and set its hook before the proof.
	Ready bool
	// Refused is the command that stopped the compile, if any.
	Refused *Record
	// Declared are the assumptions the proof declares.
	Declared []Record
	// Modules are its Declare Module commands.
	Modules []Record
	// Header are the header's generative or opaque declarations.
	Header []Record
	// Origins name the lines of axioms the summary lists that no
	// declaration record names.
	Origins []Record
}

// maxRecordLine bounds one record (a declaration's names included).
const maxRecordLine = 1 << 20

// Parse reads a record file. Anything that is not a known record is an
// error: the file is written by the plugin alone.
func Parse(data []byte) (*Reading, error) {
	r := &Reading{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxRecordLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec Record
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("policy record %d: %w", n, err)
		}
		if err := r.add(rec); err != nil {
			return nil, fmt.Errorf("policy record %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("policy records: %w", err)
	}
	return r, nil
}

func (r *Reading) add(rec Record) error {
	switch rec.Kind {
	case KindReady:
		r.Ready = true
	case KindRefused:
		if rec.Command == "" {
			return fmt.Errorf("a refusal names no command")
		}
		if r.Refused == nil {
			r.Refused = &rec
		}
	case KindDeclared:
		r.Declared = append(r.Declared, rec)
	case KindModule:
		r.Modules = append(r.Modules, rec)
	case KindHeader:
		r.Header = append(r.Header, rec)
	case KindOrigin:
		r.Origins = append(r.Origins, rec)
	default:
		return fmt.Errorf("unknown kind %q", rec.Kind)
	}
	return nil
}

// Describe says what a record is for a verdict's messages, with its line
// as lineOf names it.
func (rec Record) Describe(lineOf func(int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", lineOf(rec.Line), rec.Command)
	if len(rec.Names) > 0 {
		fmt.Fprintf(&b, " %s", strings.Join(rec.Names, ", "))
	}
	if rec.Why != "" {
		fmt.Fprintf(&b, " (%s)", rec.Why)
	}
	return b.String()
}
