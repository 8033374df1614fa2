package messages

import "time"

// Status is a task's terminal state.
type Status string

// Statuses. Only OK means the command exited 0 (or, for verify tasks, that
// the checker ran to a verdict; see Verdict for whether the proof was accepted).
const (
	StatusOK         Status = "ok"          // exit 0 / verdict reached
	StatusFailed     Status = "failed"      // non-zero exit
	StatusTimedOut   Status = "timed_out"   // wall or CPU limit hit; the whole tree was killed
	StatusKilled     Status = "killed"      // ended by a signal (memory limit, process limit, ...)
	StatusInvalid    Status = "invalid"     // the task was refused; see Error; never retried
	StatusInfraError Status = "infra_error" // the host could not run it (sandbox setup, retries exhausted)
	StatusCancelled  Status = "cancelled"   // cancelled before or while running
)

// TimeoutKind names the limit that ended a timed_out task.
type TimeoutKind string

// Timeout kinds.
const (
	TimeoutWall TimeoutKind = "wall" // limits.wall_timeout_ms: the whole tree was killed
	TimeoutCPU  TimeoutKind = "cpu"  // limits.cpu_time_ms: the command used its CPU time
)

// Result is the single terminal record of a task attempt, stored in RESULTS.
type Result struct {
	V        int    `json:"v"`
	TaskID   string `json:"id"`
	Batch    string `json:"batch"`
	Attempt  int    `json:"attempt"`
	Delivery int    `json:"delivery"` // which delivery of the attempt produced it
	Kind     Kind   `json:"kind,omitempty"`
	Status   Status `json:"status"`
	ExitCode int    `json:"exit_code"`        // -1 when the process did not exit normally
	Signal   string `json:"signal,omitempty"` // e.g. "SIGKILL"
	// Timeout names the limit that ended a timed_out task.
	Timeout TimeoutKind `json:"timeout,omitempty"`
	// OOMKills counts the task's processes (the command or its children)
	// that the OOM killer killed for the task's memory limit; counted where
	// the sandbox has a cgroup, absent (0) otherwise. A task can end ok
	// with oom_kills > 0 (a child was killed, the command went on).
	OOMKills int `json:"oom_kills,omitempty"`

	WallMS          int64 `json:"wall_ms"`
	CPUMS           int64 `json:"cpu_ms"`
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`

	// Stdout and Stderr are the captured bytes, any bytes (see Bytes for
	// the wire form: a string for UTF-8 text).
	Stdout          Bytes `json:"stdout"`
	Stderr          Bytes `json:"stderr"`
	StdoutTruncated bool  `json:"stdout_truncated,omitempty"`
	StderrTruncated bool  `json:"stderr_truncated,omitempty"`
	// StdoutObject / StderrObject name an object in bucket BucketOutputs
	// holding the whole captured stream when it did not fit in the result
	// message; Stdout / Stderr are then empty. The truncation flags still
	// say whether output_bytes cut the stream.
	StdoutObject string `json:"stdout_object,omitempty"`
	StderrObject string `json:"stderr_object,omitempty"`

	// DiskFull: the task's writes reached limits.disk_bytes and failed
	// with ENOSPC (the status is what the command made of that, usually
	// failed). Reported where the worker can read the home's tmpfs (a
	// root worker); false otherwise.
	DiskFull bool `json:"disk_full,omitempty"`
	// Files are the task's output files (Task.Outputs), each stored in
	// bucket BucketOutputs; FilesRefused the matches that were not.
	Files        []OutputFile  `json:"files,omitempty"`
	FilesRefused []RefusedFile `json:"files_refused,omitempty"`

	// Events is the seq of the last live event the delivery sent before
	// its result was stored (its output's end; 0 from a worker that does
	// not say): a client that has seen this delivery's events up to it has
	// all of its live output and need not wait for the final exit event.
	Events uint64 `json:"events,omitempty"`

	Host string `json:"host,omitempty"`
	// Sandbox is the isolation actually in force, e.g. "namespace+landlock",
	// "landlock", "none (insecure)".
	Sandbox string `json:"sandbox,omitempty"`

	Error   *Error   `json:"error,omitempty"`   // why a task was invalid or could not run
	Verdict *Verdict `json:"verdict,omitempty"` // verify tasks only

	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Verdict is the outcome of checking a proof.
type Verdict struct {
	Accepted bool   `json:"accepted"`
	Reason   Reason `json:"reason,omitempty"` // empty when accepted
	// Axioms the accepted or rejected constant depends on, as the trusted
	// audit reported them.
	Axioms   []string `json:"axioms,omitempty"`
	Messages string   `json:"messages,omitempty"` // the checker's own output, for humans
	// Toolchain fingerprints the checker that decided: profile kind, the
	// checker binaries' contents and the settings that change a verdict,
	// e.g. "coq:3f2a…". Verdicts with different toolchains are not
	// comparable.
	Toolchain string `json:"toolchain,omitempty"`
	// Cached: the verdict was not decided by this check but read from the
	// verdict cache (an identical proof, statement, header, theorem,
	// toolchain, checker version and policy was decided before).
	Cached bool `json:"cached,omitempty"`
	// FirstDecidedAt is when a cached verdict was decided; zero when not
	// cached.
	FirstDecidedAt time.Time `json:"first_decided_at,omitzero"`
}

// Reason is why a proof was rejected: a fixed set.
type Reason string

// Rejection reasons.
const (
	ReasonCompileError      Reason = "compile_error"
	ReasonIncomplete        Reason = "incomplete"         // sorry, admit, Admitted
	ReasonDisallowedAxiom   Reason = "disallowed_axiom"   // depends on an axiom outside the profile's allow-list
	ReasonUnsafeFlag        Reason = "unsafe_flag"        // guard, positivity or universe checking off or bypassed
	ReasonStatementMismatch Reason = "statement_mismatch" // the constant does not have the expected type
	ReasonTimeout           Reason = "timeout"
	ReasonOutOfMemory       Reason = "out_of_memory"
	ReasonCrash             Reason = "crash"
	ReasonSandboxError      Reason = "sandbox_error"
	// ReasonDisallowedCommand: the proof uses a command the profile's
	// host_io policy forbids (host file I/O, load path or plugin changes,
	// code run at elaboration in Lean), or its compile wrote files beyond
	// its own outputs. The messages name each command and its line.
	ReasonDisallowedCommand Reason = "disallowed_command"
)
