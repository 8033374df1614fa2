package worker

import (
	"bytes"
	"io"
	"slices"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// specFor turns an exec task into a sandbox spec. Zero limits stay zero:
// the sandbox runner fills its own defaults.
func specFor(t *messages.Task, stdout, stderr io.Writer, disk int64, out *outputCollector) sandbox.Spec {
	files := make(map[string][]byte, len(t.Files))
	for p, c := range t.Files {
		files[p] = c
	}
	iso := sandbox.Isolation(t.Isolation)
	if iso == sandbox.IsolationAuto {
		iso = "" // the runner's configured mode, which may be stricter
	}
	var finished func(string)
	if out != nil {
		finished = out.collect
	}
	return sandbox.Spec{
		Finished:  finished,
		Argv:      t.Command(),
		Env:       t.Env,
		Stdin:     bytes.NewReader(t.Stdin),
		Stdout:    stdout,
		Stderr:    stderr,
		Files:     files,
		Cwd:       t.Cwd,
		Isolation: iso,
		Network:   sandbox.Network(t.Network),
		Limits: sandbox.Limits{
			Wall:      time.Duration(t.Limits.WallTimeoutMS) * time.Millisecond,
			CPU:       time.Duration(t.Limits.CPUTimeMS) * time.Millisecond,
			Memory:    t.Limits.MemoryBytes,
			Processes: t.Limits.Processes,
			FileSize:  t.Limits.FileSizeBytes,
			OpenFiles: t.Limits.OpenFiles,
			Disk:      disk,
		},
	}
}

// unixSockets says whether a run of exec profile p in isolation iso may
// create AF_UNIX sockets (Config.UnixSocketProfiles): never in Landlock-only
// isolation asked for by the task, where the host's pathname sockets would
// be reachable (the composition root refuses the option when the runner's
// own mode has no mount namespace).
func (w *Worker) unixSockets(p string, iso sandbox.Isolation) bool {
	return iso != sandbox.IsolationLandlock && slices.Contains(w.cfg.UnixSocketProfiles, p)
}
