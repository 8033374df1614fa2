package verify

import (
	"fmt"
	"strings"

	"github.com/warrenhq/warren/messages"
)

// leanUnsafe are source fragments that turn kernel checking off or around.
// Rejecting them is defence in depth, not the guarantee (see docs/verify.md).
var leanUnsafe = []string{"debug.skipKernelTC", "addDeclWithoutChecking", "implemented_by", "@[extern"}

// leanAxiomsRe matches a #print axioms answer for one constant.
var leanAxiomsRe = messages.NewLazyRegexp(`(?s)^'([^']+)' (?:depends on axioms: \[(.*)\]|does not depend on any axioms)$`)

// parseLeanAxioms finds the #print axioms answer about name among info
// messages. Exactly one must exist.
func parseLeanAxioms(msgs []replMessage, name string) ([]string, error) {
	var found []string
	n := 0
	for _, m := range msgs {
		sm := leanAxiomsRe.FindStringSubmatch(strings.TrimSpace(m.Data))
		if m.Severity != "info" || sm == nil || sm[1] != name {
			continue
		}
		n++
		found = nil
		for _, a := range strings.Split(sm[2], ",") {
			if a = strings.TrimSpace(a); a != "" {
				found = append(found, a)
			}
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("expected one axiom report for %s, got %d", name, n)
	}
	return found, nil
}

// leanAxiomVerdict decides from the audited axioms.
func leanAxiomVerdict(p *Profile, axioms []string) *messages.Verdict {
	var bad []string
	for _, a := range axioms {
		if a == "sorryAx" {
			return &messages.Verdict{Reason: messages.ReasonIncomplete, Axioms: axioms, Messages: "the proof uses sorry"}
		}
		if !p.allowed(a) {
			bad = append(bad, a)
		}
	}
	if len(bad) > 0 {
		return &messages.Verdict{Reason: messages.ReasonDisallowedAxiom, Axioms: axioms,
			Messages: "depends on axioms outside the profile's allow-list: " + strings.Join(bad, ", ")}
	}
	return &messages.Verdict{Accepted: true, Axioms: axioms}
}

// leanUnsafeSource rejects proofs that name a kernel bypass.
func leanUnsafeSource(proof string) *messages.Verdict {
	for _, u := range leanUnsafe {
		if strings.Contains(proof, u) {
			return reject(messages.ReasonUnsafeFlag, "the proof uses "+u)
		}
	}
	return nil
}

// incomplete reports sorry in a command response.
func incomplete(r *replResponse) bool {
	if len(r.Sorries) > 0 {
		return true
	}
	for _, m := range r.Messages {
		if m.Severity == "warning" && (strings.Contains(m.Data, "declaration uses 'sorry'") || strings.Contains(m.Data, "declaration uses `sorry`")) {
			return true
		}
	}
	return false
}
