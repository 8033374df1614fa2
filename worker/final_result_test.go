package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// The final event carries the result its delivery stored, byte for byte,
// so a client holding it need not read it; not when the result is over
// messages.FinalResultMax, and not when another run had stored the
// attempt's result first (the stored one is not this run's).
func TestFinalEventCarriesTheStoredResult(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	rival := messages.Result{V: messages.Version, Batch: "carry", TaskID: "raced", Attempt: 1, Delivery: 1,
		Status: messages.StatusOK, ExitCode: 7, Stdout: messages.Bytes("the other run\n")}
	startWorker(t, b, "w1", workerOpts{runner: insecureRunner(t), beforeStore: func(r *messages.Result) {
		if r.TaskID != rival.TaskID {
			return
		}
		// Another run of the attempt stores first.
		data, err := json.Marshal(&rival)
		require.NoError(t, err)
		_, err = b.JS.Publish(context.Background(), messages.ResultSubject(r.Batch, r.Attempt, r.TaskID), data)
		require.NoError(t, err)
	}})
	tests := []struct {
		id, script string
		carried    bool
	}{
		{"small", "echo hi", true},
		{"large", "head -c 40000 /dev/zero | tr '\\0' a", false},
		{rival.TaskID, "echo mine", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			evs := subscribeEvents(t, b.Conn, "carry", tt.id)
			publish(t, b.JS, shTask("carry", tt.id, tt.script))
			got := evs.wait(t, 20*time.Second)
			final := got[len(got)-1]
			require.True(t, final.Final)
			stored, err := b.JS.Stream(context.Background(), messages.StreamResults)
			require.NoError(t, err)
			m, err := stored.GetLastMsgForSubject(context.Background(), messages.ResultSubject("carry", 1, tt.id))
			require.NoError(t, err)
			switch tt.id {
			case rival.TaskID:
				require.Contains(t, string(m.Data), `"exit_code":7`, "the rival's result is the stored one")
			case "large":
				require.Greater(t, len(m.Data), messages.FinalResultMax)
			}
			if !tt.carried {
				require.Empty(t, final.Result)
				return
			}
			require.Equal(t, string(m.Data), string(final.Result), "the stored bytes")
			require.LessOrEqual(t, len(final.Result), messages.FinalResultMax)
		})
	}
}
