package verify

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/warrenhq/warren/messages"
)

// leanRunCommands run code of the proof while it is elaborated (and so may
// do IO: read or write files, spawn processes): refused under host_io:
// reject. Lean has no sentence terminator, so they are found as tokens
// anywhere outside comments, strings and char literals.
var leanRunCommands = map[string]string{
	"#eval":              "evaluates code at elaboration",
	"#eval!":             "evaluates code at elaboration",
	"run_cmd":            "runs a command elaborator",
	"run_elab":           "runs elaborator code",
	"run_meta":           "runs MetaM code",
	"run_tac":            "runs tactic code written in the proof",
	"initialize":         "declares code to run at initialisation",
	"builtin_initialize": "declares code to run at initialisation",
	"elab":               "defines an elaborator (code run at elaboration)",
	"elab_rules":         "defines an elaborator (code run at elaboration)",
	"simproc":            "defines a simplification procedure (code run at elaboration)",
	"dsimproc":           "defines a simplification procedure (code run at elaboration)",
	"simproc_decl":       "defines a simplification procedure (code run at elaboration)",
	"dsimproc_decl":      "defines a simplification procedure (code run at elaboration)",
}

// leanRunAttributes, inside @[...], register the proof's code to run at
// elaboration or initialisation.
var leanRunAttributes = []string{
	"command_elab", "term_elab", "tactic", "init", "builtin_init", "builtin_command_elab",
	"builtin_term_elab", "builtin_tactic", "simproc", "dsimproc", "env_linter", "builtin_simproc",
}

type leanTok struct {
	text string
	line int
}

// lexLean returns the identifier-like tokens of a Lean source (with a
// leading '#' or trailing '!' kept: #eval, #eval!) and the brackets
// "@[" / "[" / "]", skipping line comments, nested block comments, strings
// (with escapes), raw strings (r"…", r#"…"#) and char literals.
func lexLean(src string) []leanTok {
	var out []leanTok
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case strings.HasPrefix(src[i:], "--"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/-"):
			depth := 0
			for i < len(src) {
				switch {
				case strings.HasPrefix(src[i:], "/-"):
					depth++
					i += 2
				case strings.HasPrefix(src[i:], "-/"):
					depth--
					i += 2
				default:
					if src[i] == '\n' {
						line++
					}
					i++
				}
				if depth == 0 {
					break
				}
			}
		case c == 'r' && rawStringStart(src[i+1:]) >= 0 && (i == 0 || !isLeanIdentByte(src[i-1])):
			hashes := rawStringStart(src[i+1:])
			i += 2 + hashes
			end := "\"" + strings.Repeat("#", hashes)
			j := strings.Index(src[i:], end)
			if j < 0 {
				j = len(src) - i
			}
			line += strings.Count(src[i:i+j], "\n")
			i = min(len(src), i+j+len(end))
		case c == '"':
			i++
			for i < len(src) && src[i] != '"' {
				if src[i] == '\\' {
					i++
				}
				if i < len(src) && src[i] == '\n' {
					line++
				}
				i++
			}
			i++
		case c == '\'' && (i == 0 || !isLeanIdentByte(src[i-1])) && charLiteralLen(src[i:]) > 0:
			i += charLiteralLen(src[i:])
		case c == '@' && i+1 < len(src) && src[i+1] == '[':
			out = append(out, leanTok{"@[", line})
			i += 2
		case c == '[' || c == ']':
			out = append(out, leanTok{string(c), line})
			i++
		case c == '#' || c == '_' || c >= utf8.RuneSelf || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(src) && (isLeanIdentByte(src[j]) || src[j] >= utf8.RuneSelf) {
				j++
			}
			if j < len(src) && src[j] == '!' {
				j++
			}
			out = append(out, leanTok{src[i:j], line})
			i = j
		default:
			i++
		}
	}
	return out
}

func isLeanIdentByte(b byte) bool {
	return b == '_' || b == '\'' || b == '.' || b == '!' || b == '?' ||
		('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9')
}

// rawStringStart: after an 'r', the number of '#' before a '"', or -1.
func rawStringStart(s string) int {
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n < len(s) && s[n] == '"' {
		return n
	}
	return -1
}

// charLiteralLen is the length of a char literal at s ('a', '\n', '"'), or 0.
func charLiteralLen(s string) int {
	if len(s) >= 4 && s[1] == '\\' && s[3] == '\'' {
		return 4
	}
	if len(s) < 3 {
		return 0
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	if 1+size < len(s) && s[1+size] == '\'' && s[1] != '\\' {
		return 2 + size
	}
	return 0
}

// leanHostIO rejects, under host_io: reject, a proof that runs its own
// code at elaboration; nil when there is none or the policy allows it.
func leanHostIO(p *Profile, proof string) *messages.Verdict {
	if p.HostIO != HostIOReject {
		return nil
	}
	var found []string
	toks := lexLean(proof)
	depth := 0
	for _, t := range toks {
		switch {
		case t.text == "@[":
			depth = 1
		case depth > 0 && t.text == "[":
			depth++
		case depth > 0 && t.text == "]":
			depth--
		case depth > 0 && slices.Contains(leanRunAttributes, t.text):
			found = append(found, fmt.Sprintf("line %d: @[%s] (registers code run at elaboration)", t.line, t.text))
		case leanRunCommands[t.text] != "":
			found = append(found, fmt.Sprintf("line %d: %s (%s)", t.line, t.text, leanRunCommands[t.text]))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return reject(messages.ReasonDisallowedCommand,
		"the proof runs its own code at elaboration, which the profile forbids (host_io: reject):\n"+strings.Join(found, "\n"))
}
