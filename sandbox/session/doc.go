// Package session runs stateful sandboxes: one sandbox that lives across
// many commands, with its files and background processes, as agents and
// the sandbox services they use (Hugging Face sandboxes, E2B) expect.
//
//	s, err := session.Start(ctx, runner, session.Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Wall: time.Hour}}})
//	res, err := s.Exec(ctx, session.ExecRequest{Argv: []string{"sh", "-c", "echo hi > a.txt"}}, stdout, stderr)
//	bg, err := s.Exec(ctx, session.ExecRequest{Argv: []string{"python3", "-m", "http.server"}, Background: true}, nil, nil)
//	data, err := s.Read(ctx, "a.txt", 0, -1)  // through sandbox/files, while it runs
//	procs, err := s.Ps(ctx); err = s.Kill(ctx, bg.PID, syscall.SIGTERM)
//	err = s.Close(ctx)                         // ends everything; Done/Err if it ended on its own
//
// # Model
//
// A session is one long-lived sandbox.Runner.Run whose command is the
// agent, cmd/warren-sandbox-agent (package session/agent): a small static
// program bound read-only into the sandbox's view at its host path
// (Spec.AgentPath, by default next to the worker's executable), running as
// the sandbox's uid under every layer the run has (namespaces or Landlock,
// seccomp, cgroup, rlimits), like any task. The agent holds no privilege:
// it only forks what it is asked to, so every command of the session is as
// confined as a one-shot task, and the run's limits bound the whole
// session (Limits.Wall is its TTL).
//
// The worker speaks to the agent over the run's stdin and stdout, pipes
// handed to the sandbox as files: length-prefixed frames (a type byte and
// a request id, then a payload of varints and byte strings; package
// session/internal/wire, versioned, its decoder fuzzed). The agent's
// first frame is a hello with the protocol version; Start returns once it
// has come. Each Exec, Ps and Kill takes a fresh id, so any number run at
// once, multiplexed on the one stream: the agent forks each command in its
// own process group (argv looked up on the command's PATH, env over the
// session's, cwd relative to the home), streams its stdout and stderr as
// separate frames of up to 32 KiB (binary-safe), and reports its exit
// status, signal, timeout and wall time once it is reaped and its pipes
// have drained (at most 2 s after its exit: a background child of a
// foreground command may hold them). A command that cannot be started
// ends as a shell says: 127 (not found) or 126, the message on its
// stderr. The agent reaps every process (pid 1 of the pid namespace in
// namespace mode, a child subreaper in Landlock mode), lists the commands
// it started (Ps) and signals only its descendants: a command it started
// on its whole process group, any other descendant on its own; it makes
// itself non-dumpable, so the session's commands, which share its uid,
// cannot open its pipes through /proc or ptrace it.
//
// The end of a command is the agent's decision, as a run's is the
// runner's (package sandbox, "The end of a task"): each command is a
// child subreaper from before its exec, so every process it starts stays
// its descendant while it lives, setsid daemons and orphans included. Its
// timeout or a cancel stops its process group and its tree, kills them
// and the command last, and reports its exit without waiting for what
// may still hold its pipes; the result comes within 2 s and nothing the
// command started is left (a command that ends by itself leaves its
// children running, as a shell does). The agent waits for every child
// and tracee with __WALL, takes a traced command's stop for no end (its
// timeout still ends it), and kills the tracers of a command that exited
// while another of its processes traces one of its threads, which holds
// its end back. A command's RLIMIT_NPROC is the session's less 16 (a
// quarter at most): a fork storm leaves the agent the threads it needs.
//
// Background commands (ExecRequest.Background) return their pid at once
// and run until they end, are killed, or the session ends; their stdout
// and stderr are discarded (/dev/null): redirect inside the command to
// keep them (sh -c 'srv >log 2>&1'). Files and processes persist across
// execs because the sandbox lives on.
//
// The home is the run's scratch directory, the agent's $HOME (at its host
// path in namespace mode): by default the runner's own, which the
// runner's teardown removes; a session then takes a warm sandbox when the
// runner keeps them (Config.Prestart), and the runner copies the agent's
// stdin and stdout. On a warm slot the home a session's commands see is a
// fresh tmpfs of its own, mounted over the slot's directory in the
// sandbox's mount namespace: it dies with the session, so nothing of one
// session (uploaded, written by its commands, in its /tmp or /dev/shm)
// reaches the next on that slot.
// With Spec.Home the home is that host directory, given to the run as
// Spec.Scratch (the runner hands it to the sandbox's uid for the run and
// back to its owner after; such runs always start cold), and the agent's
// pipes are lent to it as files. The file methods (Read, Write, Stat,
// List, Mkdir, Delete, and Files for the rest) serve the home from the
// worker while the sandbox runs, through sandbox/files, on the home the
// runner hands over before the agent runs (sandbox.Spec.HomeReady, a
// HomeView: the host directory, or the descriptor held on a tmpfs the
// sandbox mounted), never at a path the agent reports; where that tmpfs
// belongs to the sandbox's user namespace they act with the sandbox's ids
// (files.AsOwner). So the file methods and the commands see one
// filesystem in every mode: symlinks at any
// component, FIFOs, sockets, devices and hard-linked files are refused,
// new files belong to the sandbox's uid (the home's owner once the agent
// runs); once the session has ended they refuse with its *GoneError.
//
// Write counts against the run's disk limit (Limits.Disk) as the
// commands' writes do, held as the HomeView's Quota says: on a home that
// is its own tmpfs (every bounded home the runner makes) the kernel holds
// both, and Write refuses ahead a write the free space cannot take; on a
// home no tmpfs bounds (Spec.Home with a limit, isolation none) Write
// counts the home's usage, the commands' files included, and refuses a
// write past the limit, while the commands themselves are not held. A
// refused write is a *files.QuotaError (errors.Is files.ErrDiskFull)
// naming the limit, and leaves nothing of itself.
//
// Running counts the foreground execs in flight, Background the
// background commands still running (until the agent reports their exit),
// and LastActivity is the last request's start or end or a background
// command's end: idle eviction (the worker's) must never end a session
// while either is above 0 (the TTL bounds a background server).
//
// # Failure handling
//
// Start fails with the runner's error when the sandbox cannot start (a
// *sandbox.SetupError, sandbox.ErrUnavailable; step "home ready" when the
// home it handed over could not be opened; a runner that hands none over
// is an error too), with ErrAgent when the
// agent is missing, not executable by the sandbox's uid, dies before its
// hello or speaks another protocol version, and with ctx.Err() when ctx
// ends first; it leaves nothing behind. Once started, the sandbox may end
// on its own: its TTL, its CPU limit, the OOM killer, the agent killed (a
// command of the session may kill it in Landlock mode). Then Done is
// closed and Err is a *GoneError (errors.Is ErrSessionGone) whose Reason
// says which (GoneTTL, GoneCPU, GoneOOM, GoneAgentExited, GoneProtocol,
// GoneRunner; GoneClosed after Close); every call in flight and every
// later call returns it. The agent's stream comes from inside the
// sandbox, so it is trusted for nothing but this session's own results:
// a frame that breaks the protocol ends the session (GoneProtocol), and
// no frame can make the worker allocate more than one frame (17 MiB).
// Exec errors are ErrInvalidRequest (the field named), a *GoneError, or
// ctx.Err() (a cancelled foreground exec has its tree killed);
// Kill returns ErrNoProcess for a pid that is not a live descendant of
// the agent. A command's failure is its ExecResult, never an error.
//
// Close cancels the run: the runner kills the whole tree (the pid
// namespace, or the uid sweep and orphan sweep in Landlock mode, setsid
// daemons included), tears the sandbox down and verifies it as for any
// task, the run's own home included; Close then waits for the session's
// goroutines. A caller's home (Spec.Home) stays, with its contents, handed
// back to its owner. Close is idempotent; always call it, also after Done
// (it releases the session's descriptors).
//
// # Limits
//
//   - ExecRequest.Stdin is sent whole, at most MaxStdin (16 MiB); stdin is
//     not streamed.
//   - Output writers are called from the session's one reader goroutine: a
//     slow writer delays the output of the session's other execs (the
//     agent then blocks on its pipe, and its commands on theirs), and a
//     writer that never returns holds Close (which waits for the reader).
//   - Ps lists the commands the session started, not their children
//     (Kill reaches those); finished commands are not kept.
//   - Limits other than Wall are the run's: Memory and Processes bound the
//     whole session where the runner has a cgroup; CPU, FileSize and
//     OpenFiles are rlimits of each process (every command gets the full
//     CPU time). Without a cgroup (an ordinary-user worker) Memory is
//     RLIMIT_AS of every process, the agent's included, and the Go agent
//     needs about 1.3 GiB of address space: below that it dies at start
//     and Start fails with ErrAgent.
//   - The session's env (Spec.Sandbox.Env) is in the agent's memory and
//     environment, visible to its commands; it is never written to disk.
//   - In Landlock mode a command can kill the agent (same uid, no pid
//     namespace), which ends its own session; in namespace mode the agent
//     is pid 1 and cannot be killed from inside.
//   - A timed-out or cancelled command's tree is its descendants: a
//     sibling it made with clone(CLONE_PARENT) (the agent's child) goes
//     with its process group only, and a process of it that joined the
//     group of another command or of the agent is killed by itself, never
//     that group. Close ends everything anyway.
package session
