//go:build !client

package main

import (
	"fmt"
	"net"

	"github.com/warrenhq/warren/broker"
)

// checkExposure refuses to listen beyond loopback without authentication
// and TLS, unless --insecure-no-auth: a reachable unauthenticated broker
// lets anyone run code on every worker and read every result.
func checkExposure(f *brokerFlags, host string, auth *broker.AuthDir) error {
	if isLoopback(host) || f.InsecureNoAuth {
		return nil
	}
	tls := f.TLSCert != "" || (auth != nil && auth.State.TLS != nil)
	switch {
	case auth == nil && !tls:
		return fmt.Errorf("refusing to listen on %s without authentication or TLS: anyone who reaches it could run code on every worker.\n"+
			"fix: warren auth init --dir DIR --tls-host HOSTNAME, then warren broker --listen %s --auth-dir DIR "+
			"(or --insecure-no-auth on a network you trust completely)", f.Listen, f.Listen)
	case auth == nil:
		return fmt.Errorf("refusing to listen on %s without authentication: anyone who reaches it could run code on every worker.\n"+
			"fix: warren auth init --dir DIR, then add --auth-dir DIR (or --insecure-no-auth on a network you trust completely)", f.Listen)
	case !tls:
		return fmt.Errorf("refusing to listen on %s without TLS: credentials and task payloads would cross the network in clear.\n"+
			"fix: --tls-cert FILE --tls-key FILE, or an auth directory made with `warren auth init --tls` (or --insecure-no-auth on a network you trust completely)", f.Listen)
	}
	return nil
}

// isLoopback reports whether host only accepts local connections; "" and
// 0.0.0.0 are every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
