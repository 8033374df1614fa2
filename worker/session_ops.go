package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
)

// sessionSpec is the sandbox settings a create asks for. The sandbox's
// wall limit is the TTL plus a grace: the reaper ends the session at its
// TTL; the limit is the backstop should the worker not.
func sessionSpec(c *messages.SandboxCreate, home string, ttl time.Duration) SessionSpec {
	return SessionSpec{Home: home, Sandbox: sandbox.Spec{
		Env:     c.Env,
		Network: sandbox.Network(c.Network),
		// --disk bounds the home (a size-capped tmpfs holding its /tmp and
		// /dev/shm too, as a task's) and each file in it.
		Limits: sandbox.Limits{Wall: ttl + time.Minute, Memory: c.MemoryBytes, Disk: c.DiskBytes, FileSize: c.DiskBytes, TmpSize: c.DiskBytes},
	}}
}

// op runs one request on an open session.
func (s *Sessions) op(ls *liveSession, op messages.SandboxOp, tenant string, req *messages.SandboxRequest) (*messages.SandboxReply, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	// A session that ends (delete, TTL, drain) cancels its requests.
	go func() {
		select {
		case <-ls.sb.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	switch op {
	case messages.SbxExec:
		return s.exec(ctx, ls, tenant, req.Exec)
	case messages.SbxPs:
		ps, err := ls.sb.Ps(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]messages.SandboxProcess, 0, len(ps))
		for _, p := range ps {
			sp := messages.SandboxProcess{PID: p.PID, Argv: p.Argv, Started: p.Started.UTC(), Background: p.Background}
			if !p.Ended.IsZero() {
				sp.Ended, sp.ExitCode = p.Ended.UTC(), p.ExitCode
				if p.Signal != 0 {
					sp.Signal = unix.SignalName(p.Signal)
				}
			}
			out = append(out, sp)
		}
		return &messages.SandboxReply{Processes: out}, nil
	case messages.SbxKill:
		sig := signalNamed(req.Kill.Signal)
		if err := ls.sb.Kill(ctx, req.Kill.PID, sig); err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				return nil, &messages.Error{Code: messages.CodeNotFound, Field: "kill.pid", Msg: fmt.Sprintf("no process %d in this sandbox (see ps)", req.Kill.PID)}
			}
			return nil, err
		}
		return &messages.SandboxReply{}, nil
	case messages.SbxStatus:
		info := ls.status()
		return &messages.SandboxReply{Sandbox: &info}, nil
	case messages.SbxDelete:
		s.end(ls.info.ID, messages.EndDeleted)
		return &messages.SandboxReply{}, nil
	}
	return s.fileOp(ctx, ls.sb.Files(), op, req.File)
}

func signalNamed(name string) syscall.Signal {
	switch name {
	case "SIGKILL":
		return syscall.SIGKILL
	case "SIGINT":
		return syscall.SIGINT
	case "SIGHUP":
		return syscall.SIGHUP
	case "SIGQUIT":
		return syscall.SIGQUIT
	case "SIGUSR1":
		return syscall.SIGUSR1
	case "SIGUSR2":
		return syscall.SIGUSR2
	}
	return syscall.SIGTERM
}

func (s *Sessions) exec(ctx context.Context, ls *liveSession, tenant string, e *messages.SandboxExec) (*messages.SandboxReply, error) {
	var out *eventSink
	if !e.Background {
		if err := messages.CheckSandboxReply(e.Reply, tenant, s.cfg.InboxPrefixes); err != nil {
			return nil, err
		}
		out = &eventSink{nc: s.w.nc, subject: e.Reply, sandbox: ls.info.ID}
	}
	req := SessionExec{Argv: e.Argv, Env: e.Env, Cwd: e.Cwd, Stdin: e.Stdin, Background: e.Background,
		Timeout: time.Duration(e.TimeoutMS) * time.Millisecond}
	var res SessionExit
	var err error
	if out != nil {
		res, err = ls.sb.Exec(ctx, req, out.writer(messages.SbxEventStdout), out.writer(messages.SbxEventStderr))
	} else {
		res, err = ls.sb.Exec(ctx, req, nil, nil)
	}
	if err != nil {
		var me *messages.Error
		if errors.As(err, &me) {
			return nil, err
		}
		select {
		case <-ls.sb.Done():
			return nil, &messages.Error{Code: messages.CodeSandboxGone, Msg: fmt.Sprintf("sandbox %s ended while the command ran", ls.info.ID)}
		default:
		}
		return nil, &messages.Error{Code: messages.CodeExecFailed, Field: "exec.argv", Msg: err.Error()}
	}
	exit := &messages.SandboxExit{PID: res.PID, ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, WallMS: res.Wall.Milliseconds()}
	if out != nil {
		exit.Events = out.sent()
	}
	return &messages.SandboxReply{Exit: exit}, nil
}

// eventSink publishes an exec's output as SandboxEvents numbered without
// gaps across stdout and stderr, in the order they were written.
type eventSink struct {
	mu      sync.Mutex
	nc      *nats.Conn
	subject string
	sandbox string
	seq     uint64
}

// maxEventData bounds one event's bytes (base64 grows it by a third).
const maxEventData = 32 << 10

func (e *eventSink) writer(typ messages.SandboxEventType) *eventWriter {
	return &eventWriter{sink: e, typ: typ}
}

func (e *eventSink) sent() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq
}

type eventWriter struct {
	sink *eventSink
	typ  messages.SandboxEventType
}

func (w *eventWriter) Write(p []byte) (int, error) {
	e := w.sink
	e.mu.Lock()
	defer e.mu.Unlock()
	for rest := p; len(rest) > 0; {
		n := min(len(rest), maxEventData)
		e.seq++
		b, err := json.Marshal(messages.SandboxEvent{V: messages.Version, Sandbox: e.sandbox, Seq: e.seq, Type: w.typ,
			Data: rest[:n], Time: time.Now().UTC()})
		if err != nil {
			return 0, err
		}
		// Best effort, as task events: a lost event shows as a gap.
		_ = e.nc.Publish(e.subject, b)
		rest = rest[n:]
	}
	return len(p), nil
}

func (s *Sessions) fileOp(ctx context.Context, h SessionFiles, op messages.SandboxOp, f *messages.SandboxFile) (*messages.SandboxReply, error) {
	if f == nil {
		f = &messages.SandboxFile{}
	}
	switch op {
	case messages.SbxRead:
		st, err := h.Stat(ctx, f.Path)
		if err != nil {
			return nil, fileErr(err)
		}
		if st.Type != files.TypeFile {
			return nil, &messages.Error{Code: messages.CodeFileRefused, Field: "file.path", Msg: fmt.Sprintf("%s is a %s, not a regular file", st.Path, st.Type)}
		}
		n := f.Length
		if n == 0 {
			n = messages.MaxSandboxChunk
		}
		data, err := h.Read(ctx, f.Path, f.Offset, n)
		if err != nil {
			return nil, fileErr(err)
		}
		return &messages.SandboxReply{Data: data, Size: st.Size, EOF: f.Offset+int64(len(data)) >= st.Size}, nil
	case messages.SbxWrite:
		size, err := h.Write(ctx, f.Path, f.Data, files.WriteOptions{Offset: f.Offset, Ranged: f.Ranged, Mode: fs.FileMode(f.Mode), Parents: f.Parents})
		if err != nil {
			return nil, fileErr(err)
		}
		return &messages.SandboxReply{Size: size}, nil
	case messages.SbxStat:
		st, err := h.Stat(ctx, f.Path)
		if err != nil {
			return nil, fileErr(err)
		}
		return &messages.SandboxReply{Entries: []messages.FileEntry{fileEntry(st)}}, nil
	case messages.SbxList:
		es, err := h.List(ctx, f.Path)
		if err != nil {
			return nil, fileErr(err)
		}
		limit := f.Limit
		if limit == 0 {
			limit = messages.DefaultSandboxList
		}
		r := &messages.SandboxReply{Entries: []messages.FileEntry{}}
		for _, e := range es {
			if f.After != "" && e.Name <= f.After {
				continue
			}
			if len(r.Entries) == limit {
				r.Next = r.Entries[len(r.Entries)-1].Name
				break
			}
			r.Entries = append(r.Entries, fileEntry(e))
		}
		return r, nil
	case messages.SbxMkdir:
		return &messages.SandboxReply{}, fileErr(h.Mkdir(ctx, f.Path))
	case messages.SbxRemove:
		return &messages.SandboxReply{}, fileErr(h.Delete(ctx, f.Path, f.Recursive))
	}
	return nil, &messages.Error{Code: messages.CodeInvalidField, Field: "op", Msg: fmt.Sprintf("%q is not a file operation", op)}
}

func fileEntry(e files.Entry) messages.FileEntry {
	return messages.FileEntry{Name: e.Name, Path: e.Path, Type: string(e.Type), Size: e.Size, Mode: uint32(e.Mode), MTime: e.MTime.UTC()}
}

// fileErr maps a files API error to a stable code; the refusals (symlink,
// FIFO, device, hard link) keep their reason in the message, a write past
// the disk limit names the limit and the fix.
func fileErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, files.ErrDiskFull) {
		return &messages.Error{Code: messages.CodeDiskFull, Field: "file.data",
			Msg: err.Error() + ": remove files from the sandbox, or create it with a larger --disk"}
	}
	code := messages.CodeInternal
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = messages.CodeNotFound
	case errors.Is(err, files.ErrSymlink), errors.Is(err, files.ErrNotRegular), errors.Is(err, files.ErrHardLink),
		errors.Is(err, files.ErrIsDir), errors.Is(err, files.ErrNotDir), errors.Is(err, files.ErrIsHome),
		errors.Is(err, files.ErrEscape), errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY):
		code = messages.CodeFileRefused
	case errors.Is(err, files.ErrInvalidPath):
		code = messages.CodeInvalidField
	}
	return &messages.Error{Code: code, Field: "file.path", Msg: err.Error()}
}
