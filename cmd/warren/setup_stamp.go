package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/warrenhq/warren/broker"
)

// The setup stamp: every client command sets the broker up before its
// work (session.init: a JetStream check and a lookup of each of Warren's
// streams and buckets: round trips to the broker). Against the broker recorded in
// --data-dir (the `warren up` or `warren broker` that runs there) a
// command that did so records it: the server's id, which is new at each
// start of the server, and broker.SetupDigest, which changes with any
// resource this build wants. A later command that finds both equal skips
// the setup. Only the recorded broker: one named with --nats is checked by
// every command, since its operator may change it at any time. A stream
// deleted by hand while the broker runs is then not re-created by client
// commands (they fail, naming the stream); restarting the broker, or any
// command with --nats, sets it up again.

const setupStampFile = "setup-stamp.json"

type setupStamp struct {
	ServerID string `json:"server_id"`
	Digest   string `json:"digest"`
}

// stampedSetup reports whether dataDir records that the server serverID
// was set up with this build's resources.
func stampedSetup(dataDir, serverID string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, setupStampFile))
	if err != nil {
		return false
	}
	var st setupStamp
	return json.Unmarshal(b, &st) == nil && st.ServerID != "" && st.ServerID == serverID && st.Digest == broker.SetupDigest()
}

// stampSetup records in dataDir that serverID was set up (atomically; a
// failure only costs the next command the setup).
func stampSetup(dataDir, serverID string) error {
	b, err := json.Marshal(setupStamp{ServerID: serverID, Digest: broker.SetupDigest()})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dataDir, setupStampFile+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dataDir, setupStampFile))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
