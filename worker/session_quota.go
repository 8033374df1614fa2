package worker

import (
	"fmt"
	"time"

	"github.com/warrenhq/warren/messages"
)

// A tenant's sessions on this host are bounded by its quota
// (messages.TenantQuota, read from the tenant registry by watchTenants):
// Sessions open at once, never more than half the host's slots (at least
// one), so no tenant holds every slot through sessions; and SessionTTLMS,
// the longest TTL it may ask for. The tenant is the subject's tenant
// token, which the broker lets only that tenant publish under: never a
// field of the request. The fleet's own sessions (no tenant) have no
// quota.

// sessionQuota is what one tenant may open on this host.
type sessionQuota struct {
	tenant string
	host   string
	// open is the most sessions it may have open here; halved says open
	// is half the host's slots, below its quota's Sessions.
	open   int
	halved bool
	ttl    time.Duration // the longest TTL it may ask for
}

// sessionQuota is tenant's quota on this host: its registry entry's, the
// defaults for a tenant the worker has no entry for, nil for the fleet's
// own sessions.
func (w *Worker) sessionQuota(tenant string) *sessionQuota {
	if tenant == "" {
		return nil
	}
	q := messages.DefaultTenantQuota
	w.spaces.mu.Lock()
	s := w.spaces.m[tenant]
	w.spaces.mu.Unlock()
	if s != nil {
		if p := s.quota.Load(); p != nil {
			q = p.WithDefaults()
		}
	}
	half := max(w.cfg.Capacity/2, 1)
	return &sessionQuota{tenant: tenant, host: w.cfg.HostID, open: min(q.Sessions, half), halved: half < q.Sessions, ttl: q.SessionTTL()}
}

// full is the refusal of a create past the open-sessions cap, n being the
// tenant's sessions open or opening here.
func (q *sessionQuota) full(n int) error {
	why := fmt.Sprintf("its quota (`warren auth quota %s sessions=N` raises it; `warren sandbox rm` frees one)", q.tenant)
	if q.halved {
		why = "half the host's slots, the most one tenant may hold (`warren sandbox rm` frees one; another host may have room)"
	}
	return &messages.Error{Code: messages.CodeQuotaExceeded, Field: "quota.sessions",
		Msg: fmt.Sprintf("tenant %s has %d open sessions on host %s, %s", q.tenant, n, q.host, why)}
}

// sessionTTL is the TTL of a create that asked for asked ms (0: the
// host's default, capped by the tenant's TTL cap). A TTL above the
// host's MaxTTL or the tenant's cap is refused, not shortened: the
// session's expiry is always the one asked for or the default.
func (s *Sessions) sessionTTL(q *sessionQuota, asked int64) (time.Duration, error) {
	ttl := time.Duration(asked) * time.Millisecond
	if ttl == 0 {
		ttl = s.cfg.DefaultTTL
		if q != nil {
			ttl = min(ttl, q.ttl)
		}
	}
	if ttl > s.cfg.MaxTTL {
		return 0, &messages.Error{Code: messages.CodeInvalidField, Field: "create.ttl_ms", Msg: fmt.Sprintf("%s exceeds this host's maximum %s", ttl, s.cfg.MaxTTL)}
	}
	if q != nil && ttl > q.ttl {
		return 0, &messages.Error{Code: messages.CodeQuotaExceeded, Field: "create.ttl_ms",
			Msg: fmt.Sprintf("%s exceeds tenant %s's session TTL cap %s: ask for at most %s, or none (the cap is then the TTL); `warren auth quota %s session_ttl=%s` raises it",
				ttl, q.tenant, q.ttl, q.ttl, q.tenant, ttl)}
	}
	return ttl, nil
}

// admit counts a create of q's tenant as opening, unless its sessions
// open or opening here reach its cap; the returned func ends the count
// (once the create is done, the session in s.live or not).
func (s *Sessions) admit(q *sessionQuota) (func(), error) {
	if q == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.opening[q.tenant]
	for _, ls := range s.live {
		if ls.tenant == q.tenant {
			n++
		}
	}
	if n >= q.open {
		return nil, q.full(n)
	}
	if s.opening == nil {
		s.opening = map[string]int{}
	}
	s.opening[q.tenant]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.opening[q.tenant]--; s.opening[q.tenant] == 0 {
			delete(s.opening, q.tenant)
		}
	}, nil
}
