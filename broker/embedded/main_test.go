package embedded_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/broker/embedded"
	"go.uber.org/goleak"
)

// holdEnv makes the test binary a broker process that holds the data dir
// it names until killed (TestALockDiesWithItsProcess).
const holdEnv = "WARREN_EMBEDDED_TEST_HOLD"

// Every server and connection is stopped in its test's cleanup: nothing
// may outlive the tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		os.Exit(hold(dir))
	}
	goleak.VerifyTestMain(m, brokertest.UpstreamLeaks()...)
}

func hold(dir string) int {
	srv, err := embedded.New(embedded.Config{DataDir: dir, DontListen: true})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = srv.Start(ctx)
		cancel()
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("ready")
	_, _ = os.Stdin.Read(make([]byte, 1)) // until killed (or stdin closes)
	srv.Stop()
	return 0
}
