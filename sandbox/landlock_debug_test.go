package sandbox

import (
	"fmt"
	"os/exec"
	"testing"
)

func TestLLDebug(t *testing.T) {
	sb := llNewSandbox(t, llTestBinary(t), -1)
	s := exec.Command("sleep", "100")
	s.Start()
	defer s.Process.Kill()
	code, out := sb.run(t, sb.policy(t, NetworkNone), "/bin/sh", "-c", fmt.Sprintf("cat /proc/self/status | grep -i -E 'nonew|seccomp'; wc -c /proc/%d/environ; head -c 10 /proc/%d/mem; cat /proc/%d/maps | head -2; echo; cat /proc/$$/environ | wc -c", s.Process.Pid, s.Process.Pid, s.Process.Pid))
	t.Log(code, out)
}
