package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/warrenhq/warren/messages"
)

// Role is what a principal may do on the bus; see docs/security.md.
type Role string

const (
	// RoleAdmin may do everything in the fleet account, stream setup included.
	RoleAdmin Role = "admin"
	// RoleWorker serves one pool: consumes its tasks, stores results,
	// events and dead letters, keeps its registry entry, reads cancels.
	RoleWorker Role = "worker"
	// RoleSubmitter is one tenant, in an account of its own: it publishes
	// tasks as itself and reads only its own batches.
	RoleSubmitter Role = "submitter"
)

// FleetAccount is the account that holds the streams, the admin and the
// workers. Each submitter tenant has an account named after the tenant.
const FleetAccount = "WARREN"

// TenantAPIPrefix is the JetStream API prefix a tenant's connection uses:
// its account imports the few fleet API subjects it may call under this
// prefix (a tenant account's own $JS.API has no JetStream behind it).
const TenantAPIPrefix = "$WJS.API"

// Principal is one identity in an auth directory. Only public keys are
// kept in auth.json; seeds live in the .creds files.
type Principal struct {
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	Pool      string    `json:"pool,omitempty"` // workers
	PublicKey string    `json:"public_key"`     // user nkey
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// Quota bounds a submitter tenant (nil: the defaults,
	// messages.DefaultTenantQuota).
	Quota *messages.TenantQuota `json:"quota,omitempty"`
}

// Revoked reports whether the principal was revoked.
func (p Principal) Revoked() bool { return !p.RevokedAt.IsZero() }

// Tenant is the tenant a submitter acts as ("" for other roles).
func (p Principal) Tenant() string {
	if p.Role == RoleSubmitter {
		return p.Name
	}
	return ""
}

// AuthState is DIR/auth.json: everything the server configuration is
// generated from.
type AuthState struct {
	V          int         `json:"v"`
	Principals []Principal `json:"principals"`
	// TLS names the server's certificate files (absolute paths) when the
	// broker serves TLS; the CA is what clients verify it with.
	TLS *TLSFiles `json:"tls,omitempty"`
	// PoolXKeys maps a pool to the public curve key (nkeys xkey) tasks'
	// secrets can be sealed to; its seed is DIR/pool-<pool>.xkey.
	PoolXKeys map[string]string `json:"pool_xkeys,omitempty"`
}

// TLSFiles are PEM files for the server side of TLS.
type TLSFiles struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
	CA   string `json:"ca,omitempty"`
}

// File names in an auth directory.
const (
	AuthStateFile  = "auth.json"
	ServerConfFile = "server.conf"
	AdminCreds     = "admin.creds"
	WorkerCreds    = "worker.creds"
)

// tenantNameExpr is the rule for tenant names; validTenantName is it as a
// byte loop (compiling the expression would be on every command's
// start), held to it by TestTenantNameLoopIsItsExpression.
const tenantNameExpr = `^[a-z0-9][a-z0-9_-]{0,31}$`

func validTenantName(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '_' || c == '-')) {
			return false
		}
	}
	return true
}

// reservedNames cannot be tenants: they name other creds files or accounts.
var reservedNames = []string{"admin", "worker", "warren", "sys", "server", "auth", "ca"}

// CheckTenantName refuses a name that cannot be a tenant: it becomes an
// account name, a subject token and a file name.
func CheckTenantName(name string) error {
	if !validTenantName(name) {
		return fmt.Errorf("tenant name %q: want 1-32 characters of a-z 0-9 _ -, starting with a letter or digit", name)
	}
	if slices.Contains(reservedNames, name) {
		return fmt.Errorf("tenant name %q is reserved; choose another", name)
	}
	return nil
}

// AuthDir is an auth directory made by `warren auth init`.
type AuthDir struct {
	Dir   string
	State AuthState
}

// InitOptions configure InitAuthDir.
type InitOptions struct {
	// Pool the first worker credentials serve. Defaults to "default".
	Pool string
	// TLSHosts, when set, makes a private CA and a server certificate for
	// these names and addresses (loopback is always included).
	TLSHosts []string
	// TLS makes the CA and certificate even with no extra hosts.
	TLS bool
}

// InitAuthDir creates dir with keys, admin.creds, worker.creds, optional
// TLS material and server.conf. It refuses a directory that already holds
// an auth.json: keys are never silently replaced.
func InitAuthDir(dir string, o InitOptions) (*AuthDir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(abs, AuthStateFile)); err == nil {
		return nil, fmt.Errorf("auth init: %s already exists; use `warren auth add-submitter` or choose another --dir", filepath.Join(abs, AuthStateFile))
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("auth init: %w", err)
	}
	if o.Pool == "" {
		o.Pool = messages.DefaultPool
	}
	if !messages.ValidName(o.Pool) {
		return nil, fmt.Errorf("auth init: pool %q: want 1-64 characters of a-z 0-9 -", o.Pool)
	}
	d := &AuthDir{Dir: abs, State: AuthState{V: 1}}
	if _, err := d.addPrincipal(Principal{Name: "admin", Role: RoleAdmin}, AdminCreds); err != nil {
		return nil, err
	}
	if _, err := d.addPrincipal(Principal{Name: "worker", Role: RoleWorker, Pool: o.Pool}, WorkerCreds); err != nil {
		return nil, err
	}
	if err := d.addPoolXKey(o.Pool); err != nil {
		return nil, err
	}
	if o.TLS || len(o.TLSHosts) > 0 {
		files, err := MakeTestCA(filepath.Join(abs, "tls"), o.TLSHosts)
		if err != nil {
			return nil, err
		}
		d.State.TLS = files
	}
	return d, d.Save()
}

// OpenAuthDir reads dir/auth.json.
func OpenAuthDir(dir string) (*AuthDir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(abs, AuthStateFile))
	if err != nil {
		return nil, fmt.Errorf("auth dir %s: %w (create one with `warren auth init --dir %s`)", abs, err, dir)
	}
	d := &AuthDir{Dir: abs}
	if err := json.Unmarshal(data, &d.State); err != nil {
		return nil, fmt.Errorf("auth dir %s: %s: %w", abs, AuthStateFile, err)
	}
	return d, nil
}

// AddSubmitter adds tenant name (its own account) and writes DIR/name.creds.
func (d *AuthDir) AddSubmitter(name string) (string, error) {
	if err := CheckTenantName(name); err != nil {
		return "", err
	}
	if p := d.find(name); p != nil {
		if p.Revoked() {
			return "", fmt.Errorf("auth: %q was revoked on %s; a name is never reused (its old creds must stay refused): choose another", name, p.RevokedAt.Format("2006-01-02"))
		}
		return "", fmt.Errorf("auth: %q already exists (role %s); revoke it or choose another name", name, p.Role)
	}
	path, err := d.addPrincipal(Principal{Name: name, Role: RoleSubmitter}, name+".creds")
	if err != nil {
		return "", err
	}
	return path, d.Save()
}

// SetQuota sets tenant name's quota (the fields q sets; zero fields take
// the defaults). SetupTenants then applies it on the broker.
func (d *AuthDir) SetQuota(name string, q messages.TenantQuota) error {
	if err := q.Validate(); err != nil {
		return err
	}
	p := d.find(name)
	if p == nil || p.Role != RoleSubmitter {
		return fmt.Errorf("auth: no tenant %q (warren auth ls lists them)", name)
	}
	p.Quota = &q
	return d.Save()
}

// Tenants are the active submitter tenants with their quotas, as
// SetupTenants takes them.
func (d *AuthDir) Tenants() []Tenant {
	var out []Tenant
	for _, p := range d.State.Principals {
		if p.Role != RoleSubmitter || p.Revoked() {
			continue
		}
		t := Tenant{Name: p.Tenant()}
		if p.Quota != nil {
			t.Quota = *p.Quota
		}
		out = append(out, t)
	}
	return out
}

// AddWorker adds worker credentials name for pool (DIR/name.creds) and
// the pool's curve key if it has none yet.
func (d *AuthDir) AddWorker(name, pool string) (string, error) {
	if err := CheckTenantName(name); err != nil {
		return "", fmt.Errorf("worker name: %w", err)
	}
	if !messages.ValidName(pool) {
		return "", fmt.Errorf("pool %q: want 1-64 characters of a-z 0-9 -", pool)
	}
	if p := d.find(name); p != nil {
		return "", fmt.Errorf("auth: %q already exists (role %s); choose another name", name, p.Role)
	}
	path, err := d.addPrincipal(Principal{Name: name, Role: RoleWorker, Pool: pool}, name+".creds")
	if err != nil {
		return "", err
	}
	if _, ok := d.State.PoolXKeys[pool]; !ok {
		if err := d.addPoolXKey(pool); err != nil {
			return "", err
		}
	}
	return path, d.Save()
}

// Revoke removes name's user from the server configuration. A broker
// started with --auth-dir reloads it and disconnects that user.
func (d *AuthDir) Revoke(name string) error {
	p := d.find(name)
	if p == nil {
		return fmt.Errorf("auth: no principal %q (see `warren auth ls`)", name)
	}
	if p.Revoked() {
		return nil
	}
	p.RevokedAt = time.Now().UTC()
	return d.Save()
}

func (d *AuthDir) find(name string) *Principal {
	for i := range d.State.Principals {
		if d.State.Principals[i].Name == name {
			return &d.State.Principals[i]
		}
	}
	return nil
}

// addPrincipal makes a user nkey for p and writes its creds file.
func (d *AuthDir) addPrincipal(p Principal, file string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", err
	}
	seed, err := kp.Seed()
	if err != nil {
		return "", err
	}
	p.PublicKey, p.CreatedAt = pub, time.Now().UTC()
	path := filepath.Join(d.Dir, file)
	creds, err := FormatCreds(p, seed)
	if err != nil {
		return "", err
	}
	if err := writeSecret(path, creds); err != nil {
		return "", err
	}
	d.State.Principals = append(d.State.Principals, p)
	return path, nil
}

// addPoolXKey makes the pool's curve key pair (for sealed secrets).
func (d *AuthDir) addPoolXKey(pool string) error {
	kp, err := nkeys.CreateCurveKeys()
	if err != nil {
		return err
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return err
	}
	seed, err := kp.Seed()
	if err != nil {
		return err
	}
	if err := writeSecret(PoolXKeyPath(d.Dir, pool), append(seed, '\n')); err != nil {
		return err
	}
	if d.State.PoolXKeys == nil {
		d.State.PoolXKeys = map[string]string{}
	}
	d.State.PoolXKeys[pool] = pub
	return nil
}

// PoolXKeyPath is the seed file of pool's curve key in auth directory dir:
// what the pool's workers open sealed secrets with (--seal-key).
func PoolXKeyPath(dir, pool string) string { return filepath.Join(dir, "pool-"+pool+".xkey") }

// Save writes auth.json and regenerates server.conf (atomically, so a
// watching broker never reads half a file).
func (d *AuthDir) Save() error {
	data, err := json.MarshalIndent(d.State, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(d.Dir, AuthStateFile), append(data, '\n'), 0o600); err != nil {
		return err
	}
	// The server reloads its configuration when the file changes, and a
	// reload briefly leaves JetStream requests of every account without a
	// responder: a change that leaves the configuration as it was (a
	// quota) must not touch it.
	conf := []byte(ServerConfig(d.State))
	if old, err := os.ReadFile(d.ServerConf()); err == nil && bytes.Equal(old, conf) {
		return nil
	}
	return writeAtomic(d.ServerConf(), conf, 0o600)
}

// ServerConf is the path of the generated nats-server configuration.
func (d *AuthDir) ServerConf() string { return filepath.Join(d.Dir, ServerConfFile) }

func writeSecret(path string, data []byte) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("auth: %s already exists; not overwriting a key", path)
	}
	return writeAtomic(path, data, 0o600)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("auth: %w", err), os.Remove(tmp))
	}
	return nil
}
