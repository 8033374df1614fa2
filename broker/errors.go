package broker

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// jsErrCodeMaxMsgsPerSubject is the JetStream API error code the server
// returns when DiscardNewPerSubject refuses a message (JSStreamStoreFailedF
// carries the text; the stable part is the code).
const jsErrCodeMaxMsgsPerSubject = 10077

// IsResultExists reports whether a publish to RESULTS was refused because a
// result for that task attempt is already stored: the one-result rule doing
// its job, which a worker treats as success.
func IsResultExists(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jsErrCodeMaxMsgsPerSubject
	}
	return false
}
