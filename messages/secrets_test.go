package messages_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func curveKey(t testing.TB) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateCurveKeys()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	return kp, pub
}

func TestSealedSecretsOpenOnlyWithThePoolKeyAndForTheirTask(t *testing.T) {
	pool, poolPub := curveKey(t)
	other, _ := curveKey(t)
	sender, _ := curveKey(t)
	task := validTask()
	task.Env = map[string]string{"MODE": "x"}
	task.Secrets = map[string]string{"API_TOKEN": "tok-3141592653", "DB_PASS": "hunter2hunter2"}
	require.NoError(t, task.Validate())

	sealed, err := messages.SealSecrets(&task, sender, poolPub)
	require.NoError(t, err)
	require.Nil(t, sealed.Secrets)
	require.NotNil(t, task.Secrets, "the caller's task is not modified")
	wire, err := json.Marshal(sealed)
	require.NoError(t, err)
	require.NotContains(t, string(wire), "tok-3141592653")
	require.NotContains(t, string(wire), "hunter2")

	got, err := messages.DecodeTask(wire)
	require.NoError(t, err)
	secrets, err := messages.OpenSecrets(got, pool)
	require.NoError(t, err)
	require.Equal(t, task.Secrets, secrets)
	require.Equal(t, map[string]string{"MODE": "x", "API_TOKEN": "tok-3141592653", "DB_PASS": "hunter2hunter2"}, messages.WithSecrets(got.Env, secrets))

	// No key, another key: typed secrets_unavailable.
	_, err = messages.OpenSecrets(got, nil)
	require.ErrorIs(t, err, messages.ErrSecretsUnavailable)
	_, err = messages.OpenSecrets(got, other)
	require.ErrorIs(t, err, messages.ErrSecretsUnavailable)

	// Copied into another task: refused, not opened.
	moved := *got
	moved.Batch = "attacker"
	_, err = messages.OpenSecrets(&moved, pool)
	require.ErrorIs(t, err, messages.ErrInvalidField)
	require.Contains(t, err.Error(), "cannot be moved")

	// Same batch and id, another command: refused too.
	rewritten := *got
	rewritten.Argv = []string{"sh", "-c", "env | base64"}
	_, err = messages.OpenSecrets(&rewritten, pool)
	require.ErrorIs(t, err, messages.ErrInvalidField)
	require.Contains(t, err.Error(), "another body")
	// A replay (a later attempt) opens.
	replayed := *got
	replayed.Attempt = 3
	_, err = messages.OpenSecrets(&replayed, pool)
	require.NoError(t, err)

	// Damaged box.
	damaged := *got
	box := *got.SealedSecrets
	box.Box = append([]byte(nil), box.Box...)
	box.Box[len(box.Box)-1] ^= 1
	damaged.SealedSecrets = &box
	_, err = messages.OpenSecrets(&damaged, pool)
	require.ErrorIs(t, err, messages.ErrInvalidField)
}

func TestSecretsValidation(t *testing.T) {
	_, pub := curveKey(t)
	cases := []struct {
		name  string
		mut   func(*messages.Task)
		code  messages.Code
		field string
	}{
		{"bad name", func(t *messages.Task) { t.Secrets = map[string]string{"1X": "v"} }, messages.CodeInvalidField, "secrets"},
		{"reserved", func(t *messages.Task) { t.Secrets = map[string]string{"HOME": "v"} }, messages.CodeInvalidField, "secrets"},
		{"NUL", func(t *messages.Task) { t.Secrets = map[string]string{"K": "a\x00b"} }, messages.CodeNULByte, "secrets"},
		{"also in env", func(t *messages.Task) {
			t.Env, t.Secrets = map[string]string{"K": "1"}, map[string]string{"K": "2"}
		}, messages.CodeContradictory, "secrets"},
		{"verify task", func(t *messages.Task) {
			t.Kind, t.Argv, t.Profile = messages.KindVerify, nil, "coq"
			t.Verify = &messages.VerifySpec{Theorem: "x", Statement: "True", Proof: "exact I."}
			t.Secrets = map[string]string{"K": "v"}
		}, messages.CodeContradictory, "secrets"},
		{"both forms", func(t *messages.Task) {
			t.Secrets = map[string]string{"K": "v"}
			t.SealedSecrets = &messages.SealedSecrets{To: pub, From: pub, Box: []byte("x")}
		}, messages.CodeContradictory, "secrets"},
		{"sealed bad key", func(t *messages.Task) {
			t.SealedSecrets = &messages.SealedSecrets{To: "Xnope", From: pub, Box: []byte("x")}
		}, messages.CodeInvalidField, "sealed_secrets.to"},
		{"sealed empty box", func(t *messages.Task) {
			t.SealedSecrets = &messages.SealedSecrets{To: pub, From: pub}
		}, messages.CodeMissingField, "sealed_secrets.box"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := validTask()
			c.mut(&task)
			err := task.Validate()
			var me *messages.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, c.code, me.Code)
			require.Equal(t, c.field, me.Field)
			require.NotContains(t, me.Error(), "a\x00b")
		})
	}
}

func TestDecodeTaskRefusesCleartextSecrets(t *testing.T) {
	task := validTask()
	task.Secrets = map[string]string{"K": "s3cr3t-value"}
	require.NoError(t, task.Validate(), "cleartext secrets are valid input to the scheduler")
	data, _ := json.Marshal(task)
	_, err := messages.DecodeTask(data)
	require.ErrorIs(t, err, messages.ErrCleartextSecrets)
	require.NotContains(t, err.Error(), "s3cr3t-value")
	require.True(t, strings.Contains(err.Error(), "rotate"))
}

// FuzzOpenSecrets: any sealed document either opens to secrets that
// validate or is refused with a *messages.Error; it never panics.
func FuzzOpenSecrets(f *testing.F) {
	pool, pub := curveKey(f)
	sender, from := curveKey(f)
	task := validTask()
	task.Secrets = map[string]string{"K": "v"}
	sealed, err := messages.SealSecrets(&task, sender, pub)
	require.NoError(f, err)
	f.Add(sealed.SealedSecrets.Box)
	f.Add([]byte("xkv1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, box []byte) {
		tk := validTask()
		tk.SealedSecrets = &messages.SealedSecrets{To: pub, From: from, Box: box}
		secrets, err := messages.OpenSecrets(&tk, pool)
		if err != nil {
			var me *messages.Error
			require.ErrorAs(t, err, &me)
			return
		}
		tk.SealedSecrets, tk.Secrets = nil, secrets
		require.NoError(t, tk.Validate())
	})
}
