package broker

import (
	"crypto/x509"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
)

// connectHint says what to do about a failed connection.
func connectHint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	switch {
	case errors.Is(err, nats.ErrAuthorization) || strings.Contains(err.Error(), "Authorization Violation"):
		return "the broker requires credentials: pass --creds FILE (admin.creds, worker.creds or TENANT.creds from `warren auth`)"
	case errors.As(err, &unknownCA):
		return "the broker's certificate is not signed by a CA this client trusts: pass --tls-ca FILE (AUTH_DIR/tls/ca.pem for a test fleet)"
	case errors.As(err, &badHost):
		return "the broker's certificate does not name this address: connect by a name it has, or add it with `warren auth init --tls-host`"
	case errors.Is(err, nats.ErrSecureConnWanted):
		return "--tls-ca asks for TLS but the broker does not serve it"
	}
	return "start one with `warren broker` or `warren up`, or pass --nats"
}
