package session

import (
	"fmt"
	"os"
	"path/filepath"
)

// AgentBinaryName is the agent's file name, installed next to the worker's
// binary (`make build`).
const AgentBinaryName = "warren-sandbox-agent"

// testAgentPath, when set (by the package's tests), is the default agent.
var testAgentPath string

// defaultAgentPath is warren-sandbox-agent next to the running executable.
func defaultAgentPath() string {
	if testAgentPath != "" {
		return testAgentPath
	}
	exe, err := os.Executable()
	if err != nil {
		return AgentBinaryName
	}
	return filepath.Join(filepath.Dir(exe), AgentBinaryName)
}

// CheckAgent is what Start checks of the agent at p ("" = the default,
// next to the running executable) before it starts a sandbox: a worker
// calls it at its start to say at once that it cannot serve sessions.
// Its error (ErrAgent) names the file.
func CheckAgent(p string) error {
	if p == "" {
		p = defaultAgentPath()
	}
	return checkAgent(p)
}

// checkAgent refuses an agent path that cannot work: it must be absolute
// (it is bound read-only into the view at the same path) and an
// executable regular file.
func checkAgent(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%w: agent path %q must be absolute", ErrAgent, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAgent, err)
	}
	need := os.FileMode(0o100)
	if os.Geteuid() == 0 {
		need = 0o001 // a root worker's sandboxes run as other uids
	}
	if !fi.Mode().IsRegular() || fi.Mode()&need == 0 {
		return fmt.Errorf("%w: %s must be a regular file executable by the sandbox's uid (mode %v)", ErrAgent, p, fi.Mode())
	}
	if os.Geteuid() == 0 {
		// The Landlock mode runs it from the host's tree, as another uid.
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			di, err := os.Stat(dir)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrAgent, err)
			}
			if di.Mode()&0o001 == 0 {
				return fmt.Errorf("%w: %s is under %s (mode %v), which sandbox uids cannot pass: install the agent under a directory others may search (e.g. /usr/local/lib/warren) and set AgentPath", ErrAgent, p, dir, di.Mode().Perm())
			}
			if dir == "/" {
				return nil
			}
		}
	}
	return nil
}
