package verify

import (
	"fmt"
	"github.com/warrenhq/warren/messages"
	"strings"
)

// assumptions is what `Print Assumptions` reported for the check constant.
// Names are as Coq printed them: the shortest suffix that resolves.
type assumptions struct {
	axioms []string
	unsafe []string // constants relying on disabled guard/positivity/universe checks
}

var coqQualid = messages.NewLazyRegexp(`^[\p{L}_][\p{L}\p{N}_']*(\.[\p{L}_][\p{L}\p{N}_']*)*$`)

var unsafeSuffixes = []string{
	" relies on an unsafe hierarchy.",
	" is assumed to be guarded.",
	" is assumed to be positive.",
}

// parsePrintAssumptions reads the Redirect file of step 2. Anything it
// does not recognise is an error: the caller rejects (fail closed).
func parsePrintAssumptions(out string) (*assumptions, error) {
	a := &assumptions{}
	lines := strings.Split(out, "\n")
	if strings.TrimSpace(out) == "Closed under the global context" {
		return a, nil
	}
	for _, l := range lines {
		switch {
		case l == "", l == "Axioms:", strings.HasPrefix(l, " "):
			continue // blank, header, continuation of a type
		}
		if s, ok := unsafeLine(l); ok {
			a.unsafe = append(a.unsafe, s)
			continue
		}
		name, _, _ := strings.Cut(l, " : ")
		if !coqQualid.MatchString(name) {
			return nil, fmt.Errorf("unexpected line in the assumption audit: %q", l)
		}
		a.axioms = append(a.axioms, name)
	}
	if len(a.axioms) == 0 && len(a.unsafe) == 0 {
		return nil, fmt.Errorf("empty or unrecognised assumption audit: %q", out)
	}
	return a, nil
}

func unsafeLine(l string) (string, bool) {
	for _, s := range unsafeSuffixes {
		if name, ok := strings.CutSuffix(l, s); ok && coqQualid.MatchString(name) {
			return l, true
		}
	}
	return "", false
}

// coqchkSummary is coqchk -o's CONTEXT SUMMARY: fully qualified names.
type coqchkSummary struct {
	theory   string
	axioms   []string
	sections map[string][]string // every other section: must all be empty
}

const (
	coqchkTheory = "Theory"
	coqchkAxioms = "Axioms"
)

// parseCoqchkSummary reads coqchk's stdout (coqchk runs no proof code, so
// all of it is trusted; only the names inside come from the proof).
func parseCoqchkSummary(out string) (*coqchkSummary, error) {
	_, body, ok := strings.Cut(out, "CONTEXT SUMMARY\n")
	if !ok {
		return nil, fmt.Errorf("coqchk printed no context summary")
	}
	s := &coqchkSummary{sections: map[string][]string{}}
	cur := ""
	seenTheory := false
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || strings.Trim(t, "=") == "":
			continue
		case strings.HasPrefix(l, "* "):
			title, rest, ok := strings.Cut(strings.TrimPrefix(l, "* "), ":")
			if !ok {
				return nil, fmt.Errorf("unexpected coqchk summary line %q", l)
			}
			cur = title
			rest = strings.TrimSpace(rest)
			if _, dup := s.sections[cur]; dup || (cur == coqchkTheory && seenTheory) {
				return nil, fmt.Errorf("coqchk summary repeats section %q", cur)
			}
			switch {
			case cur == coqchkTheory:
				s.theory, seenTheory = rest, true
			case rest == "<none>" || rest == "":
				if cur != coqchkAxioms {
					s.sections[cur] = nil
				}
			default:
				return nil, fmt.Errorf("unexpected coqchk summary line %q", l)
			}
		case strings.HasPrefix(l, "    ") && cur != "" && cur != coqchkTheory:
			if !coqQualid.MatchString(t) {
				return nil, fmt.Errorf("unexpected name %q in coqchk section %q", t, cur)
			}
			if cur == coqchkAxioms {
				s.axioms = append(s.axioms, t)
			} else {
				s.sections[cur] = append(s.sections[cur], t)
			}
		default:
			return nil, fmt.Errorf("unexpected coqchk summary line %q", l)
		}
	}
	if !seenTheory {
		return nil, fmt.Errorf("coqchk summary has no Theory line")
	}
	return s, nil
}

// unsafe describes why the checked context is unsound, or returns "".
// Every non-axiom section (type-in-type, unsafe fixpoints, assumed
// positivity, and any section a newer coqchk adds) must be empty, and Set
// must be predicative.
func (s *coqchkSummary) unsafe() string {
	var probs []string
	if s.theory != "Set is predicative" {
		probs = append(probs, "theory: "+s.theory)
	}
	for title, names := range s.sections {
		if len(names) > 0 {
			probs = append(probs, title+": "+strings.Join(names, ", "))
		}
	}
	if len(probs) == 0 {
		return ""
	}
	return "coqchk: the checked context disables kernel checks: " + strings.Join(probs, "; ")
}
