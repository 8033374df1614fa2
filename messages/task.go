package messages

// Version is the protocol version this package reads and writes.
const Version = 1

// Kind says what a task does.
type Kind string

// Task kinds.
const (
	KindExec   Kind = "exec"   // run a command, report its exit
	KindVerify Kind = "verify" // check a proof with a profile's trusted checker, report a verdict
)

// Isolation names a sandbox mode a task asks for, or a worker offers.
type Isolation string

// Isolation modes. Auto picks the strongest mode the host supports and
// refuses to run when none is available; None is only honoured by a worker
// started with its explicitly insecure flag.
const (
	IsolationAuto      Isolation = "auto"
	IsolationNamespace Isolation = "namespace"
	IsolationLandlock  Isolation = "landlock"
	IsolationNone      Isolation = "none"
)

// Network is a task's network policy.
type Network string

// Network policies. None (the default) gives the task no network at all;
// Loopback gives it a private loopback interface and nothing else.
const (
	NetworkNone     Network = "none"
	NetworkLoopback Network = "loopback"
)

// Task is one unit of work. Zero values mean "the worker's default" except
// where a field says otherwise.
type Task struct {
	V     int    `json:"v"`
	ID    string `json:"id"`    // unique within the batch; a subject token
	Batch string `json:"batch"` // groups tasks for results, cancel and replay; a subject token
	// Attempt is 1 for the first publication and grows with every replay; a
	// result is kept per (batch, id, attempt). Set by the scheduler; zero is
	// read as 1.
	Attempt int  `json:"attempt,omitempty"`
	Kind    Kind `json:"kind"`
	// Exactly one of Argv and Shell is set for exec tasks. Shell runs under
	// /bin/sh -c.
	Argv  []string `json:"argv,omitempty"`
	Shell string   `json:"shell,omitempty"`
	// Stdin is the command's whole standard input: any bytes (see Bytes
	// for the wire form).
	Stdin Bytes `json:"stdin,omitempty"`
	// StdinObject, instead of Stdin, is a stdin too large for the task
	// message, in the batch's inputs object store (BucketInputs). Exec
	// tasks only.
	StdinObject *InputObject `json:"stdin_object,omitempty"`
	// Env is added to the sandbox's minimal environment (PATH, HOME, TMPDIR,
	// LANG). Keys the sandbox owns (HOME, TMPDIR) cannot be overridden.
	Env map[string]string `json:"env,omitempty"`
	// Secrets are environment variables whose values must never be stored:
	// name -> value, in the submitter's hands only. The scheduler seals them
	// into SealedSecrets before publishing; a task on the wire carrying
	// them in cleartext is refused (CodeCleartextSecrets). Their names may
	// not repeat an Env name. Exec tasks only.
	Secrets map[string]string `json:"secrets,omitempty"`
	// SealedSecrets are Secrets sealed to the pool's public key, opened
	// only by a worker holding the pool's seal key. See SealSecrets.
	SealedSecrets *SealedSecrets `json:"sealed_secrets,omitempty"`
	// Files are written into the task's scratch directory before it starts:
	// relative path -> content, any bytes (text as a JSON string, binary as
	// {"base64": "..."}; see Bytes).
	Files map[string]Bytes `json:"files,omitempty"`
	// FilesObjects are files like Files whose content is too large for
	// the task message, in the batch's inputs object store
	// (BucketInputs): relative path -> object. A path is in Files or
	// FilesObjects, not both; MaxFiles bounds the two together. Exec
	// tasks only.
	FilesObjects map[string]InputObject `json:"files_objects,omitempty"`
	// Cwd is relative to the scratch directory. Defaults to the scratch dir.
	Cwd string `json:"cwd,omitempty"`
	// Outputs name the files to keep after the run: paths or globs
	// (path.Match syntax, per path component) relative to the home. The
	// worker stores each matching regular file in bucket BucketOutputs and
	// lists it in Result.Files; symlinks, FIFOs, devices and files past
	// the limits are refused and listed in Result.FilesRefused. At most
	// MaxOutputPatterns; exec tasks only.
	Outputs   []string  `json:"outputs,omitempty"`
	Limits    Limits    `json:"limits,omitzero"`
	Network   Network   `json:"network,omitempty"`   // defaults to none
	Isolation Isolation `json:"isolation,omitempty"` // defaults to auto
	// Pool names the worker pool; defaults to "default".
	Pool string `json:"pool,omitempty"`
	// Profile names the toolchain the task needs; only workers that have it
	// receive the task. Defaults to "default" for exec; required for verify.
	Profile string `json:"profile,omitempty"`
	// Reply is the subject live events go to. Defaults to EventSubject(batch, id).
	Reply  string      `json:"reply,omitempty"`
	Verify *VerifySpec `json:"verify,omitempty"` // required for kind verify, forbidden otherwise
}

// Limits bound a task's resources. Zero means the worker's default; negative
// values are refused.
type Limits struct {
	WallTimeoutMS int64 `json:"wall_timeout_ms,omitempty"` // whole task, wall clock
	CPUTimeMS     int64 `json:"cpu_time_ms,omitempty"`     // RLIMIT_CPU, rounded up to seconds
	MemoryBytes   int64 `json:"memory_bytes,omitempty"`    // address space / cgroup memory
	Processes     int64 `json:"processes,omitempty"`       // processes and threads
	FileSizeBytes int64 `json:"file_size_bytes,omitempty"` // largest file the task may write
	OutputBytes   int64 `json:"output_bytes,omitempty"`    // stdout and stderr captured each
	OpenFiles     int64 `json:"open_files,omitempty"`      // RLIMIT_NOFILE
	// DiskBytes bounds what the task may write into its home (TMPDIR
	// included): a size-capped tmpfs, so writes past it fail with ENOSPC
	// and the result says disk_full. Defaults to the worker's --disk (1
	// GiB); a worker refuses more than its own limit.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
}

// VerifySpec is the proof-checking part of a verify task.
type VerifySpec struct {
	Theorem   string `json:"theorem"`          // name of the constant that must be proven
	Statement string `json:"statement"`        // the expected type, elaborated in a clean context
	Proof     string `json:"proof"`            // the proof source, untrusted
	Header    string `json:"header,omitempty"` // imports / preamble shared by a batch
	// NoCache makes the worker check the proof even when the verdict cache
	// holds a verdict for it (the fresh verdict is stored as usual).
	NoCache bool `json:"no_cache,omitempty"`
}

// EffectiveAttempt returns Attempt, reading zero as 1.
func (t *Task) EffectiveAttempt() int {
	if t.Attempt <= 0 {
		return 1
	}
	return t.Attempt
}

// EffectivePool returns Pool or DefaultPool.
func (t *Task) EffectivePool() string {
	if t.Pool == "" {
		return DefaultPool
	}
	return t.Pool
}

// EffectiveProfile returns Profile or DefaultProfile.
func (t *Task) EffectiveProfile() string {
	if t.Profile == "" {
		return DefaultProfile
	}
	return t.Profile
}

// EffectiveReply returns Reply or the default event subject.
func (t *Task) EffectiveReply() string {
	if t.Reply == "" {
		return EventSubject(t.Batch, t.ID)
	}
	return t.Reply
}

// Command returns the argv to execute: Argv, or /bin/sh -c Shell.
func (t *Task) Command() []string {
	if t.Shell != "" {
		return []string{"/bin/sh", "-c", t.Shell}
	}
	return t.Argv
}
