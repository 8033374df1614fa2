package messages

import (
	"fmt"
	"strings"
	"time"
)

// Sandbox sessions: a long-lived sandbox on one host, addressed by id and
// reached with request/reply on that host's subjects (docs/sandboxes.md):
//
//	warren.sbx.<pool>.<host>.<tenant>.<op>
//
// <host> is the host's registry token (HostToken), <tenant> the caller's
// tenant on an authenticated broker or NoTenant ("_") without one: it is a
// fixed token so the broker can confine a tenant to its own sessions
// (account_token_position 5). <op> is a SandboxOp.
const (
	SubjectSandboxPrefix = "warren.sbx"
	// NoTenant is the tenant token of sessions on a broker without auth;
	// tenant names start with a letter or digit, so it is never one.
	NoTenant = "_"
	// SandboxLocalBytes is the length of the local part of a sandbox id.
	SandboxLocalBytes = 16
)

// SandboxOp is an operation on a sandbox session, the last subject token.
type SandboxOp string

// Session operations.
const (
	SbxCreate   SandboxOp = "create"   // claim a slot and start a session
	SbxExec     SandboxOp = "exec"     // run a command; output as SandboxEvents
	SbxPs       SandboxOp = "ps"       // list the session's running commands
	SbxKill     SandboxOp = "kill"     // signal one of them
	SbxRead     SandboxOp = "read"     // read a file range
	SbxWrite    SandboxOp = "write"    // write a file range
	SbxList     SandboxOp = "list"     // list a directory, paginated
	SbxStat     SandboxOp = "stat"     // lstat a path
	SbxMkdir    SandboxOp = "mkdir"    // create a directory and its parents
	SbxRemove   SandboxOp = "remove"   // delete a file or directory
	SbxStatus   SandboxOp = "status"   // the session's state
	SbxDelete   SandboxOp = "delete"   // end the session
	SbxSessions SandboxOp = "sessions" // the caller's sessions on this host (no token)
)

var sandboxOps = map[SandboxOp]bool{
	SbxCreate: true, SbxExec: true, SbxPs: true, SbxKill: true, SbxRead: true, SbxWrite: true,
	SbxList: true, SbxStat: true, SbxMkdir: true, SbxRemove: true, SbxStatus: true, SbxDelete: true,
	SbxSessions: true,
}

// Valid reports whether op is a known operation.
func (op SandboxOp) Valid() bool { return sandboxOps[op] }

// needsSandbox reports whether op acts on one session (id and token).
func (op SandboxOp) needsSandbox() bool { return op != SbxCreate && op != SbxSessions }

// SandboxSubject is the subject of op on host's sessions of tenant.
func SandboxSubject(pool, host, tenant string, op SandboxOp) string {
	return fmt.Sprintf("%s.%s.%s.%s.%s", SubjectSandboxPrefix, pool, HostToken(host), tenantToken(tenant), op)
}

// SandboxHostFilter is what a host subscribes to: every op of every tenant.
func SandboxHostFilter(pool, host string) string {
	return fmt.Sprintf("%s.%s.%s.*.*", SubjectSandboxPrefix, pool, HostToken(host))
}

// ParseSandboxSubject splits a session subject; ok is false for anything
// else. tenant is "" for NoTenant.
func ParseSandboxSubject(s string) (pool, host, tenant string, op SandboxOp, ok bool) {
	rest, found := strings.CutPrefix(s, SubjectSandboxPrefix+".")
	parts := strings.Split(rest, ".")
	if !found || len(parts) != 4 {
		return "", "", "", "", false
	}
	tenant = parts[2]
	if tenant == NoTenant {
		tenant = ""
	}
	return parts[0], parts[1], tenant, SandboxOp(parts[3]), SandboxOp(parts[3]).Valid()
}

func tenantToken(tenant string) string {
	if tenant == "" {
		return NoTenant
	}
	return tenant
}

// HostToken is a host id made a valid subject token and registry key part:
// characters other than A-Z a-z 0-9 _ - become _.
func HostToken(id string) string {
	b := []byte(id)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// SandboxID is "<host token>.<local>": the host it lives on, then 16
// lowercase hex characters of its own.
func SandboxID(host, local string) string { return HostToken(host) + "." + local }

// ParseSandboxID splits a sandbox id into its host token and local part.
func ParseSandboxID(id string) (host, local string, err error) {
	host, local, ok := strings.Cut(id, ".")
	if !ok || !ValidID(host) || len(local) != SandboxLocalBytes || strings.Trim(local, "0123456789abcdef") != "" {
		return "", "", fieldErr(CodeInvalidField, "id", "%q is not a sandbox id (<host>.<16 hex characters>, as warren sandbox create prints)", id)
	}
	return host, local, nil
}

// SandboxRequest is the body of every session request. ID and Token name
// the session (all ops but create and sessions); the section of the op
// carries its arguments.
type SandboxRequest struct {
	V      int            `json:"v"`
	ID     string         `json:"id,omitempty"`
	Token  string         `json:"token,omitempty"`
	Create *SandboxCreate `json:"create,omitempty"`
	Exec   *SandboxExec   `json:"exec,omitempty"`
	Kill   *SandboxKill   `json:"kill,omitempty"`
	File   *SandboxFile   `json:"file,omitempty"`
}

// SandboxCreate asks for a new session.
type SandboxCreate struct {
	// Profile is the exec profile whose sandbox settings apply. Defaults
	// to "default".
	Profile string `json:"profile,omitempty"`
	// IdleMS ends the session after this long with no command running and
	// no request. 0 = the host's default (10 min).
	IdleMS int64 `json:"idle_ms,omitempty"`
	// TTLMS ends the session this long after create, whatever it does. 0 =
	// the host's default (1 h), capped by the tenant's session_ttl quota;
	// above the host's MaxTTL or the tenant's cap it is refused.
	TTLMS       int64   `json:"ttl_ms,omitempty"`
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	DiskBytes   int64   `json:"disk_bytes,omitempty"`
	Network     Network `json:"network,omitempty"`
	// Env is given to every command of the session; the host keeps it in
	// memory only.
	Env map[string]string `json:"env,omitempty"`
}

// SandboxExec runs a command in the session.
type SandboxExec struct {
	Argv  []string          `json:"argv"`
	Env   map[string]string `json:"env,omitempty"`
	Cwd   string            `json:"cwd,omitempty"`
	Stdin []byte            `json:"stdin,omitempty"` // base64 in JSON
	// Background returns once the command started; its output is
	// discarded and Ps lists it until it exits.
	Background bool  `json:"background,omitempty"`
	TimeoutMS  int64 `json:"timeout_ms,omitempty"`
	// Reply is where the output events go (a foreground exec): an inbox
	// subject of the caller, as for tasks (CheckSandboxReply).
	Reply string `json:"reply,omitempty"`
}

// SandboxKill signals a command of the session.
type SandboxKill struct {
	PID    int    `json:"pid"`
	Signal string `json:"signal,omitempty"` // SIGTERM (default), SIGKILL, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
}

// Signals a kill may send.
var SandboxSignals = []string{"SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"}

// SandboxFile is the argument of the file ops. Path is relative to the
// session's home (a leading "/" is dropped; ".." never leaves it).
type SandboxFile struct {
	Path string `json:"path"`
	// read: Offset and Length (0 = to MaxSandboxChunk). write: Offset,
	// Data, Ranged (keep the other bytes), Mode (new files, default 0600),
	// Parents.
	Offset  int64  `json:"offset,omitempty"`
	Length  int64  `json:"length,omitempty"`
	Data    []byte `json:"data,omitempty"` // base64 in JSON
	Ranged  bool   `json:"ranged,omitempty"`
	Mode    uint32 `json:"mode,omitempty"`
	Parents bool   `json:"parents,omitempty"`
	// list: entries after the name After, at most Limit (0 = 1000).
	After string `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty"`
	// remove: a directory with its contents.
	Recursive bool `json:"recursive,omitempty"`
}

// Limits of the session protocol.
const (
	// MaxSandboxChunk bounds one read or write: larger files move in
	// ranged chunks (the client does it).
	MaxSandboxChunk = 1 << 20
	// MaxSandboxRequestBytes bounds a request body: a chunk in base64 and
	// the rest.
	MaxSandboxRequestBytes = MaxSandboxChunk*4/3 + 64<<10
	MaxSandboxListLimit    = 10000
	DefaultSandboxList     = 1000
	MaxSandboxTokenBytes   = 256
)

// SandboxState is where a session is in its life.
type SandboxState string

// Session states.
const (
	SandboxRunning SandboxState = "running" // usable
	SandboxClosing SandboxState = "closing" // ending: refuses new work
)

// SandboxEnd is why a session ended (in its gone error and the host log).
type SandboxEnd string

// Reasons a session ends.
const (
	EndDeleted SandboxEnd = "deleted" // a delete request
	EndIdle    SandboxEnd = "idle"    // nothing ran for its idle timeout
	EndTTL     SandboxEnd = "ttl"     // its TTL passed
	EndDrain   SandboxEnd = "drain"   // its host's drain deadline
	EndFailed  SandboxEnd = "failed"  // the sandbox died
)

// SandboxInfo describes a session (create, status, sessions).
type SandboxInfo struct {
	ID           string       `json:"id"`
	Host         string       `json:"host"`
	Pool         string       `json:"pool"`
	Profile      string       `json:"profile"`
	State        SandboxState `json:"state"`
	Created      time.Time    `json:"created"`
	Expires      time.Time    `json:"expires"`
	LastActivity time.Time    `json:"last_activity"`
	IdleMS       int64        `json:"idle_ms"`
	Running      int          `json:"running"`
}

// SandboxProcess is a command running in a session.
type SandboxProcess struct {
	PID        int       `json:"pid"`
	Argv       []string  `json:"argv"`
	Started    time.Time `json:"started"`
	Background bool      `json:"background,omitempty"`
	// Ended is set once a background command ended (ps keeps the last 32):
	// ExitCode is its exit status, or -1 with Signal (e.g. "SIGKILL") the
	// signal that killed it.
	Ended    time.Time `json:"ended,omitzero"`
	ExitCode int       `json:"exit_code,omitempty"`
	Signal   string    `json:"signal,omitempty"`
}

// SandboxExit is how an exec ended (or, background, that it started).
type SandboxExit struct {
	PID      int    `json:"pid"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	WallMS   int64  `json:"wall_ms"`
	// Events is how many output events were published to the reply: the
	// client waits for seq 1..Events and reports a gap as lost output.
	Events uint64 `json:"events"`
}

// FileEntry is one file of a session's home (lstat: a symlink is reported,
// never followed).
type FileEntry struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Type  string    `json:"type"` // file, dir, symlink, other
	Size  int64     `json:"size"`
	Mode  uint32    `json:"mode"`
	MTime time.Time `json:"mtime"`
}

// SandboxReply is the answer to every session request: Error, or the
// fields of the op.
type SandboxReply struct {
	V     int    `json:"v"`
	Error *Error `json:"error,omitempty"`
	// create, status: the session; create also the token.
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
	Token   string       `json:"token,omitempty"`
	// exec.
	Exit *SandboxExit `json:"exit,omitempty"`
	// ps.
	Processes []SandboxProcess `json:"processes,omitempty"`
	// read: Data from Offset; Size is the file's size, EOF whether Data
	// reaches it. write: Size is the new size.
	Data []byte `json:"data,omitempty"`
	Size int64  `json:"size,omitempty"`
	EOF  bool   `json:"eof,omitempty"`
	// list: Entries sorted by name; Next, when set, is the After of the
	// next page. stat: Entries[0].
	Entries []FileEntry `json:"entries,omitempty"`
	Next    string      `json:"next,omitempty"`
	// sessions.
	Sandboxes []SandboxInfo `json:"sandboxes,omitempty"`
}

// SandboxEventType says what a SandboxEvent carries.
type SandboxEventType string

// Output event types of an exec.
const (
	SbxEventStdout SandboxEventType = "stdout"
	SbxEventStderr SandboxEventType = "stderr"
)

// SandboxEvent is one chunk of an exec's output on its reply subject. Seq
// starts at 1 for each exec and grows by one per event (as task events
// do): a gap means lost output. The exec's reply (SandboxExit.Events)
// says how many were sent.
type SandboxEvent struct {
	V       int              `json:"v"`
	Sandbox string           `json:"sandbox"`
	Seq     uint64           `json:"seq"`
	Type    SandboxEventType `json:"type"`
	Data    []byte           `json:"data"` // base64 in JSON: output is bytes
	Time    time.Time        `json:"time"`
}

// Session error codes (in SandboxReply.Error).
const (
	CodeNoCapacity   Code = "no_capacity"   // the host has no free slot (try another; --wait)
	CodeSandboxGone  Code = "sandbox_gone"  // the session ended or its host is gone
	CodeTokenInvalid Code = "token_invalid" // the token is not this session's
	CodeTokenExpired Code = "token_expired" // the token's expiry passed
	CodeDraining     Code = "draining"      // the host is shutting down: no new sessions
	CodeNotFound     Code = "not_found"     // no such file, process or directory
	CodeFileRefused  Code = "file_refused"  // a symlink, FIFO, device, hard link or wrong type
	// CodeQuotaExceeded: the tenant's quota refuses the request (its open
	// sessions on the host, its session TTL cap); the message names the
	// limit and what to do.
	CodeQuotaExceeded Code = "quota_exceeded"
	// CodeDiskFull: a write would take the session's home past its disk
	// limit (create's disk_bytes, else the host's --disk); nothing of it
	// was written. The message names the limit and the home's usage.
	CodeDiskFull Code = "disk_full"
)

// Sentinels of the session codes, for errors.Is.
var (
	ErrNoCapacity   = &Error{Code: CodeNoCapacity, Msg: "no free sandbox slot"}
	ErrSandboxGone  = &Error{Code: CodeSandboxGone, Msg: "sandbox gone"}
	ErrTokenInvalid = &Error{Code: CodeTokenInvalid, Msg: "token not valid for this sandbox"}
	ErrTokenExpired = &Error{Code: CodeTokenExpired, Msg: "token expired"}
	ErrDraining     = &Error{Code: CodeDraining, Msg: "host draining"}
	ErrNotFound     = &Error{Code: CodeNotFound, Msg: "not found"}
	ErrFileRefused  = &Error{Code: CodeFileRefused, Msg: "file refused"}
	// ErrQuotaExceeded matches a refusal by the tenant's quota.
	ErrQuotaExceeded = &Error{Code: CodeQuotaExceeded, Msg: "tenant quota exceeded"}
	// ErrDiskFull matches a write refused by the session's disk limit.
	ErrDiskFull = &Error{Code: CodeDiskFull, Msg: "sandbox disk limit reached"}
)

// CheckSandboxReply applies the reply rule to an exec's output subject: it
// must be under one of inboxPrefixes or, for a tenant, under its
// TenantInbox; never a reserved or events subject.
func CheckSandboxReply(reply, tenant string, inboxPrefixes []string) error {
	const field = "exec.reply"
	if tenant != "" {
		inboxPrefixes = append([]string{TenantInbox(tenant) + "."}, inboxPrefixes...)
	}
	if !ReservedSubject(reply) && !strings.HasPrefix(reply, SubjectEventsPrefix+".") &&
		!strings.HasPrefix(reply, SubjectSandboxPrefix+".") && len(reply) <= 256 && replyPattern.MatchString(reply) {
		for _, p := range inboxPrefixes {
			if strings.HasPrefix(reply, p) && len(reply) > len(p) {
				return nil
			}
		}
	}
	return fieldErr(CodeReplyForbidden, field, "%q is not under an inbox prefix (%s): exec output goes to the caller's inbox", reply, strings.Join(inboxPrefixes, ", "))
}
