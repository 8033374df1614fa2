package main

import (
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// sandboxHostFlags are the host side of the sandbox configuration, shared
// by `worker`, `up`, `doctor` and `sandbox run`: doctor probes with what
// the worker would use.
type sandboxHostFlags struct {
	ScratchRoot string `name:"scratch-root" help:"Directory for per-task scratch dirs (default: $TMPDIR/warren-sandboxes-<uid>, private to this user)." placeholder:"DIR"`
	UIDBase     uint32 `name:"uid-base" help:"Root only: first uid (= gid) of the sandboxes' dedicated range; it must be mapped in /proc/self/uid_map and gid_map. Default: 1900000000 where mapped, else (a container mapping 0..65535) the top of the mapped ids (see warren doctor)." placeholder:"UID"`
	UIDCount    uint32 `name:"uid-count" help:"Root only: size of that range, the most sandboxes at once (default 1024)." placeholder:"N"`
}

// apply sets the flags' fields of cfg.
func (f sandboxHostFlags) apply(cfg sandbox.Config) sandbox.Config {
	cfg.ScratchRoot = f.ScratchRoot
	cfg.UIDBase = f.UIDBase
	cfg.UIDCount = f.UIDCount
	return cfg
}

// parseSize reads a byte size (messages.ParseSize).
func parseSize(s string) (int64, error) { return messages.ParseSize(s) }

// parseDisk reads a --disk value: a size, "unbounded" (-1: no quota), or
// empty for sandbox.DefaultDisk (an in-process worker's flags).
func parseDisk(s string) (int64, error) {
	switch s {
	case "unbounded":
		return -1, nil
	case "":
		return sandbox.DefaultDisk, nil
	}
	return parseSize(s)
}
