package worker_test

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// A task's input objects are fetched and checked before the run: the
// content reaches the command byte for byte; an object missing or not
// matching its digest is the task's failure (input_unavailable, naming
// the field), and the command never runs.
func TestInputObjectsFetchedAndChecked(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "w1", workerOpts{})
	obs, err := b.JS.ObjectStore(t.Context(), messages.BucketInputs)
	require.NoError(t, err)
	content := make([]byte, 3<<20)
	for i := range content {
		content[i] = byte(i * 7)
	}
	ref := messages.NewInputObject(content)
	_, err = obs.PutBytes(t.Context(), ref.Name, content)
	require.NoError(t, err)

	good := shTask("in", "good", "sha256sum <&0; sha256sum data/f")
	good.StdinObject = &ref
	good.FilesObjects = map[string]messages.InputObject{"data/f": ref}
	missing := shTask("in", "missing", "echo ran")
	gone := messages.NewInputObject([]byte("never stored"))
	missing.FilesObjects = map[string]messages.InputObject{"f": gone}
	wrong := shTask("in", "wrong", "echo ran")
	lie := ref
	lie.SHA256 = fmt.Sprintf("%x", sha256.Sum256([]byte("other")))
	wrong.StdinObject = &lie
	publish(t, b.JS, good, missing, wrong)

	rs := collect(t, b.JS, "in", 3, time.Minute)
	sum := fmt.Sprintf("%x", sha256.Sum256(content))
	require.Equal(t, messages.StatusOK, rs["good"].Status, string(rs["good"].Stderr))
	require.Equal(t, sum+"  -\n"+sum+"  data/f\n", string(rs["good"].Stdout))
	for id, field := range map[string]string{"missing": "files_objects.f", "wrong": "stdin_object"} {
		r := rs[id]
		require.Equal(t, messages.StatusInvalid, r.Status, id)
		require.Equal(t, messages.CodeInputUnavailable, r.Error.Code, r.Error.Msg)
		require.Equal(t, field, r.Error.Field)
		require.Empty(t, r.Stdout, "the command never ran")
	}
}
