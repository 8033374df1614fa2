package worker_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"github.com/warrenhq/warren/worker"
	"go.uber.org/goleak"
)

// helperWorkerEnv makes the test binary act as a worker process connected to
// the URL it names, so a test can SIGKILL a real worker.
const helperWorkerEnv = "WARREN_TEST_WORKER_URL"

// testInitPath is the dedicated sandbox init (cmd/warren-sandbox-init) the
// tests' sandboxes start, as a worker installed by `make build` does; ""
// when it could not be built (they then re-exec this binary).
var testInitPath string

func TestMain(m *testing.M) {
	sandbox.MaybeInit() // sandboxes re-exec this binary as their init when no dedicated init was built
	if url := os.Getenv(helperWorkerEnv); url != "" {
		os.Exit(runHelperWorker(url))
	}
	removeAgent := buildSessionAgent()
	var removeInit func()
	testInitPath, removeInit = sandboxtest.InitForMain()
	code := m.Run()
	removeAgent()
	removeInit()
	if code == 0 {
		// Every goroutine a worker starts is owned and waited for by Stop:
		// none may outlive the tests.
		if err := goleak.Find(brokertest.UpstreamLeaks()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func maxDeliverFromEnv() int {
	n, _ := strconv.Atoi(os.Getenv("WARREN_TEST_MAX_DELIVER"))
	return n
}

func runHelperWorker(url string) int {
	ctx := context.Background()
	nc, err := broker.Connect(ctx, url, "helper-worker")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: os.Getenv("WARREN_TEST_SCRATCH")})
	if err == nil {
		err = r.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w, err := worker.New(nc, worker.Config{
		HostID: "doomed", Capacity: 4, Runner: r,
		Isolation: []messages.Isolation{messages.IsolationNone},
		Consumer:  broker.ConsumerConfig{AckWait: 2 * time.Second, MaxDeliver: maxDeliverFromEnv()},
		PullWait:  500 * time.Millisecond,
		Logger:    zerolog.New(os.Stderr).Level(zerolog.WarnLevel),
	})
	if err == nil {
		err = w.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	select {} // until killed
}

// buildSessionAgent builds the session agent once for every test of the
// package (BuildAgent then returns it) and returns what removes it.
func buildSessionAgent() func() {
	bin, remove, err := sandboxtest.AgentForMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker tests: the session agent:", err)
		os.Exit(1)
	}
	_ = os.Setenv(sandboxtest.AgentEnv, bin)
	return remove
}
