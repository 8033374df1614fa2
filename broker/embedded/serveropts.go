package embedded

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// options builds the server options: ConfigFile's (accounts, users, TLS)
// when set, with Config's listen address, store and limits over them.
func (s *Server) options() (*server.Options, error) {
	opts := &server.Options{}
	if s.cfg.ConfigFile != "" {
		o, err := server.ProcessConfigFile(s.cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("broker: auth config: %w", err)
		}
		opts = o
	}
	opts.ServerName = s.cfg.Name
	opts.Host, opts.Port, opts.DontListen = s.cfg.Host, s.cfg.Port, s.cfg.DontListen
	opts.JetStream = true
	opts.StoreDir = filepath.Join(s.cfg.DataDir, "jetstream")
	opts.MaxPayload = s.cfg.MaxPayload
	opts.NoSigs, opts.NoLog = true, true
	if cl := s.cfg.Cluster; cl != nil {
		opts.Cluster = server.ClusterOpts{Name: cl.Name, Host: cmp.Or(cl.Host, s.cfg.Host), Port: cl.Port}
		opts.Routes = server.RoutesFromStr(strings.Join(cl.Routes, ","))
	}
	if s.cfg.TLS.Cert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: s.cfg.TLS.Cert, KeyFile: s.cfg.TLS.Key, Timeout: 5})
		if err != nil {
			return nil, fmt.Errorf("broker: TLS: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		opts.TLSConfig, opts.TLSVerify, opts.TLSTimeout = tc, false, 5
	}
	return opts, nil
}

// watchConfig reloads ConfigFile when it changes: a revoked user is
// disconnected, a new tenant can connect. A file that does not parse is
// logged and the running configuration kept. A change of a file of
// AlsoWatch alone calls AfterReload without a reload.
func (s *Server) watchConfig() {
	last := modTime(s.cfg.ConfigFile)
	also := watchedTimes(s.cfg.AlsoWatch)
	t := time.NewTicker(s.cfg.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopWatch:
			return
		case <-t.C:
		}
		m, a := modTime(s.cfg.ConfigFile), watchedTimes(s.cfg.AlsoWatch)
		changed, alsoChanged := !m.Equal(last), !slices.EqualFunc(a, also, time.Time.Equal)
		last, also = m, a
		switch {
		case changed:
			if err := s.Reload(); err != nil {
				s.log.Error().Err(err).Str("config", s.cfg.ConfigFile).Msg("auth config changed but could not be loaded; keeping the running one")
				continue
			}
			s.log.Info().Str("config", s.cfg.ConfigFile).Msg("auth config reloaded")
		case alsoChanged:
			s.log.Info().Strs("files", s.cfg.AlsoWatch).Msg("auth state changed")
		default:
			continue
		}
		if s.cfg.AfterReload != nil {
			s.cfg.AfterReload()
		}
	}
}

func watchedTimes(paths []string) []time.Time {
	out := make([]time.Time, len(paths))
	for i, p := range paths {
		out[i] = modTime(p)
	}
	return out
}

// Reload re-reads ConfigFile now.
//
// nats-server (2.15.2) creates no subscriptions for the service imports of
// an account that a reload introduces (configureAccounts adds them only
// when not reloading, and for accounts it already had), so a tenant added
// live could connect but reached no service of the fleet (its JetStream
// API: "no responders") until a restart. A second reload, which finds the
// account, creates them: Reload does one whenever the configuration
// names an account the server did not have.
func (s *Server) Reload() error {
	ns := s.current()
	if ns == nil {
		return fmt.Errorf("broker: not started")
	}
	opts, err := s.options()
	if err != nil {
		return err
	}
	added := false
	for _, a := range opts.Accounts {
		if _, err := ns.LookupAccount(a.Name); err != nil {
			added = true
		}
	}
	if err := ns.ReloadOptions(opts); err != nil {
		return err
	}
	if added {
		again, err := s.options()
		if err == nil {
			err = ns.ReloadOptions(again)
		}
		if err != nil {
			return fmt.Errorf("broker: reload for the accounts it added: %w", err)
		}
	}
	s.reloads.Add(1)
	return nil
}

// Reloads is how many times the configuration was reloaded (by the
// ConfigFile watch or Reload). A client that must connect with a
// configuration just written can wait for it to grow first: nats-server
// v2.15.2 reads a connecting client's options without its lock while it
// reloads the authorization (a data race the race detector reports), so
// connecting during a reload is best avoided.
func (s *Server) Reloads() int64 { return s.reloads.Load() }

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}
