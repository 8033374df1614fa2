package scheduler_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// Publish seals secrets: TASKS holds the sealed form only, the same batch
// submitted again (new seal, new nonce) is the same batch, and the
// manifest's digest does not depend on the values.
func TestPublishSealsSecrets(t *testing.T) {
	x := setup(t)
	pool, err := nkeys.CreateCurveKeys()
	require.NoError(t, err)
	pub, err := pool.PublicKey()
	require.NoError(t, err)
	c, err := scheduler.New(x.b.Conn, scheduler.Config{PoolKeys: scheduler.StaticPoolKeys{"default": pub}})
	require.NoError(t, err)
	in := `{"id":"a","kind":"exec","argv":["true"],"secrets":{"TOKEN":"very-secret-value"}}` + "\n"
	b, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: "sealed"})
	require.NoError(t, err)
	_, err = c.Publish(x.ctx, b)
	require.NoError(t, err)
	msgs := x.storedTasks(t, "sealed")
	require.Len(t, msgs, 1)
	require.NotContains(t, string(msgs[0].Data()), "very-secret-value")
	task, err := messages.DecodeTask(msgs[0].Data())
	require.NoError(t, err)
	secrets, err := messages.OpenSecrets(task, pool)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"TOKEN": "very-secret-value"}, secrets)

	again, err := scheduler.ReadBatch(strings.NewReader(strings.Replace(in, "very-secret-value", "rotated-value", 1)), scheduler.BatchOptions{Batch: "sealed"})
	require.NoError(t, err)
	require.Equal(t, b.Digest, again.Digest, "secret values are not part of the batch's identity")
	rep, err := c.Publish(x.ctx, again)
	require.NoError(t, err)
	require.True(t, rep.AlreadyComplete)

	// A pool without a key: refused, per line, nothing published.
	other, err := scheduler.ReadBatch(strings.NewReader(`{"kind":"exec","argv":["x"]}`+"\n"+
		`{"kind":"exec","argv":["x"],"pool":"gpu","secrets":{"K":"v"}}`+"\n"), scheduler.BatchOptions{Batch: "gpu"})
	require.NoError(t, err)
	_, err = c.Publish(x.ctx, other)
	var be *scheduler.BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, 2, be.Errors[0].Line)
	require.ErrorIs(t, err, messages.ErrSecretsUnavailable)
	require.Contains(t, err.Error(), `pool "gpu"`)
	require.Empty(t, x.storedTasks(t, "gpu"))
}

func TestParsePoolKeys(t *testing.T) {
	kp, _ := nkeys.CreateCurveKeys()
	pub, _ := kp.PublicKey()
	keys, err := scheduler.ParsePoolKeys([]string{pub, "gpu=" + pub})
	require.NoError(t, err)
	require.Equal(t, scheduler.StaticPoolKeys{"": pub, "gpu": pub}, keys)
	_, err = scheduler.ParsePoolKeys([]string{"gpu=Unot-a-key"})
	require.Error(t, err)
	user, _ := nkeys.CreateUser()
	upub, _ := user.PublicKey()
	_, err = scheduler.ParsePoolKeys([]string{upub})
	require.Error(t, err, "a user key is not a curve key")
}
