package worker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/messages"
)

// SessionsConfig configures a host's sandbox sessions.
type SessionsConfig struct {
	// Factory starts one session. Required.
	Factory SessionFactory
	// Root is where session homes are made (one directory per session,
	// removed by the session's Close). Defaults to $TMPDIR/warren-sessions.
	Root string
	// DefaultIdle ends a session with nothing running and no request for
	// this long, when its create set none. Defaults to 10m.
	DefaultIdle time.Duration
	// DefaultTTL is a session's life when its create set none. Defaults to 1h.
	DefaultTTL time.Duration
	// MaxTTL caps a create's TTL. Defaults to 24h.
	MaxTTL time.Duration
	// KeyFile holds the hex key session tokens are signed with (at least 32
	// bytes). Defaults to "": a random key per start (sessions end with
	// their worker, so their tokens need not outlive it).
	KeyFile string
	// Sweep is how often idle, expired and dead sessions are looked for.
	// Defaults to 1s.
	Sweep time.Duration
	// MaxRequests bounds requests handled at once (each exec holds one
	// while it runs). Defaults to 256.
	MaxRequests int
	// InboxPrefixes are where exec output may go besides a tenant's inbox.
	// Defaults to the worker's.
	InboxPrefixes []string
	// Logger defaults to the worker's.
	Logger *zerolog.Logger
}

func (c SessionsConfig) withDefaults(w *Worker) SessionsConfig {
	c.Root = cmp.Or(c.Root, filepath.Join(os.TempDir(), "warren-sessions"))
	c.DefaultIdle = cmp.Or(c.DefaultIdle, 10*time.Minute)
	c.DefaultTTL = cmp.Or(c.DefaultTTL, time.Hour)
	c.MaxTTL = cmp.Or(c.MaxTTL, 24*time.Hour)
	c.Sweep = cmp.Or(c.Sweep, time.Second)
	c.MaxRequests = cmp.Or(c.MaxRequests, 256)
	if len(c.InboxPrefixes) == 0 {
		c.InboxPrefixes = w.cfg.InboxPrefixes
	}
	return c
}

func (c SessionsConfig) validate() error {
	switch {
	case c.Factory == nil:
		return errors.New("worker sessions config: Factory is required")
	case c.DefaultTTL > c.MaxTTL:
		return fmt.Errorf("worker sessions config: DefaultTTL %s exceeds MaxTTL %s", c.DefaultTTL, c.MaxTTL)
	case c.Sweep <= 0 || c.DefaultIdle <= 0:
		return errors.New("worker sessions config: Sweep and DefaultIdle must be positive")
	}
	for _, p := range c.InboxPrefixes {
		if err := messages.CheckInboxPrefix(p); err != nil {
			return fmt.Errorf("worker sessions config: InboxPrefixes: %w", err)
		}
	}
	return nil
}

// Sessions serves a host's sandbox sessions on its session subjects
// (messages.SandboxHostFilter). Each session holds one of the worker's
// slots from create to its end.
type Sessions struct {
	w   *Worker
	cfg SessionsConfig
	key *tokenKey
	log zerolog.Logger

	mu   sync.Mutex
	live map[string]*liveSession
	// opening counts each tenant's creates under way (admit).
	opening map[string]int
	ended   endedLog
	closed  bool // Stop is ending the sessions: no new one joins live

	sub      *nats.Subscription
	reqs     chan struct{} // a token per request handled at once
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup // handlers, reaper, closes
	draining atomic.Bool

	startOnce, stopOnce sync.Once
	started             atomic.Bool
	stopped             chan struct{}
}

// liveSession is one open session.
type liveSession struct {
	sb      SessionSandbox
	info    messages.SandboxInfo // ID, Host, Pool, Profile, Created, Expires, IdleMS
	tenant  string
	idle    time.Duration
	home    string // removed after Close, whatever the primitive left
	release func()

	mu       sync.Mutex
	inflight int       // requests being handled
	lastReq  time.Time // end of the last request
	closing  bool
}

// NewSessions prepares w's sessions; nothing runs until Start.
func NewSessions(w *Worker, cfg SessionsConfig) (*Sessions, error) {
	cfg = cfg.withDefaults(w)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	key, err := loadTokenKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	log := w.log.With().Str("component", "sessions").Logger()
	if cfg.Logger != nil {
		log = cfg.Logger.With().Str("component", "sessions").Str("host", w.cfg.HostID).Logger()
	}
	return &Sessions{w: w, cfg: cfg, key: key, log: log, live: map[string]*liveSession{},
		reqs: make(chan struct{}, cfg.MaxRequests), stopped: make(chan struct{})}, nil
}

// Start subscribes to the host's session subjects and starts the reaper.
func (s *Sessions) Start(ctx context.Context) error {
	err := errors.New("worker sessions: already started")
	s.startOnce.Do(func() { err = s.start(ctx) })
	return err
}

func (s *Sessions) start(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.Root, 0o711); err != nil {
		return fmt.Errorf("worker sessions: Root: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	sub, err := s.w.nc.Subscribe(messages.SandboxHostFilter(s.w.cfg.Pool, s.w.cfg.HostID), s.dispatch)
	if err != nil {
		s.cancel()
		return fmt.Errorf("worker sessions: subscribe: %w", err)
	}
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()
	if err := s.w.nc.FlushWithContext(fctx); err != nil {
		_ = sub.Unsubscribe()
		s.cancel()
		return fmt.Errorf("worker sessions: subscribe: %w", err)
	}
	s.sub = sub
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.reaper() }()
	s.started.Store(true)
	return nil
}

// Stop refuses new sessions, waits for the open ones to end (idle, TTL,
// delete) until ctx ends (the drain deadline), then ends the rest and
// returns ctx's error if it had to. Safe to call more than once and
// before Start.
func (s *Sessions) Stop(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		defer close(s.stopped)
		if !s.started.Load() {
			return
		}
		s.draining.Store(true)
		t := time.NewTicker(s.cfg.Sweep / 4)
		defer t.Stop()
		for s.open() > 0 && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		if s.open() > 0 {
			err = ctx.Err()
		}
		s.mu.Lock()
		s.closed = true
		ids := make([]string, 0, len(s.live))
		for id := range s.live {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		for _, id := range ids {
			s.end(id, messages.EndDrain)
		}
		// Flushed, so that a request sent after Stop returns finds no
		// responder at once.
		_ = s.sub.Unsubscribe()
		fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.w.nc.FlushWithContext(fctx)
		fcancel()
		s.cancel()
		s.wg.Wait()
	})
	<-s.stopped
	return err
}

// Open counts the open sessions.
func (s *Sessions) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// dispatch hands a request to its own goroutine: an exec may run for long.
func (s *Sessions) dispatch(m *nats.Msg) {
	if s.ctx.Err() != nil {
		s.reply(m, nil, &messages.Error{Code: messages.CodeSandboxGone, Msg: fmt.Sprintf("host %s stopped; its sandboxes ended with it", s.w.cfg.HostID)})
		return
	}
	select {
	case s.reqs <- struct{}{}:
	default:
		s.reply(m, nil, &messages.Error{Code: messages.CodeNoCapacity, Msg: "this host is handling too many sandbox requests; retry shortly"})
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.reqs }()
		s.handle(m)
	}()
}

func (s *Sessions) reply(m *nats.Msg, r *messages.SandboxReply, err error) {
	if m.Reply == "" {
		return
	}
	if r == nil {
		r = &messages.SandboxReply{}
	}
	r.V = messages.Version
	if err != nil {
		var me *messages.Error
		if !errors.As(err, &me) {
			s.log.Error().Err(err).Str("subject", m.Subject).Msg("sandbox request failed")
			me = &messages.Error{Code: messages.CodeInternal, Msg: err.Error()}
		}
		r = &messages.SandboxReply{V: messages.Version, Error: me}
	}
	b, jerr := json.Marshal(r)
	if jerr != nil {
		b, _ = json.Marshal(messages.SandboxReply{V: messages.Version, Error: &messages.Error{Code: messages.CodeInternal, Msg: jerr.Error()}})
	}
	if err := m.Respond(b); err != nil {
		s.log.Warn().Err(err).Msg("sandbox reply not sent")
	}
}

func (s *Sessions) handle(m *nats.Msg) {
	_, _, tenant, op, ok := messages.ParseSandboxSubject(m.Subject)
	if !ok {
		s.reply(m, nil, &messages.Error{Code: messages.CodeInvalidField, Field: "op", Msg: fmt.Sprintf("%q is not a sandbox operation subject", m.Subject)})
		return
	}
	req, err := messages.DecodeSandboxRequest(op, m.Data)
	if err != nil {
		s.reply(m, nil, err)
		return
	}
	switch op {
	case messages.SbxCreate:
		r, err := s.create(tenant, req.Create)
		s.reply(m, r, err)
		return
	case messages.SbxSessions:
		s.reply(m, &messages.SandboxReply{Sandboxes: s.list(tenant)}, nil)
		return
	}
	ls, err := s.lookup(req.ID, req.Token, tenant)
	if err != nil {
		s.reply(m, nil, err)
		return
	}
	// Asking for the status is not activity: a poller does not keep a
	// session from idling out.
	defer ls.done(op != messages.SbxStatus)
	r, err := s.op(ls, op, tenant, req)
	s.reply(m, r, err)
}

// lookup checks the token and returns the open session, marked busy (call
// done when the request is over).
func (s *Sessions) lookup(id, token, tenant string) (*liveSession, error) {
	if err := s.key.check(token, id, tenant, time.Now()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ls := s.live[id]
	reason := s.ended.reason(id)
	s.mu.Unlock()
	if ls == nil || ls.tenant != tenant {
		msg := fmt.Sprintf("sandbox %s is gone from host %s", id, s.w.cfg.HostID)
		if reason != "" {
			msg += fmt.Sprintf(" (ended: %s)", reason)
		} else {
			msg += " (it ended, or the host restarted)"
		}
		return nil, &messages.Error{Code: messages.CodeSandboxGone, Msg: msg + "; create a new one"}
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closing {
		return nil, &messages.Error{Code: messages.CodeSandboxGone, Msg: fmt.Sprintf("sandbox %s is ending", id)}
	}
	ls.inflight++
	return ls, nil
}

func (ls *liveSession) done(activity bool) {
	ls.mu.Lock()
	ls.inflight--
	if activity {
		ls.lastReq = time.Now()
	}
	ls.mu.Unlock()
}

func (s *Sessions) create(tenant string, c *messages.SandboxCreate) (*messages.SandboxReply, error) {
	if c == nil {
		c = &messages.SandboxCreate{}
	}
	if s.draining.Load() || s.w.draining.Load() {
		return nil, &messages.Error{Code: messages.CodeDraining, Msg: fmt.Sprintf("host %s is draining and takes no new sandboxes; another host will", s.w.cfg.HostID)}
	}
	profile := cmp.Or(c.Profile, messages.DefaultProfile)
	if !slices.Contains(s.w.cfg.ExecProfiles, profile) {
		return nil, &messages.Error{Code: messages.CodeInvalidField, Field: "create.profile", Msg: fmt.Sprintf("host %s serves exec profiles %v, not %q", s.w.cfg.HostID, s.w.cfg.ExecProfiles, profile)}
	}
	quota := s.w.sessionQuota(tenant)
	ttl, err := s.sessionTTL(quota, c.TTLMS)
	if err != nil {
		return nil, err
	}
	opened, err := s.admit(quota)
	if err != nil {
		return nil, err
	}
	defer opened()
	idle := time.Duration(c.IdleMS) * time.Millisecond
	if idle == 0 {
		idle = s.cfg.DefaultIdle
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	if !s.w.reserveSlot(ctx) {
		return nil, &messages.Error{Code: messages.CodeNoCapacity, Msg: fmt.Sprintf("host %s has no free slot (%d, all running tasks or sandboxes); try another host or --wait", s.w.cfg.HostID, s.w.cfg.Capacity)}
	}
	var lb [messages.SandboxLocalBytes / 2]byte
	_, _ = rand.Read(lb[:])
	id := messages.SandboxID(s.w.cfg.HostID, hex.EncodeToString(lb[:]))
	home := filepath.Join(s.cfg.Root, hex.EncodeToString(lb[:]))
	spec := sessionSpec(c, home, ttl)
	// The operator's AF_UNIX opt-in is per exec profile, for sessions as for tasks.
	spec.Sandbox.UnixSockets = s.w.unixSockets(profile, spec.Sandbox.Isolation)
	sb, err := s.cfg.Factory(ctx, s.w.cfg.Runner, spec)
	if err != nil {
		_ = os.RemoveAll(home)
		s.w.releaseSlot()
		return nil, &messages.Error{Code: messages.CodeSandboxSetup, Msg: fmt.Sprintf("starting the sandbox failed: %v", err)}
	}
	now := time.Now().UTC()
	ls := &liveSession{sb: sb, tenant: tenant, idle: idle, home: home, release: s.w.releaseSlot, lastReq: now,
		info: messages.SandboxInfo{ID: id, Host: s.w.cfg.HostID, Pool: s.w.cfg.Pool, Profile: profile,
			Created: now, Expires: now.Add(ttl).Truncate(time.Second), IdleMS: idle.Milliseconds()}}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.live[id] = ls
	}
	s.mu.Unlock()
	if closed { // Stop began ending the sessions while this one started
		_ = sb.Close(ctx)
		_ = os.RemoveAll(home)
		s.w.releaseSlot()
		return nil, &messages.Error{Code: messages.CodeDraining, Msg: fmt.Sprintf("host %s is stopping and takes no new sandboxes; another host will", s.w.cfg.HostID)}
	}
	s.log.Info().Str("sandbox", id).Str("tenant", tenant).Dur("ttl", ttl).Dur("idle", idle).Msg("sandbox session created")
	info := ls.status()
	return &messages.SandboxReply{Sandbox: &info, Token: s.key.mint(id, tenant, info.Expires)}, nil
}

func (ls *liveSession) status() messages.SandboxInfo {
	info := ls.info
	info.State = messages.SandboxRunning
	ls.mu.Lock()
	if ls.closing {
		info.State = messages.SandboxClosing
	}
	last := ls.lastReq
	ls.mu.Unlock()
	if a := ls.sb.LastActivity(); a.After(last) {
		last = a
	}
	info.LastActivity = last.UTC()
	info.Running = ls.sb.Running()
	return info
}

func (s *Sessions) list(tenant string) []messages.SandboxInfo {
	s.mu.Lock()
	var out []*liveSession
	for _, ls := range s.live {
		if ls.tenant == tenant {
			out = append(out, ls)
		}
	}
	s.mu.Unlock()
	infos := make([]messages.SandboxInfo, 0, len(out))
	for _, ls := range out {
		infos = append(infos, ls.status())
	}
	slices.SortFunc(infos, func(a, b messages.SandboxInfo) int { return cmp.Compare(a.ID, b.ID) })
	return infos
}

// end closes session id (if still open) for reason and gives its slot back.
func (s *Sessions) end(id string, reason messages.SandboxEnd) {
	s.mu.Lock()
	ls := s.live[id]
	delete(s.live, id)
	if ls != nil {
		s.ended.add(id, reason)
	}
	s.mu.Unlock()
	if ls == nil {
		return
	}
	ls.mu.Lock()
	ls.closing = true
	ls.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ls.sb.Close(ctx); err != nil {
		s.log.Error().Err(err).Str("sandbox", id).Msg("sandbox teardown failed")
	}
	if err := os.RemoveAll(ls.home); err != nil {
		s.log.Error().Err(err).Str("sandbox", id).Msg("removing the sandbox's home failed")
	}
	ls.release()
	s.log.Info().Str("sandbox", id).Str("reason", string(reason)).Msg("sandbox session ended")
}

// reaper ends sessions that died, expired or idled.
func (s *Sessions) reaper() {
	t := time.NewTicker(s.cfg.Sweep)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.sweep(time.Now())
	}
}

func (s *Sessions) sweep(now time.Time) {
	type victim struct {
		id     string
		reason messages.SandboxEnd
	}
	var vs []victim
	s.mu.Lock()
	for id, ls := range s.live {
		if r := ls.endReason(now); r != "" {
			vs = append(vs, victim{id, r})
		}
	}
	s.mu.Unlock()
	for _, v := range vs {
		s.end(v.id, v.reason)
	}
}

// endReason says why the session should end now, "" to keep it.
func (ls *liveSession) endReason(now time.Time) messages.SandboxEnd {
	select {
	case <-ls.sb.Done():
		return messages.EndFailed
	default:
	}
	if !now.Before(ls.info.Expires) {
		return messages.EndTTL
	}
	ls.mu.Lock()
	busy, last := ls.inflight > 0, ls.lastReq
	ls.mu.Unlock()
	if busy || ls.sb.Running() > 0 {
		return ""
	}
	if a := ls.sb.LastActivity(); a.After(last) {
		last = a
	}
	if now.Sub(last) >= ls.idle {
		return messages.EndIdle
	}
	return ""
}

// endedLog remembers why the last sessions ended, for their gone errors.
type endedLog struct {
	order []string
	why   map[string]messages.SandboxEnd
}

const endedKept = 1024

func (e *endedLog) add(id string, r messages.SandboxEnd) {
	if e.why == nil {
		e.why = map[string]messages.SandboxEnd{}
	}
	if len(e.order) == endedKept {
		delete(e.why, e.order[0])
		e.order = e.order[1:]
	}
	e.order = append(e.order, id)
	e.why[id] = r
}

func (e *endedLog) reason(id string) messages.SandboxEnd { return e.why[id] }
