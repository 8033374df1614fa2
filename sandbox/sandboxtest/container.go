package sandboxtest

import (
	"fmt"
	"os"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// ContainerEnv makes a test binary confine itself, before anything else
// runs, the way a container under Docker's default seccomp profile is
// confined (EnterContainer, called from an init function). Its values are
// the Container* constants. Tests set it on a child they re-exec, so the
// fallback paths run against the kernel's real refusals without changing
// anything for the rest of the host.
const ContainerEnv = "WARREN_TEST_CONTAINER"

const (
	// ContainerNoNamespaces refuses namespace creation as Docker's default
	// profile does: unshare and setns, and clone with any CLONE_NEW* flag,
	// fail with EPERM; clone3 fails with ENOSYS (its flags are in memory,
	// out of seccomp's reach) so callers fall back to clone.
	ContainerNoNamespaces = "no-namespaces"
	// ContainerNoNamespacesNoLandlock also makes the Landlock syscalls fail
	// with ENOSYS, as on a kernel built without Landlock.
	ContainerNoNamespacesNoLandlock = "no-namespaces-no-landlock"
	// ContainerUsernsWithoutMounts lets namespaces be created but refuses
	// every mount operation with EPERM, the way Ubuntu's AppArmor
	// restriction of unprivileged user namespaces leaves a new user
	// namespace without the capabilities to build a view.
	ContainerUsernsWithoutMounts = "userns-without-mounts"
)

// cloneNamespaceFlags are the flags Docker's profile refuses clone for
// (its mask 0x7E020000).
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// EnterContainer loads the filter ContainerEnv names, if it is set, on
// every thread of the process; the filter is inherited by everything the
// process starts. It exits the process (status 125) when the filter cannot
// be loaded: a child that silently kept its namespaces would prove nothing.
func EnterContainer() {
	mode, ok := os.LookupEnv(ContainerEnv)
	if !ok {
		return
	}
	_ = os.Unsetenv(ContainerEnv)
	var err error
	switch mode {
	case ContainerNoNamespaces, ContainerNoNamespacesNoLandlock:
		err = LoadContainerFilter(mode == ContainerNoNamespacesNoLandlock)
	case ContainerUsernsWithoutMounts:
		err = loadFilter([]seccomp.SyscallGroup{{
			Names:  []string{"mount", "umount2", "pivot_root", "mount_setattr", "open_tree", "move_mount", "fsopen", "fsmount"},
			Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
		}})
	default:
		fmt.Fprintf(os.Stderr, "sandboxtest: %s=%q is not %q, %q or %q\n", ContainerEnv, mode,
			ContainerNoNamespaces, ContainerNoNamespacesNoLandlock, ContainerUsernsWithoutMounts)
		os.Exit(125)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest: entering the container filter:", err)
		os.Exit(125)
	}
}

// LoadContainerFilter confines the calling process as ContainerNoNamespaces
// (noLandlock: ContainerNoNamespacesNoLandlock) describes. It is for
// re-exec'd test children: it cannot be undone.
func LoadContainerFilter(noLandlock bool) error {
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	enosys := seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)
	groups := []seccomp.SyscallGroup{
		{Names: []string{"unshare", "setns"}, Action: eperm},
		{
			NamesWithCondtions: []seccomp.NameWithConditions{{Name: "clone", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags},
			}}},
			Action: eperm,
		},
		{Names: []string{"clone3"}, Action: enosys},
	}
	if noLandlock {
		groups = append(groups, seccomp.SyscallGroup{
			Names:  []string{"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"},
			Action: enosys,
		})
	}
	return loadFilter(groups)
}

// loadFilter loads groups on every thread; everything else is allowed.
func loadFilter(groups []seccomp.SyscallGroup) error {
	return seccomp.LoadFilter(seccomp.Filter{
		// An unprivileged process needs no_new_privs to load a filter;
		// root (as a container runtime does) does not set it.
		NoNewPrivs: os.Geteuid() != 0,
		Flag:       seccomp.FilterFlagTSync,
		Policy:     seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups},
	})
}
