package brokertest

import "go.uber.org/goleak"

// UpstreamLeaks are goleak options for the one goroutine nats.go itself
// can leave behind: jetstream's ObjectStore Put makes a JetStream context
// per put and cleans it up when the put ends, and the context's reconnect
// listener (resetPendingAcksOnReconnect, started at the put's first async
// publish) blocks forever on a nil channel when that cleanup ran before
// the goroutine first read its channel (nats.go v1.55.0:
// jetstream/publish.go:567 reads it, jetstream.go:1328 sets it to nil).
// Seen once in a race-detector run on a loaded machine. It is an idle
// goroutine per such put, started by the library and unreachable from
// Warren; every goroutine of Warren's own is still checked.
func UpstreamLeaks() []goleak.Option {
	return []goleak.Option{goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")}
}
