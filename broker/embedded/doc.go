// Package embedded runs Warren's embedded nats-server with JetStream: the
// broker of `warren up` and `warren broker`, the in-process broker a client
// command falls back to when none runs, and the broker of every test
// (broker/brokertest). It is the only package that links
// github.com/nats-io/nats-server/v2/server; package broker (client side:
// Connect, Setup, auth config generation) does not, so the client binary
// (`go build -tags client ./cmd/warren`) links neither.
//
// # Model
//
// [New] checks a [Config] and starts nothing; [Server.Start] runs the
// server, JetStream stored under Config.DataDir/jetstream, and returns once
// it accepts connections; [Server.Stop] shuts it down and waits (idempotent,
// safe before Start). A server listens on Config.Host:Port (loopback:4222 by
// default), or on nothing with DontListen, reached then only by
// [Server.Connect]'s in-process connections. Config.Cluster joins it to a
// cluster of embedded servers: brokertest.StartCluster runs three on
// loopback. Config.ConfigFile (the server.conf of `warren auth init`, from
// package broker) brings accounts, users, permissions and TLS; Config's
// listen address, store and payload limit go over it. Config.TLS serves TLS
// with a certificate and key (over any TLS in ConfigFile).
//
// # Failure handling
//
// One running server at a time holds a DataDir: [Server.Start] takes an
// flock on DataDir/broker.lock (released at Stop, or when the process
// ends, however it ends) and fails with [ErrDataDirInUse], naming the
// holder's pid, when another server — in this process or another — holds
// it. Two nats-servers on one JetStream store rewrite each other's blocks.
//
// [Server.Start] fails at once with nats-server's own reason when its
// start stops (a port taken: "address already in use"; JetStream's store
// unusable), and otherwise if the server is not ready for connections
// within Config.ReadyTimeout (or ctx's deadline, if sooner), naming the
// port and the data dir; the JetStream file store in
// Config.DataDir survives restarts, so a broker stopped mid-batch resumes
// where it was. ConfigFile is re-read when its modification time changes
// (every Config.ReloadInterval): a revoked user is disconnected, a new
// tenant can connect; a file that fails to load is logged and the running
// configuration kept. [Server.Reload] re-reads it at once and returns the
// error.
//
// # Disk full
//
// A store guard (every Config.DiskCheckInterval, until Stop) reads the
// data dir's free space (statfs) and asks the server whether JetStream
// stores. Below Config.LowDiskFree (by default a tenth of the
// filesystem, at most 1 GiB) it warns, again every
// Config.LowDiskWarnEvery while it holds; [Server.Disk] reports what it
// saw, for metrics. When the disk fills, nats-server keeps a stream's
// first write error (no space left on device) and answers no write to
// that stream again, or disables JetStream altogether, until it
// restarts: freeing space alone does not bring it back. Writes meanwhile
// get no answer, which clients take as the broker being away (they retry;
// nothing unacknowledged was stored). So once the free space is above
// the warning level again, the guard restarts the server on the same
// port and store (the data dir stays locked): it recovers the store from
// disk, stores again, and connections reconnect, [Server.Connect]'s
// in-process ones included (they dial whichever server runs). The new
// server has a new ID (Config.AfterRestart hears of the restart).
//
// # Limits
//
// MaxPayload defaults to 8 MiB (a stock nats-server's is 1 MiB). The
// server's own signal handling and log output are off (NoSigs, NoLog): the
// process that embeds it owns signals, and nats-server's log lines go to
// Config.Logger beside the broker's lifecycle logs: its warnings and errors
// as such (a tenant's permission violation, a failed authentication), its
// notices at debug, its debug and trace lines nowhere. Client certificates
// are not asked for: clients authenticate with nkeys.
package embedded
