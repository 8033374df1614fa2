package verify

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// coqSentence is one sentence of a Coq source as the policy scan sees it:
// comments removed, strings replaced by a placeholder token, and the line
// (1-based) where its first token starts.
type coqSentence struct {
	line   int
	tokens []coqToken
}

// coqToken is an identifier or keyword (text), a string literal (str set,
// text holds its contents) or a single punctuation character.
type coqToken struct {
	text string
	str  bool
	line int
}

// lexCoqSentences splits src into sentences. It errs on the side of more
// sentences than coqc sees: a '.' ends a sentence unless an identifier
// character follows it directly (Coq.Init.Nat, 1.5), so `Qed.(*c*)Load`
// and `x.(f)` split; a bullet (-, +, *) or brace that opens a sentence is
// its own sentence. Splitting too often can only expose more command
// heads, never hide one. Comments nest and hold strings, as in coqc
// ("*)" inside a string in a comment does not end it); strings escape '"'
// by doubling it. An unterminated comment or string ends the source (coqc
// refuses it anyway).
func lexCoqSentences(src string) []coqSentence {
	var (
		out  []coqSentence
		cur  []coqToken
		line = 1
		i    = 0
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, coqSentence{line: cur[0].line, tokens: cur})
			cur = nil
		}
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == '(' && i+1 < len(src) && src[i+1] == '*':
			i = skipCoqComment(src, i, &line)
		case c == '"':
			start := line
			s, next := readCoqString(src, i, &line)
			cur = append(cur, coqToken{text: s, str: true, line: start})
			i = next
		case c == '.':
			r, _ := utf8.DecodeRuneInString(src[i+1:])
			if i+1 < len(src) && isCoqIdentRune(r) {
				cur = append(cur, coqToken{text: ".", line: line})
			} else {
				flush()
			}
			i++
		case c < utf8.RuneSelf && (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'):
			i++
		case (c == '-' || c == '+' || c == '*' || c == '{' || c == '}') && len(cur) == 0:
			// A bullet or brace at a sentence start is a sentence of its own.
			i++
		default:
			r, size := utf8.DecodeRuneInString(src[i:])
			if unicode.IsSpace(r) {
				i += size
				continue
			}
			if isCoqIdentStart(r) {
				j := i + size
				for j < len(src) {
					r2, s2 := utf8.DecodeRuneInString(src[j:])
					if !isCoqIdentRune(r2) {
						break
					}
					j += s2
				}
				cur = append(cur, coqToken{text: src[i:j], line: line})
				i = j
				continue
			}
			cur = append(cur, coqToken{text: src[i : i+size], line: line})
			i += size
		}
	}
	flush()
	return out
}

func isCoqIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isCoqIdentRune(r rune) bool {
	return r == '_' || r == '\'' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// skipCoqComment returns the index after the comment opening at i.
func skipCoqComment(src string, i int, line *int) int {
	depth := 0
	for i < len(src) {
		switch {
		case strings.HasPrefix(src[i:], "(*"):
			depth++
			i += 2
		case strings.HasPrefix(src[i:], "*)"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		case src[i] == '"':
			_, i = readCoqString(src, i, line)
		default:
			if src[i] == '\n' {
				*line++
			}
			i++
		}
	}
	return i
}

// readCoqString reads the string literal opening at i; it returns its
// contents and the index after it.
func readCoqString(src string, i int, line *int) (string, int) {
	var b strings.Builder
	i++
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"' && i+1 < len(src) && src[i+1] == '"':
			b.WriteByte('"')
			i += 2
			continue
		case c == '"':
			return b.String(), i + 1
		case c == '\n':
			*line++
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), i
}
