package broker_test

import (
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

func userSeed(t testing.TB) []byte {
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	return seed
}

func TestParseCreds(t *testing.T) {
	seed := userSeed(t)
	for _, tc := range []struct {
		name string
		p    broker.Principal
		err  string
	}{
		{"submitter", broker.Principal{Name: "alice", Role: broker.RoleSubmitter}, ""},
		{"worker", broker.Principal{Name: "worker", Role: broker.RoleWorker, Pool: "gpu"}, ""},
		{"admin", broker.Principal{Name: "admin", Role: broker.RoleAdmin}, ""},
		{"bad tenant", broker.Principal{Name: "Al.ice", Role: broker.RoleSubmitter}, "tenant name"},
		{"unknown role", broker.Principal{Name: "x", Role: "root"}, "unknown warren-role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := broker.FormatCreds(tc.p, seed)
			require.NoError(t, err)
			c, err := broker.ParseCreds(data)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.p.Role, c.Role)
			require.Equal(t, tc.p.Tenant(), c.Tenant)
			require.Equal(t, tc.p.Pool, c.Pool)
		})
	}
	_, err := broker.ParseCreds([]byte("# warren-role: submitter\n"))
	require.Error(t, err, "no seed")
}

// FuzzParseCreds: any input either fails or yields a role Warren knows,
// and a submitter's tenant is always a valid subject token.
func FuzzParseCreds(f *testing.F) {
	seed := userSeed(f)
	for _, p := range []broker.Principal{{Name: "alice", Role: broker.RoleSubmitter}, {Name: "worker", Role: broker.RoleWorker, Pool: "default"}} {
		data, err := broker.FormatCreds(p, seed)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add(seed)
	f.Add([]byte("# warren-role: submitter\n# warren-tenant: a.b\n" + string(seed)))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := broker.ParseCreds(data)
		if err != nil {
			return
		}
		switch c.Role {
		case broker.RoleSubmitter:
			require.NoError(t, broker.CheckTenantName(c.Tenant))
			require.True(t, messages.ValidID(c.Tenant))
		case broker.RoleAdmin, broker.RoleWorker:
			require.Empty(t, c.Tenant)
		default:
			t.Fatalf("role %q accepted", c.Role)
		}
	})
}

// FuzzDecodeQuota: a tenant registry entry never panics the decoder, and
// what it accepts is a valid quota with every default filled.
func FuzzDecodeQuota(f *testing.F) {
	f.Add([]byte(`{"task_bytes":1024,"weight":2}`))
	f.Add([]byte(`{"sessions":-1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := broker.DecodeQuota(data)
		if err != nil {
			return
		}
		require.NoError(t, q.Validate())
		require.Positive(t, q.Weight)
	})
}
