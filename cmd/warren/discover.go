package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

// brokerRecordFile is where `warren up` and `warren broker` record, in
// their data dir, the address they listen on, so that clients given the
// same data dir (and no --nats) connect to that broker and to no other.
const brokerRecordFile = "broker.json"

// brokerRecord identifies a running `warren up` / `warren broker`. The
// server id is the nats-server's own (new at every start): a client
// checks that the server answering at URL is that one, so a broker that
// died and a stranger now listening on its port are not confused.
type brokerRecord struct {
	URL       string    `json:"url"`
	ServerID  string    `json:"server_id"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
}

func recordPath(dataDir string) string { return filepath.Join(dataDir, brokerRecordFile) }

// recordedServer is what a broker record names: a running server
// (*embedded.Server).
type recordedServer interface {
	ClientURL() string
	ID() string
}

// writeBrokerRecord records srv in dataDir (atomically) and returns a func
// that removes the record again if it is still srv's (by its ID then: a
// broker that restarted itself records its new ID again).
func writeBrokerRecord(dataDir string, srv recordedServer) (func(), error) {
	rec := brokerRecord{URL: dialable(srv.ClientURL()), ServerID: srv.ID(), PID: os.Getpid(), StartedAt: time.Now().UTC()}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	tmp := recordPath(dataDir) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("record the broker's address: %w", err)
	}
	if err := os.Rename(tmp, recordPath(dataDir)); err != nil {
		return nil, fmt.Errorf("record the broker's address: %w", err)
	}
	return func() {
		if cur, err := readBrokerRecord(dataDir); err == nil && cur != nil && cur.ServerID == srv.ID() {
			_ = os.Remove(recordPath(dataDir))
		}
	}, nil
}

// dialable turns a listen URL on every interface (0.0.0.0, ::) into one on
// the loopback address, which a local client can dial.
func dialable(listen string) string {
	u, err := url.Parse(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		u.Host = net.JoinHostPort("127.0.0.1", u.Port())
	}
	return u.String()
}

// readBrokerRecord returns the record in dataDir, nil when there is none.
func readBrokerRecord(dataDir string) (*brokerRecord, error) {
	data, err := os.ReadFile(recordPath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec brokerRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.URL == "" {
		return nil, fmt.Errorf("%s is not a broker record (%v); remove it", recordPath(dataDir), err)
	}
	return &rec, nil
}

// alive reports whether the process that wrote the record still runs.
func (r *brokerRecord) alive() bool {
	if r.PID <= 0 {
		return false
	}
	err := syscall.Kill(r.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// target is the broker a command connects to: the one the user named
// (--nats or WARREN_NATS_URL), else the one recorded in the data dir by a
// running `warren up` / `warren broker`; "" means none, so a client
// command starts an embedded broker on the data dir. Nothing else is
// tried: a broker that merely listens on a local port may be someone
// else's.
func (g *globals) target() (string, *brokerRecord, error) {
	if g.NATS != "" {
		return g.NATS, nil, nil
	}
	rec, err := readBrokerRecord(g.DataDir)
	if err != nil || rec == nil {
		return "", nil, err
	}
	if !rec.alive() {
		g.Log.Debug().Str("record", recordPath(g.DataDir)).Int("pid", rec.PID).Msg("ignoring the record of a broker that no longer runs")
		return "", nil, nil
	}
	return rec.URL, rec, nil
}

// checkRecorded refuses a connection to a server other than the recorded one.
func checkRecorded(nc *nats.Conn, rec *brokerRecord, dataDir string) error {
	if rec == nil || nc.ConnectedServerId() == rec.ServerID {
		return nil
	}
	return fmt.Errorf("the broker recorded in %s (pid %d) is not the server answering at %s; pass --nats to choose a broker explicitly",
		recordPath(dataDir), rec.PID, rec.URL)
}
