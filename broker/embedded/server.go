package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/warrenhq/warren/broker"
)

// Config configures an embedded broker.
type Config struct {
	// DataDir holds the JetStream file store. Required.
	DataDir string
	// Name is the server's name, unique in a cluster. Defaults to "warren".
	Name string
	// Cluster joins the server to a cluster of embedded brokers (`warren
	// broker --cluster`, tests). Defaults to none: a single server.
	Cluster *ClusterConfig
	// Host to listen on. Defaults to 127.0.0.1.
	Host string
	// Port to listen on; -1 picks a free port. Defaults to 4222.
	Port int
	// DontListen opens no TCP listener: in-process connections only (a
	// client command's own embedded broker, tests). Defaults to false.
	DontListen bool
	// MaxPayload is the largest message the server accepts. Defaults to 8 MiB
	// (a task is at most 1 MiB; results carry captured output).
	MaxPayload int32
	// ReadyTimeout bounds Start. Defaults to 10s.
	ReadyTimeout time.Duration
	// Logger receives server lifecycle logs. Defaults to a disabled logger.
	Logger zerolog.Logger
	// ConfigFile is a nats-server configuration (DIR/server.conf from
	// `warren auth init`) whose accounts, users, permissions and TLS the
	// server enforces. The fields above override its listen address, store
	// and payload limit. The server reloads it when it changes, so
	// `warren auth add-submitter` and `revoke` take effect without a restart.
	// Defaults to none: no authentication.
	ConfigFile string
	// TLS, when Cert and Key are set, serves TLS with these files (over any
	// TLS in ConfigFile). TLS.CA is not used by the server: client
	// certificates are not asked for (clients authenticate with nkeys).
	// Defaults to no TLS.
	TLS broker.TLSFiles
	// ReloadInterval is how often ConfigFile is checked for changes.
	// Defaults to 1s.
	ReloadInterval time.Duration
	// AfterReload, when set, is called after each reload of ConfigFile
	// that took effect, on the goroutine watching the file (the server's
	// own, stopped by Stop): e.g. to create a new tenant's streams once
	// its account exists. Defaults to none.
	AfterReload func()
	// AlsoWatch are files besides ConfigFile whose change calls
	// AfterReload without reloading the server (a reload briefly leaves
	// JetStream requests without a responder): the auth directory's
	// auth.json, whose quotas change without the server's configuration.
	// Checked every ReloadInterval, only with a ConfigFile. Defaults to
	// none.
	AlsoWatch []string
	// DiskCheckInterval is how often the store guard looks at the data
	// dir's free space and at JetStream's store. Defaults to 1s.
	DiskCheckInterval time.Duration
	// LowDiskFree is the free space of the data dir's filesystem below
	// which the broker warns (and, after a store failure, stays down).
	// Defaults to a tenth of the filesystem's size, at most 1 GiB.
	LowDiskFree int64
	// LowDiskWarnEvery is how often a low-disk or store-failure warning
	// is repeated while it holds. Defaults to 1m.
	LowDiskWarnEvery time.Duration
	// AfterRestart, when set, is called after the server restarted
	// itself (its store failed a write and space came back), on the store
	// guard's goroutine: the new server has a new ID. Defaults to none.
	AfterRestart func()
}

// ClusterConfig places an embedded broker in a JetStream cluster.
type ClusterConfig struct {
	// Name of the cluster; every node has the same. Required.
	Name string
	// Host and Port the cluster (route) listener binds. Required: a node
	// restarted must be found where its peers' routes point.
	Host string
	Port int
	// Routes are the other nodes' route URLs (nats-route://host:port).
	Routes []string
}

func (c Config) withDefaults() Config {
	c.Name = cmp.Or(c.Name, "warren")
	c.Host = cmp.Or(c.Host, "127.0.0.1")
	c.Port = cmp.Or(c.Port, DefaultPort)
	c.MaxPayload = cmp.Or(c.MaxPayload, 8<<20)
	c.ReadyTimeout = cmp.Or(c.ReadyTimeout, 10*time.Second)
	c.ReloadInterval = cmp.Or(c.ReloadInterval, time.Second)
	c.DiskCheckInterval = cmp.Or(c.DiskCheckInterval, time.Second)
	c.LowDiskWarnEvery = cmp.Or(c.LowDiskWarnEvery, time.Minute)
	return c
}

func (c Config) validate() error {
	if c.DataDir == "" {
		return errors.New("broker config: DataDir is required")
	}
	if c.Port < -1 || c.Port > 65535 {
		return fmt.Errorf("broker config: Port %d is out of range", c.Port)
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		return errors.New("broker config: TLS.Cert and TLS.Key go together (--tls-cert and --tls-key)")
	}
	if cl := c.Cluster; cl != nil && (cl.Name == "" || cl.Port <= 0 || cl.Port > 65535) {
		return fmt.Errorf("broker config: Cluster needs a Name and a fixed Port, got %q and %d", cl.Name, cl.Port)
	}
	return nil
}

// DefaultPort is where `warren broker` and `warren up` listen.
const DefaultPort = 4222

// Server is an embedded nats-server with JetStream.
type Server struct {
	cfg Config
	log zerolog.Logger

	mu      sync.Mutex
	ns      *server.Server
	lock    *os.File // DataDir's lock, held from Start to Stop
	stopped chan struct{}
	once    sync.Once

	port      int // the client port bound at Start, for restarts
	stopWatch chan struct{}
	watching  sync.WaitGroup // the config watch and the store guard
	reloads   atomic.Int64   // configurations reloaded (Reload)
	disk      diskState      // the store guard's findings (store.go)
}

// New checks the config; nothing runs until Start.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, log: cfg.Logger.With().Str("component", "broker").Logger(), stopped: make(chan struct{}), stopWatch: make(chan struct{})}, nil
}

// Start runs the server and returns once it accepts connections.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns != nil {
		return errors.New("broker: already started")
	}
	opts, err := s.options()
	if err != nil {
		return err
	}
	lock, err := lockDataDir(s.cfg.DataDir)
	if err != nil {
		return err
	}
	deadline := s.cfg.ReadyTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < deadline {
		deadline = time.Until(d)
	}
	ns, err := s.launch(opts, deadline)
	if err != nil {
		_ = lock.Close()
		return err
	}
	s.ns, s.lock = ns, lock
	if tcp, ok := ns.Addr().(*net.TCPAddr); ok {
		s.port = tcp.Port // a restart binds it again, even when Port was -1
	}
	s.log.Info().Str("url", s.clientURL(ns)).Str("store", opts.StoreDir).Bool("auth", s.cfg.ConfigFile != "").Bool("tls", opts.TLSConfig != nil).Msg("embedded broker ready")
	if s.cfg.ConfigFile != "" {
		s.watching.Add(1)
		go func() { defer s.watching.Done(); s.watchConfig() }()
	}
	if st, err := statDisk(s.cfg.DataDir, s.cfg.LowDiskFree); err == nil {
		s.disk.set(st) // Disk answers from the start
	}
	s.watching.Add(1)
	go func() { defer s.watching.Done(); s.guardStore() }()
	return nil
}

// launch starts a nats-server with opts and waits up to d until it
// accepts connections; on failure it is shut down again.
func (s *Server) launch(opts *server.Options, d time.Duration) (*server.Server, error) {
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("broker: configure nats-server: %w", err)
	}
	logs := &serverLog{log: s.log}
	ns.SetLoggerV2(logs, false, false, false)
	go ns.Start()
	if err := s.waitReady(ns, logs, d); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, err
	}
	return ns, nil
}

// current is the running nats-server (nil before Start): a new one after
// each restart (store.go).
func (s *Server) current() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ns
}

// ClientURL is the URL other processes connect to ("" with DontListen).
// It stays the same across restarts (store.go).
func (s *Server) ClientURL() string {
	return s.clientURL(s.current())
}

func (s *Server) clientURL(ns *server.Server) string {
	if ns == nil || s.cfg.DontListen {
		return ""
	}
	return ns.ClientURL()
}

// ID is the running server's unique id (new at every start, and at every
// restart after a store failure), as its INFO reports it to clients (""
// before Start).
func (s *Server) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns == nil {
		return ""
	}
	return s.ns.ID()
}

// HasInterest reports whether a client subscription would receive a
// message published on subject now (for tests that must wait until a
// subscriber started elsewhere is in place).
func (s *Server) HasInterest(subject string) bool {
	ns := s.current()
	return ns != nil && ns.GlobalAccount().SubscriptionInterest(subject)
}

// StoreLimit is the running server's JetStream file storage in bytes (its
// max_file_store: nats-server takes 75% of the free disk of the store
// directory at start when none is configured); 0 before Start.
func (s *Server) StoreLimit() int64 {
	ns := s.current()
	if ns == nil {
		return 0
	}
	if c := ns.JetStreamConfig(); c != nil {
		return c.MaxStore
	}
	return 0
}

// HasInterestIn is HasInterest in the named account (a tenant's, on a
// broker with an auth configuration); false when there is no such account.
func (s *Server) HasInterestIn(account, subject string) bool {
	ns := s.current()
	if ns == nil {
		return false
	}
	acc, err := ns.LookupAccount(account)
	return err == nil && acc.SubscriptionInterest(subject)
}

// Connect opens an in-process connection to the server. It reconnects
// for as long as it is open, to the server running then: a restart after
// a store failure (store.go) is a short disconnection, as for a TCP
// client. opts come after these defaults and may override them.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if s.current() == nil {
		return nil, errors.New("broker: not started")
	}
	base := []nats.Option{
		nats.InProcessServer(inProcess{s}), nats.Name("warren-inprocess"),
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond),
	}
	return nats.Connect("", append(base, opts...)...)
}

// inProcess dials whichever nats-server runs now.
type inProcess struct{ s *Server }

func (p inProcess) InProcessConn() (net.Conn, error) {
	ns := p.s.current()
	if ns == nil {
		return nil, errors.New("broker: not running")
	}
	return ns.InProcessConn()
}

// Stop shuts the server down and waits for it. Safe to call more than once
// and before Start.
func (s *Server) Stop() {
	s.once.Do(func() {
		close(s.stopWatch)
		s.watching.Wait()
		s.mu.Lock()
		ns, lock := s.ns, s.lock
		s.mu.Unlock()
		if ns != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
			_ = lock.Close() // after the store is closed
		}
		close(s.stopped)
	})
}

// Stopped is closed once Stop has finished.
func (s *Server) Stopped() <-chan struct{} { return s.stopped }
