package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/warrenhq/warren/messages"
)

// leanReportVersion is the report schema warren-lean-check writes.
const leanReportVersion = 1

// maxLeanReport bounds the report file.
const maxLeanReport = 1 << 20

// leanReport is the one JSON object warren-lean-check writes to the file
// named on its command line (docs/verify.md "Lean", the report contract).
// Every field must be present: a report missing one is not trusted.
type leanReport struct {
	Version int `json:"version"`
	// OK: the checker ran every check; false means it could not (an olean
	// it could not read, an import it could not load), see Error.
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	// ImportsCover: the import closure of Proof.olean holds every module
	// Target.olean imports (the header's), so every constant the statement
	// names is in the environment the proof was replayed on, unchanged (a
	// proof cannot redeclare it: the replay refuses duplicates).
	ImportsCover bool `json:"imports_cover"`
	// ReplayError is the kernel's (or replay's) rejection of a constant of
	// Proof.olean; empty when every constant was re-checked.
	ReplayError string `json:"replay_error"`
	// TheoremFound: Proof.olean itself declares the theorem.
	TheoremFound bool `json:"theorem_found"`
	// Kind is the theorem's constant kind (theorem, axiom, def, opaque...).
	Kind      string `json:"kind"`
	IsTheorem bool   `json:"is_theorem"`
	// TypeMatches: the theorem's type and universe parameters equal the
	// target's (Expr ==, after the kernel replay).
	TypeMatches bool `json:"type_matches"`
	// Axioms the theorem depends on, transitively, in the replayed
	// environment.
	Axioms []string `json:"axioms"`
}

// leanReportFields are the report's keys; all required.
var leanReportFields = []string{"version", "ok", "error", "imports_cover", "replay_error",
	"theorem_found", "kind", "is_theorem", "type_matches", "axioms"}

// parseLeanReport decodes exactly one report object with exactly the
// schema's fields and version.
func parseLeanReport(data []byte) (*leanReport, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("report is not one JSON object: %w", err)
	}
	for _, f := range leanReportFields {
		if _, ok := keys[f]; !ok {
			return nil, fmt.Errorf("report lacks %q", f)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r leanReport
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("report has data after its object")
	}
	if r.Version != leanReportVersion {
		return nil, fmt.Errorf("report version %d, want %d (rebuild warren-lean-check from deploy/lean)", r.Version, leanReportVersion)
	}
	if r.Axioms == nil {
		return nil, errors.New(`report "axioms" is null`)
	}
	return &r, nil
}

// leanReportVerdict decides a lean-file check from step 3 alone: the
// checker's exit and its report file. Nothing any step printed can make it
// accept; output only goes into rejection messages.
func leanReportVerdict(p *Profile, theorem string, out *stepOutput, data []byte, readErr error) *messages.Verdict {
	if out.res.ExitCode != 0 {
		return reject(messages.ReasonCrash, fmt.Sprintf("warren-lean-check exited %d\n%s", out.res.ExitCode, out.output()))
	}
	if readErr != nil {
		return reject(messages.ReasonCrash, "warren-lean-check left no usable report: "+readErr.Error()+"\n"+out.output())
	}
	r, err := parseLeanReport(data)
	if err != nil {
		return reject(messages.ReasonCrash, "warren-lean-check: "+err.Error()+"\n"+out.output())
	}
	switch {
	case !r.OK:
		return reject(messages.ReasonCrash, "warren-lean-check could not check the proof: "+r.Error)
	case !r.ImportsCover:
		return reject(messages.ReasonStatementMismatch, "the compiled proof does not import every module the header imports (e.g. it starts with prelude)")
	case r.ReplayError != "":
		return reject(messages.ReasonUnsafeFlag, "the kernel rejected a declaration the elaborator had accepted (kernel check bypassed):\n"+r.ReplayError)
	case !r.TheoremFound:
		return reject(messages.ReasonStatementMismatch, fmt.Sprintf("the proof declares no %s", theorem))
	case !r.IsTheorem:
		return reject(messages.ReasonStatementMismatch, fmt.Sprintf("%s is a %s, not a theorem", theorem, r.Kind))
	case !r.TypeMatches:
		return reject(messages.ReasonStatementMismatch, fmt.Sprintf("%s does not have the expected type (compared with the statement elaborated on its own)", theorem))
	}
	var axioms []string // nil when none, as the Coq checker reports it
	if len(r.Axioms) > 0 {
		axioms = slices.Compact(slices.Sorted(slices.Values(r.Axioms)))
	}
	v := leanAxiomVerdict(p, axioms)
	if v.Accepted {
		v.Messages = "kernel replay passed; axioms: [" + strings.Join(v.Axioms, ", ") + "]"
	}
	return v
}
