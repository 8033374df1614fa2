package verify

import (
	"testing"

	"github.com/warrenhq/warren/messages"
)

// What the whole-system benchmark (package verify_test: it imports the
// worker, which imports verify) needs of this package's test helpers.
type CorpusCase = corpusCase

var (
	GoodCorpus     = goodCorpus
	TestProfiles   = testProfiles
	NewTestChecker = newTestChecker
	DirectCoq      = directCoq
	Measure        = measure
)

// Spec is the case's verify spec.
func (c *corpusCase) Spec(t testing.TB) *messages.VerifySpec { return c.spec(t) }
