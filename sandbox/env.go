package sandbox

import (
	"sort"
	"strings"
)

// The environment every sandbox gets: rebuilt, never the worker's.

// minimalPath is the PATH every sandbox gets (pruned to what exists by the
// isolated modes).
const minimalPath = "/usr/local/bin:/usr/bin:/bin"

// sandboxUser is the name USER and LOGNAME give a sandbox's uid, which
// has no passwd entry: programs that ask who runs them (getpass.getuser,
// git's committer, ssh) read these first.
const sandboxUser = "sandbox"

func buildEnv(extra map[string]string, home, tmp string) []string {
	env := []string{"PATH=" + minimalPath, "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "USER=" + sandboxUser, "LOGNAME=" + sandboxUser}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "HOME", "TMPDIR", "PWD":
			continue
		case "PATH", "LANG", "USER", "LOGNAME":
			// Replace the default.
			for i, e := range env {
				if len(e) > len(k) && e[:len(k)+1] == k+"=" {
					env[i] = k + "=" + extra[k]
				}
			}
			continue
		}
		env = append(env, k+"="+extra[k])
	}
	return env
}

// splitPath removes PATH from env and returns it separately (the init
// prunes it to existing directories).
func splitPath(env []string) ([]string, string) {
	path := minimalPath
	out := env[:0:0]
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			path = p
			continue
		}
		out = append(out, e)
	}
	return out, path
}
