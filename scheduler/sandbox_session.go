package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
)

// Sandbox is a handle on a sandbox session: the id create printed, the
// host and pool it lives on, and its capability token. It holds no
// connection state; every call is one or more requests to its host.
type Sandbox struct {
	ID      string
	Host    string // the host token (the id's first part)
	Pool    string
	Token   string
	Expires time.Time

	c *Client
}

// CreateOptions are a new session's settings; zero fields take the host's
// defaults.
type CreateOptions struct {
	Pool    string // defaults to "default"
	Profile string // defaults to "default"
	Idle    time.Duration
	TTL     time.Duration
	Memory  int64
	Disk    int64
	Network messages.Network
	Env     map[string]string
	// Wait keeps trying while no host has a free slot, for at most this
	// long. Defaults to 0: no capacity anywhere is an error at once.
	Wait time.Duration
}

// sandboxRequestTimeout bounds one request other than exec when ctx has no
// deadline.
const sandboxRequestTimeout = 30 * time.Second

// CreateSandbox starts a session on a host of the pool with a free slot:
// hosts are tried by free slots (the registry's view), each refusing with
// no_capacity atomically when it has none. No host with a slot is
// messages.ErrNoCapacity, at once unless o.Wait. A host refusing by the
// tenant's quota (its sessions there, its TTL cap) is passed over too;
// when no host took it, that refusal is the error
// (messages.ErrQuotaExceeded, naming the limit), at once.
func (c *Client) CreateSandbox(ctx context.Context, o CreateOptions) (*Sandbox, error) {
	pool := cmp.Or(o.Pool, messages.DefaultPool)
	profile := cmp.Or(o.Profile, messages.DefaultProfile)
	req := &messages.SandboxRequest{V: messages.Version, Create: &messages.SandboxCreate{
		Profile: o.Profile, IdleMS: o.Idle.Milliseconds(), TTLMS: o.TTL.Milliseconds(),
		MemoryBytes: o.Memory, DiskBytes: o.Disk, Network: o.Network, Env: o.Env}}
	if err := req.Validate(messages.SbxCreate); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.Wait)
	pause := 50 * time.Millisecond
	for {
		sb, err := c.createOnce(ctx, pool, profile, req)
		if err == nil || !errors.Is(err, messages.ErrNoCapacity) || !time.Now().Before(deadline) {
			return sb, err
		}
		t := time.NewTimer(min(pause, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		pause = min(pause*2, 2*time.Second)
	}
}

func (c *Client) createOnce(ctx context.Context, pool, profile string, req *messages.SandboxRequest) (*Sandbox, error) {
	hosts, err := c.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	var cands []messages.HostInfo
	for _, h := range hosts {
		if h.Pool == pool && !h.Draining && slices.Contains(h.Profiles, profile) {
			cands = append(cands, h)
		}
	}
	slices.SortStableFunc(cands, func(a, b messages.HostInfo) int { return cmp.Compare(b.Free, a.Free) })
	var quotaErr error
	for _, h := range cands {
		sb := &Sandbox{Host: messages.HostToken(h.ID), Pool: pool, c: c}
		r, err := sb.request(ctx, messages.SbxCreate, req)
		switch {
		case errors.Is(err, messages.ErrNoCapacity), errors.Is(err, messages.ErrDraining), errors.Is(err, messages.ErrSandboxGone):
			continue // full, draining or gone since the registry saw it
		case errors.Is(err, messages.ErrQuotaExceeded):
			quotaErr = err // the tenant's quota is per host: another may take it
			continue
		case err != nil:
			return nil, err
		case r.Sandbox == nil || r.Token == "":
			return nil, fmt.Errorf("scheduler: host %s answered create without a sandbox", h.ID)
		}
		sb.ID, sb.Token, sb.Expires = r.Sandbox.ID, r.Token, r.Sandbox.Expires
		return sb, nil
	}
	if quotaErr != nil {
		return nil, quotaErr
	}
	return nil, &messages.Error{Code: messages.CodeNoCapacity, Msg: fmt.Sprintf(
		"no host of pool %s serving profile %s has a free slot (%d tried): wait (--wait), delete a sandbox, or add hosts", pool, profile, len(cands))}
}

// OpenSandbox returns a handle on session id with its token; pool "" is
// looked up in the host registry (a host gone from it: ErrSandboxGone).
func (c *Client) OpenSandbox(ctx context.Context, id, token, pool string) (*Sandbox, error) {
	host, _, err := messages.ParseSandboxID(id)
	if err != nil {
		return nil, err
	}
	if pool == "" {
		hosts, err := c.Hosts(ctx)
		if err != nil {
			return nil, err
		}
		for _, h := range hosts {
			if messages.HostToken(h.ID) == host {
				pool = h.Pool
			}
		}
		if pool == "" {
			return nil, goneErr(id, host)
		}
	}
	return &Sandbox{ID: id, Host: host, Pool: pool, Token: token, c: c}, nil
}

func goneErr(id, host string) error {
	return &messages.Error{Code: messages.CodeSandboxGone, Msg: fmt.Sprintf(
		"sandbox %s is gone: its host %s is not in the fleet any more (it stopped or crashed, and its sandboxes ended with it)", id, host)}
}

// request sends one request to the sandbox's host and decodes the reply;
// a reply's error comes back as its *messages.Error.
func (s *Sandbox) request(ctx context.Context, op messages.SandboxOp, req *messages.SandboxRequest) (*messages.SandboxReply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sandboxRequestTimeout)
		defer cancel()
	}
	return s.requestCtx(ctx, op, req)
}

func (s *Sandbox) requestCtx(ctx context.Context, op messages.SandboxOp, req *messages.SandboxRequest) (*messages.SandboxReply, error) {
	req.V = messages.Version
	if op != messages.SbxCreate && op != messages.SbxSessions {
		req.ID, req.Token = s.ID, s.Token
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m, err := s.c.nc.RequestWithContext(ctx, messages.SandboxSubject(s.Pool, s.Host, s.c.cfg.Tenant, op), b)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, goneErr(cmp.Or(s.ID, "(new)"), s.Host)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		// Through a tenant's service import a stopped host gives no "no
		// responders": a host gone from the registry is gone.
		if s.hostGone() {
			return nil, goneErr(cmp.Or(s.ID, "(new)"), s.Host)
		}
		return nil, fmt.Errorf("scheduler: sandbox host %s did not answer %s in time (overloaded, or partitioned from the broker): %w", s.Host, op, err)
	case err != nil:
		return nil, fmt.Errorf("scheduler: sandbox %s: %w", op, err)
	}
	return messages.DecodeSandboxReply(m.Data)
}

// hostGone reports whether the registry no longer lists the host.
func (s *Sandbox) hostGone() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hosts, err := s.c.Hosts(ctx)
	if err != nil {
		return false
	}
	for _, h := range hosts {
		if messages.HostToken(h.ID) == s.Host && h.Pool == s.Pool {
			return false
		}
	}
	return true
}

// Status reports the session's state.
func (s *Sandbox) Status(ctx context.Context) (*messages.SandboxInfo, error) {
	r, err := s.request(ctx, messages.SbxStatus, &messages.SandboxRequest{})
	if err != nil {
		return nil, err
	}
	if r.Sandbox == nil {
		return nil, fmt.Errorf("scheduler: status reply without the sandbox")
	}
	return r.Sandbox, nil
}

// Delete ends the session: its processes are killed, its home removed, its
// slot freed.
func (s *Sandbox) Delete(ctx context.Context) error {
	_, err := s.request(ctx, messages.SbxDelete, &messages.SandboxRequest{})
	return err
}

// Ps lists the commands running in the session.
func (s *Sandbox) Ps(ctx context.Context) ([]messages.SandboxProcess, error) {
	r, err := s.request(ctx, messages.SbxPs, &messages.SandboxRequest{})
	if err != nil {
		return nil, err
	}
	return r.Processes, nil
}

// Kill sends signal (a name of messages.SandboxSignals; "" = SIGTERM) to
// command pid of the session and its process group.
func (s *Sandbox) Kill(ctx context.Context, pid int, signal string) error {
	_, err := s.request(ctx, messages.SbxKill, &messages.SandboxRequest{Kill: &messages.SandboxKill{PID: pid, Signal: signal}})
	return err
}

// ListSessions lists the caller's sessions on every host of pool ("" =
// every pool), asking the hosts in the registry.
func (c *Client) ListSessions(ctx context.Context, pool string) ([]messages.SandboxInfo, error) {
	hosts, err := c.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	var out []messages.SandboxInfo
	var errs []error
	for _, h := range hosts {
		if pool != "" && h.Pool != pool {
			continue
		}
		sb := &Sandbox{Host: messages.HostToken(h.ID), Pool: h.Pool, c: c}
		r, err := sb.request(ctx, messages.SbxSessions, &messages.SandboxRequest{})
		if errors.Is(err, messages.ErrSandboxGone) {
			continue // the host stopped since the registry saw it
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", h.ID, err))
			continue
		}
		out = append(out, r.Sandboxes...)
	}
	slices.SortFunc(out, func(a, b messages.SandboxInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, errors.Join(errs...)
}
