package messages

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	"github.com/nats-io/nkeys"
)

// SealedSecrets is a task's secrets as they travel and are stored: a
// curve25519 box (nkeys xkeys, "xkv1" format: X25519 + XSalsa20-Poly1305,
// a random nonce per seal) from an ephemeral sender key to the pool's
// public key. Only a worker holding the pool's seal key opens it. The
// sealed document names the task's batch and id, so a box copied into
// another task, or into this task with anything but its attempt changed, is
// refused rather than opened for it.
type SealedSecrets struct {
	// To is the pool's public curve key ("X..."): a worker holding another
	// key says so instead of trying.
	To string `json:"to"`
	// From is the sender's public curve key, needed to open the box.
	From string `json:"from"`
	// Box is the sealed sealedPayload, base64 in JSON.
	Box []byte `json:"box"`
}

// sealedPayload is what a box holds.
type sealedPayload struct {
	V     int    `json:"v"`
	Batch string `json:"batch"`
	ID    string `json:"id"`
	// Task is the task's BodyDigest: the box opens only for the very task
	// it was sealed with (any attempt of it).
	Task    string            `json:"task"`
	Secrets map[string]string `json:"secrets"`
}

// BodyDigest is the hex sha256 of t's canonical encoding (this package's
// JSON encoding of the Task) with attempt, secrets and sealed_secrets
// cleared: what a sealed box is bound to. A replay changes only the
// attempt, so it keeps the digest; any other change (command, files, env,
// reply, pool, ...) does not.
func BodyDigest(t *Task) string {
	c := *t
	c.Attempt, c.Secrets, c.SealedSecrets = 0, nil, nil
	data, _ := json.Marshal(&c) // a Task always marshals
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// SealSecrets returns a copy of t whose Secrets are sealed to poolKey (the
// pool's public curve key) by sender (a curve key pair; one ephemeral pair
// per batch is enough) and bound to t's batch and id. The copy carries no
// cleartext. t must have passed Validate with its final batch and id.
func SealSecrets(t *Task, sender nkeys.KeyPair, poolKey string) (*Task, error) {
	out := *t
	out.Secrets = nil
	if len(t.Secrets) == 0 {
		return &out, nil
	}
	if !nkeys.IsValidPublicCurveKey(poolKey) {
		return nil, fieldErr(CodeInvalidField, "secrets", "pool key %q is not a public curve key (X...); get it with warren keys show", poolKey)
	}
	from, err := sender.PublicKey()
	if err != nil {
		return nil, fieldErr(CodeInternal, "secrets", "sender key: %v", err)
	}
	plain, err := json.Marshal(sealedPayload{V: Version, Batch: t.Batch, ID: t.ID, Task: BodyDigest(t), Secrets: t.Secrets})
	if err != nil {
		return nil, fieldErr(CodeInternal, "secrets", "encode: %v", err)
	}
	box, err := sender.Seal(plain, poolKey)
	clear(plain)
	if err != nil {
		return nil, fieldErr(CodeInternal, "secrets", "seal: %v", err)
	}
	out.SealedSecrets = &SealedSecrets{To: poolKey, From: from, Box: box}
	return &out, nil
}

// OpenSecrets opens t's sealed secrets with key, the pool's seal key (a
// curve key pair with its seed). No sealed secrets: nil, nil. An error
// matching ErrSecretsUnavailable means this worker cannot open them (key is
// nil or not the key they were sealed to); any other *Error (field
// sealed_secrets) means the box is damaged or was sealed for another task.
func OpenSecrets(t *Task, key nkeys.KeyPair) (map[string]string, error) {
	s := t.SealedSecrets
	if s == nil {
		return nil, nil
	}
	if key == nil {
		return nil, fieldErr(CodeSecretsUnavailable, "sealed_secrets", "this worker has no seal key; start it with --seal-key FILE holding pool key %s", s.To)
	}
	pub, err := key.PublicKey()
	if err != nil || pub != s.To {
		return nil, fieldErr(CodeSecretsUnavailable, "sealed_secrets", "sealed to pool key %s, but this worker holds %s; give it that pool's seal key", s.To, pub)
	}
	plain, err := key.Open(s.Box, s.From)
	if err != nil {
		return nil, fieldErr(CodeInvalidField, "sealed_secrets", "the box does not open with the pool key (damaged, or not sealed by %s): %v", s.From, err)
	}
	defer clear(plain)
	var p sealedPayload
	if err := json.Unmarshal(plain, &p); err != nil || p.V != Version {
		return nil, fieldErr(CodeInvalidField, "sealed_secrets", "the box does not hold a version %d secrets document", Version)
	}
	if p.Batch != t.Batch || p.ID != t.ID {
		return nil, fieldErr(CodeInvalidField, "sealed_secrets", "sealed for task %q of batch %q, not this one; secrets cannot be moved between tasks", p.ID, p.Batch)
	}
	if p.Task != BodyDigest(t) {
		return nil, fieldErr(CodeInvalidField, "sealed_secrets", "sealed for another body of task %q (its command, files, env, reply or placement changed); secrets open only for the task they were sealed with: submit it again", t.ID)
	}
	if err := checkSecretNames(t, p.Secrets); err != nil {
		return nil, err
	}
	return p.Secrets, nil
}

// validateSecrets checks cleartext and sealed secrets alike; values are
// never quoted in a message.
func (t *Task) validateSecrets() error {
	if len(t.Secrets) == 0 && t.SealedSecrets == nil {
		return nil
	}
	field := "secrets"
	if t.SealedSecrets != nil {
		field = "sealed_secrets"
	}
	switch {
	case len(t.Secrets) > 0 && t.SealedSecrets != nil:
		return fieldErr(CodeContradictory, "secrets", "a task carries secrets or sealed_secrets, not both")
	case t.Kind != KindExec:
		return fieldErr(CodeContradictory, field, "only exec tasks take secrets")
	}
	if s := t.SealedSecrets; s != nil {
		switch {
		case !nkeys.IsValidPublicCurveKey(s.To):
			return fieldErr(CodeInvalidField, "sealed_secrets.to", "not a public curve key (X...)")
		case !nkeys.IsValidPublicCurveKey(s.From):
			return fieldErr(CodeInvalidField, "sealed_secrets.from", "not a public curve key (X...)")
		case len(s.Box) == 0:
			return fieldErr(CodeMissingField, "sealed_secrets.box", "required")
		}
		return nil
	}
	return checkSecretNames(t, t.Secrets)
}

// checkSecretNames checks secret names and values, and that together with
// env they stay within MaxEnvVars and do not name a variable twice.
func checkSecretNames(t *Task, secrets map[string]string) error {
	if len(secrets)+len(t.Env) > MaxEnvVars {
		return fieldErr(CodeTooLarge, "secrets", "%d secrets and %d env variables, at most %d together", len(secrets), len(t.Env), MaxEnvVars)
	}
	if err := checkEnvVars("secrets", secrets); err != nil {
		return err
	}
	for k := range secrets {
		if _, dup := t.Env[k]; dup {
			return fieldErr(CodeContradictory, "secrets", "%s is set in env too; give it once", k)
		}
	}
	return nil
}

// WithSecrets returns env with secrets added (the caller checked, with
// OpenSecrets, that no name repeats).
func WithSecrets(env, secrets map[string]string) map[string]string {
	if len(secrets) == 0 {
		return env
	}
	out := make(map[string]string, len(env)+len(secrets))
	maps.Copy(out, env)
	maps.Copy(out, secrets)
	return out
}
