package agent

import (
	"time"

	"github.com/warrenhq/warren/sandbox/internal/reap"
	"golang.org/x/sys/unix"
)

// treeKillTime bounds each of killTree's walks over a command's tree.
const treeKillTime = time.Second

// killTree SIGKILLs p's whole tree. p is a child subreaper (spawn), so
// while it lives every process it started is its descendant, setsid
// daemons and orphans included: p and its group are stopped, its tree is
// stopped and killed (reap.Tree) while p still holds it, and p goes last.
// The agent's own group and another command's are never signalled as a
// whole (a process may join any group of the agent's session). a.mu must
// be held and p not reaped.
func (a *agent) killTree(p *proc) {
	_ = unix.Kill(-p.pid, unix.SIGSTOP)
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGSTOP, nil, 0)
	}
	own := unix.Getpgrp()
	t := reap.NewTree(p.pid, func(pgid int) bool {
		_, command := a.procs[pgid]
		return pgid == own || command
	})
	t.Stop(treeKillTime)
	t.Kill(treeKillTime)
	a.end(p)
}
