package main

import (
	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// clientAuth is the connection options --creds and --tls-ca ask for, and
// the creds loaded (nil without --creds).
func (g *globals) clientAuth() ([]nats.Option, *broker.Creds, error) {
	opts, creds, err := broker.ClientAuth{CredsFile: g.Creds, TLSCA: g.TLSCA}.Options()
	if err != nil {
		return nil, nil, err
	}
	g.creds = creds
	return opts, creds, nil
}

// loadCreds reads --creds once; nil without it.
func (g *globals) loadCreds() (*broker.Creds, error) {
	if g.creds == nil && g.Creds != "" {
		c, err := broker.LoadCreds(g.Creds)
		if err != nil {
			return nil, err
		}
		g.creds = c
	}
	return g.creds, nil
}

// tenant is the tenant --creds names, "" for none (or unreadable creds:
// connecting reports why).
func (g *globals) tenant() string {
	c, err := g.loadCreds()
	if err != nil || c == nil {
		return ""
	}
	return c.Tenant
}

// qualify names a batch the user typed as the tenant's: `warren results
// b-1` with alice's creds reads alice.b-1.
func (g *globals) qualify(batch string) string { return messages.QualifyBatch(g.tenant(), batch) }

func (s *brokerConn) tenant() string {
	if s.Creds == nil {
		return ""
	}
	return s.Creds.Tenant
}

// apiPrefix is the JetStream API prefix of the connection's account.
func (s *brokerConn) apiPrefix() string {
	if s.tenant() != "" {
		return broker.TenantAPIPrefix
	}
	return ""
}
