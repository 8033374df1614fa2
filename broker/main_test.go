package broker_test

import (
	"testing"

	"github.com/warrenhq/warren/broker/brokertest"
	"go.uber.org/goleak"
)

// The embedded servers, their config watchers and clients are stopped in
// each test's cleanup: nothing may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, brokertest.UpstreamLeaks()...)
}
