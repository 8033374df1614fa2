package messages

// pattern is a syntax rule for names, ids and subjects: a loop over the
// bytes, no regular expression to compile (compiling them would be on
// every start of the CLI and of a worker). String is the rule as a regular expression, for messages;
// TestPatternsMatchTheirExpressions holds each to it.
type pattern struct {
	expr  string
	match func(string) bool
}

// MatchString reports whether s follows the rule.
func (p pattern) MatchString(s string) bool { return p.match(s) }

func (p pattern) String() string { return p.expr }

var (
	idPattern = pattern{`^[A-Za-z0-9_-]{1,128}$`, func(s string) bool {
		return len(s) >= 1 && len(s) <= MaxIDBytes && allBytes(s, isIDByte)
	}}
	// pool, profile: no "_", it joins consumer names
	namePattern = pattern{`^[a-z0-9][a-z0-9-]{0,63}$`, func(s string) bool {
		return len(s) >= 1 && len(s) <= 64 && isLowerAlnum(s[0]) && allBytes(s[1:], func(c byte) bool { return isLowerAlnum(c) || c == '-' })
	}}
	envPattern = pattern{`^[A-Za-z_][A-Za-z0-9_]*$`, func(s string) bool {
		return len(s) >= 1 && (isLetter(s[0]) || s[0] == '_') && allBytes(s[1:], func(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' })
	}}
	// replyPattern accepts plain subjects: dot-separated tokens, none
	// empty, of printable non-space ASCII without wildcards.
	replyPattern = pattern{`^[!-)+--/-=?-~]+(\.[!-)+--/-=?-~]+)*$`, func(s string) bool {
		start := 0
		for i := 0; i <= len(s); i++ {
			if i < len(s) && s[i] != '.' {
				if c := s[i]; c < '!' || c > '~' || c == '*' || c == '>' {
					return false
				}
				continue
			}
			if i == start {
				return false // an empty token
			}
			start = i + 1
		}
		return true
	}}
)

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isLetter(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || isDigit(c) }
func isIDByte(c byte) bool     { return isLetter(c) || isDigit(c) || c == '_' || c == '-' }
