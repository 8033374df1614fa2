package broker

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Creds is what a Warren .creds file says about its holder. The file is
// two decorated blocks, the user's public key and then its nkey seed
// (what nats.NkeyOptionFromSeed and the nats CLI's --nkey read), with
// "# warren-role:" and "# warren-tenant:" comment lines. The public key
// comes first because a stock client given the file as JWT credentials
// (`nats --creds`) sends the first block to the server as the user's JWT:
// it sends the public key, never the seed, and the server refuses it
// (Warren's users are nkeys, not JWTs).
type Creds struct {
	Path   string
	Role   Role
	Tenant string // submitters: the tenant their batches belong to
	Pool   string // workers
}

// FormatCreds renders a creds file for p with the given user seed; the
// public key block is the seed's.
func FormatCreds(p Principal, seed []byte) ([]byte, error) {
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("creds for %q: %w", p.Name, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("creds for %q: %w", p.Name, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Warren credentials for %s %q. Keep this file secret: it is the key.\n", p.Role, p.Name)
	fmt.Fprintf(&b, "# warren-role: %s\n", p.Role)
	if t := p.Tenant(); t != "" {
		fmt.Fprintf(&b, "# warren-tenant: %s\n", t)
		fmt.Fprintf(&b, "# With the nats CLI: nats --nkey FILE --inbox-prefix %s --js-api-prefix '%s' (docs/protocol.md, \"As a tenant\").\n", TenantInbox(t), TenantAPIPrefix)
	}
	if p.Pool != "" {
		fmt.Fprintf(&b, "# warren-pool: %s\n", p.Pool)
	}
	fmt.Fprintf(&b, "%s\n%s\n%s\n", credsPublicBegin, pub, credsPublicEnd)
	fmt.Fprintf(&b, "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n", seed)
	return b.Bytes(), nil
}

// The public key block of a creds file: the first decorated block, which
// stock clients take for a JWT.
const (
	credsPublicBegin = "-----BEGIN USER NKEY PUBLIC KEY-----"
	credsPublicEnd   = "------END USER NKEY PUBLIC KEY------"
)

// LoadCreds reads a creds file and checks it holds a user seed.
func LoadCreds(path string) (*Creds, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--creds: %w", err)
	}
	c, err := ParseCreds(data)
	if err != nil {
		return nil, fmt.Errorf("--creds %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// ParseCreds decodes a creds file's contents. Without a warren-role line
// the holder is taken for an admin (a plain nkey seed file): the server
// decides what it may do, the role only chooses the client's API prefix.
func ParseCreds(data []byte) (*Creds, error) {
	if err := checkCredsKeys(data); err != nil {
		return nil, err
	}
	c := &Creds{Role: RoleAdmin}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "#"), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "warren-role":
			c.Role = Role(v)
		case "warren-tenant":
			c.Tenant = v
		case "warren-pool":
			c.Pool = v
		}
	}
	switch c.Role {
	case RoleSubmitter:
		if err := CheckTenantName(c.Tenant); err != nil {
			return nil, err
		}
	case RoleAdmin, RoleWorker:
		if c.Tenant != "" {
			return nil, fmt.Errorf("%s credentials name tenant %q: only a submitter has one", c.Role, c.Tenant)
		}
	default:
		return nil, fmt.Errorf("unknown warren-role %q (want admin, worker or submitter)", c.Role)
	}
	return c, nil
}

// checkCredsKeys checks that data holds a user seed and, when it has a
// public key block before it (every file `warren auth` writes), that the
// block is the seed's public key: what a stock client sends as its JWT is
// then never anything but the public key.
func checkCredsKeys(data []byte) error {
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return fmt.Errorf("%w (want a file written by `warren auth`)", err)
	}
	defer kp.Wipe()
	first, err := nkeys.ParseDecoratedJWT(data)
	if err != nil || !bytes.Contains(data, []byte(credsPublicBegin)) {
		return err // a bare seed file (older Warren, or nsc): nothing to check
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return err
	}
	if first != pub {
		return fmt.Errorf("its public key block %q is not its seed's public key %s (want a file written by `warren auth`)", first, pub)
	}
	return nil
}

// ClientAuth is how a client proves who it is and checks the server.
// The zero value connects without credentials and trusts the system roots.
type ClientAuth struct {
	// CredsFile is a .creds file from `warren auth`.
	CredsFile string
	// TLSCA is a PEM file of the CA the server's certificate must chain
	// to; when set the connection requires TLS.
	TLSCA string
}

// Options returns the nats options for a, and the creds it loaded (nil
// without a creds file).
func (a ClientAuth) Options() ([]nats.Option, *Creds, error) {
	var opts []nats.Option
	var creds *Creds
	if a.CredsFile != "" {
		c, err := LoadCreds(a.CredsFile)
		if err != nil {
			return nil, nil, err
		}
		opt, err := nats.NkeyOptionFromSeed(a.CredsFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--creds %s: %w", a.CredsFile, err)
		}
		opts, creds = append(opts, opt), c
		if c.Role == RoleSubmitter {
			opts = append(opts, nats.CustomInboxPrefix(TenantInbox(c.Tenant)))
		}
	}
	if a.TLSCA != "" {
		pool, err := loadCAPool(a.TLSCA)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	return opts, creds, nil
}

func loadCAPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", path)
	}
	return pool, nil
}
