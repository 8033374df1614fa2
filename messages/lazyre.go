package messages

import (
	"regexp"
	"sync"
)

// LazyRegexp compiles its expression on first use. Package-level regexps
// compiled at init slow down every start of the binary, and the warren
// binary is also the sandbox init, which should start fast.
type LazyRegexp struct{ re func() *regexp.Regexp }

// NewLazyRegexp returns a regexp compiled (with MustCompile) on first use.
func NewLazyRegexp(expr string) LazyRegexp {
	return LazyRegexp{re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// MatchString reports whether s matches.
func (l LazyRegexp) MatchString(s string) bool { return l.re().MatchString(s) }

// FindStringSubmatch is regexp.FindStringSubmatch.
func (l LazyRegexp) FindStringSubmatch(s string) []string { return l.re().FindStringSubmatch(s) }

func (l LazyRegexp) String() string { return l.re().String() }
