package worker

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
)

// A session token is a capability for one sandbox, stateless:
//
//	v1.<expiry, unix seconds>.<base64url HMAC-SHA256(host key, "warren-sbx-v1" 0 id 0 tenant 0 expiry)>
//
// The host checks it by recomputing the MAC (constant-time compare), so it
// keeps no token table; a token names one sandbox id and tenant, and stops
// working at its expiry (the session's TTL) or when the host key changes.
const tokenVersion = "v1"

// tokenKey is a host's session-token key.
type tokenKey struct{ key []byte }

// minKeyBytes is the shortest key file accepted (256 bits).
const minKeyBytes = 32

// loadTokenKey reads a hex key from file, or makes a random one when file
// is empty: sessions end with their worker, so a key per start is enough.
func loadTokenKey(file string) (*tokenKey, error) {
	if file == "" {
		k := make([]byte, minKeyBytes)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("worker: session token key: %w", err)
		}
		return &tokenKey{key: k}, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("worker config: SessionKeyFile: %w", err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) < minKeyBytes {
		return nil, fmt.Errorf("worker config: SessionKeyFile %s: want at least %d bytes in hex (openssl rand -hex 32)", file, minKeyBytes)
	}
	return &tokenKey{key: k}, nil
}

func (k *tokenKey) mac(id, tenant string, exp int64) []byte {
	m := hmac.New(sha256.New, k.key)
	fmt.Fprintf(m, "warren-sbx-%s\x00%s\x00%s\x00%d", tokenVersion, id, tenant, exp)
	return m.Sum(nil)
}

// mint returns the token of sandbox id for tenant, valid until exp.
func (k *tokenKey) mint(id, tenant string, exp time.Time) string {
	e := exp.Unix()
	return tokenVersion + "." + strconv.FormatInt(e, 10) + "." + base64.RawURLEncoding.EncodeToString(k.mac(id, tenant, e))
}

// check verifies that token is id's for tenant and unexpired at now.
func (k *tokenKey) check(token, id, tenant string, now time.Time) error {
	parts := strings.Split(token, ".")
	invalid := &messages.Error{Code: messages.CodeTokenInvalid, Field: "token",
		Msg: "this token is not the sandbox's: use the token its create returned (warren sandbox create keeps it; --token, WARREN_SANDBOX_TOKEN)"}
	if len(parts) != 3 || parts[0] != tokenVersion {
		return invalid
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return invalid
	}
	sum, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sum, k.mac(id, tenant, exp)) {
		return invalid
	}
	if now.Unix() >= exp {
		return &messages.Error{Code: messages.CodeTokenExpired, Field: "token",
			Msg: fmt.Sprintf("the token expired at %s (the sandbox's TTL): create a new sandbox", time.Unix(exp, 0).UTC().Format(time.RFC3339))}
	}
	return nil
}
