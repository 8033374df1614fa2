package broker_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The embedded servers, their config watchers and clients are stopped in
// each test's cleanup: nothing may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
