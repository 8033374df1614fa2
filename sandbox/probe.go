package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"github.com/warrenhq/warren/sandbox/internal/ident"
	"golang.org/x/sys/unix"
)

// Check is one line of a host capability report.
type Check struct {
	Name   string // what was checked, e.g. "namespace mode"
	OK     bool
	Detail string // what was found
	Fix    string // how to fix it, when not OK
}

// Report is what Probe found out about this host.
type Report struct {
	// Modes lists the isolation modes that actually ran a probe sandbox.
	Modes  []Isolation
	Checks []Check
}

// Usable reports whether at least one isolation mode works here.
func (r Report) Usable() bool { return len(r.Modes) > 0 }

// WriteTo prints the report as an aligned table, fixes indented below.
func (r Report) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range r.Checks {
		mark := "ok"
		if !c.OK {
			mark = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", mark, c.Name, c.Detail)
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	_ = tw.Flush()
	modes := "none: sandboxed tasks cannot run on this host"
	if r.Usable() {
		var s []string
		for _, m := range r.Modes {
			s = append(s, string(m))
		}
		modes = strings.Join(s, ", ")
	}
	fmt.Fprintf(&b, "usable isolation modes: %s\n", modes)
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// probeTimeout bounds the probe sandbox.
const probeTimeout = 20 * time.Second

// Probe reports what this host supports. It does not trust sysctls alone:
// namespace mode counts as working only if a probe sandbox really ran
// (user namespace created, view mounted, pivot_root done, command exec'd).
// cfg is the configuration the worker would use (scratch root, uid range).
func Probe(ctx context.Context, cfg Config) Report {
	var rep Report
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		rep.Checks = append(rep.Checks, Check{Name: "kernel", OK: true, Detail: unix.ByteSliceToString(uts.Release[:])})
	}
	if os.Geteuid() == 0 {
		rep.Checks = append(rep.Checks, Check{Name: "worker user", OK: true, Detail: "root (sandboxes get dedicated uids)"}, uidRangeCheck(cfg))
	} else {
		rep.Checks = append(rep.Checks, Check{Name: "worker user", OK: true, Detail: fmt.Sprintf("uid %d (sandboxes get a 1:1 mapping of this user)", os.Geteuid())})
	}
	rep.Checks = append(rep.Checks, hostChecks()...)

	ns := probeNamespace(ctx, cfg)
	rep.Checks = append(rep.Checks, ns)
	if ns.OK {
		rep.Modes = append(rep.Modes, IsolationNamespace)
	}
	cg := cgroup.Detect()
	cgc := Check{Name: "resource limits", OK: cg.Version != 0, Detail: cg.String()}
	if !cgc.OK {
		cgc.Fix = "run the worker as root, or delegate a cgroup v2 subtree with the memory and pids controllers to its user (systemd: Delegate=yes); until then memory and process limits are rlimits only (per process, not per sandbox)"
	}
	rep.Checks = append(rep.Checks, cgc)
	llChecks, llOK := probeLandlock(ctx, cfg, ns.OK)
	rep.Checks = append(rep.Checks, llChecks...)
	if llOK {
		rep.Modes = append(rep.Modes, IsolationLandlock)
	}
	return rep
}

func probeNamespace(ctx context.Context, cfg Config) Check {
	c := Check{Name: "namespace mode"}
	cfg.Isolation = IsolationNamespace
	cfg.Prestart = 0
	// The worker's own scratch root (the per-user default unless set):
	// the probe must fail where the worker would.
	// Started as the worker's (it sweeps what dead workers left).
	r, err := New(cfg)
	if err == nil {
		defer r.Close()
		err = r.Start(ctx)
	}
	if err != nil {
		c.Detail, c.Fix = err.Error(), setupFix(err)
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var out bytes.Buffer
	// Passes only inside the allow-list view: a fresh /proc where it is
	// pid 1, and no /root.
	res, err := r.Run(ctx, Spec{
		Argv:   []string{"/bin/sh", "-c", `test "$$" = 1 && test -d /proc/1 && test ! -e /root && echo probe-ok`},
		Stdout: &out, Stderr: &out,
		Limits: Limits{Wall: probeTimeout},
	})
	switch {
	case err != nil:
		c.Detail = err.Error()
		c.Fix = namespaceFix(err)
	case res.ExitCode != 0 || !strings.Contains(out.String(), "probe-ok"):
		c.Detail = fmt.Sprintf("the probe sandbox ran but its view is wrong (exit %d): %s", res.ExitCode, strings.TrimSpace(out.String()))
		c.Fix = "report this as a bug: the namespace setup did not take effect"
	default:
		c.OK = true
		c.Detail = fmt.Sprintf("probe sandbox ran (user, mount, pid, net, ipc, uts, cgroup namespaces; pivot_root) in %s", res.Wall.Round(100*time.Microsecond))
	}
	return c
}

// uidRangeCheck reports the sandbox uid range a root worker with cfg uses,
// and the id maps it comes from (Config.UIDBase).
func uidRangeCheck(cfg Config) Check {
	c := Check{Name: "sandbox uids"}
	cfg = cfg.withDefaults()
	if err := cfg.resolveUIDRange(); err != nil {
		c.Detail, c.Fix = err.Error(), uidRangeFix
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%d..%d", cfg.UIDBase, uint64(cfg.UIDBase)+uint64(cfg.UIDCount)-1)
	if m, err := ident.ReadMap(ident.UIDMapPath); err == nil {
		c.Detail += ", mapped in " + m.String()
	}
	return c
}

// namespaceFix names the most likely cause of a failed probe sandbox.
func namespaceFix(err error) string {
	if fix := setupFix(err); fix != "" {
		return fix
	}
	if v, _ := readSysctl("kernel/apparmor_restrict_unprivileged_userns"); v == "1" && os.Geteuid() != 0 {
		return "AppArmor restricts unprivileged user namespaces: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or install an AppArmor profile for the warren binary with `userns,`"
	}
	if v, _ := readSysctl("user/max_user_namespaces"); v == "0" {
		return "user namespaces are disabled: sysctl -w user.max_user_namespaces=15000"
	}
	if v, _ := readSysctl("kernel/unprivileged_userns_clone"); v == "0" && os.Geteuid() != 0 {
		return "unprivileged user namespaces are disabled: sysctl -w kernel.unprivileged_userns_clone=1"
	}
	if seccompMode() == "2" {
		return "the worker runs under a seccomp filter (a container?) that blocks namespace creation: run the container with seccomp=unconfined (and apparmor=unconfined), or use Landlock mode"
	}
	return "see the error above; namespace mode needs Linux >= 5.6 with user namespaces enabled"
}

// hostChecks reports the settings that commonly break namespace mode.
func hostChecks() []Check {
	var cs []Check
	if v, err := readSysctl("kernel/apparmor_restrict_unprivileged_userns"); err == nil {
		c := Check{Name: "AppArmor userns restriction", OK: v == "0" || os.Geteuid() == 0, Detail: "kernel.apparmor_restrict_unprivileged_userns=" + v}
		c.Fix = "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for warren allowing `userns,`"
		cs = append(cs, c)
	}
	if v, err := readSysctl("kernel/unprivileged_userns_clone"); err == nil {
		c := Check{Name: "unprivileged user namespaces", OK: v != "0" || os.Geteuid() == 0, Detail: "kernel.unprivileged_userns_clone=" + v}
		c.Fix = "sysctl -w kernel.unprivileged_userns_clone=1"
		cs = append(cs, c)
	}
	if v, err := readSysctl("user/max_user_namespaces"); err == nil {
		c := Check{Name: "user namespace limit", OK: v != "0", Detail: "user.max_user_namespaces=" + v}
		c.Fix = "sysctl -w user.max_user_namespaces=15000"
		cs = append(cs, c)
	}
	sc := seccompMode()
	c := Check{Name: "seccomp on the worker", OK: sc != "2", Detail: "Seccomp: " + sc}
	if !c.OK {
		c.Detail += " (a filter is applied; in a container it may block unshare/clone)"
		c.Fix = "run the container with --security-opt seccomp=unconfined, or a profile allowing clone/unshare with namespace flags"
	}
	cs = append(cs, c)
	return cs
}

func readSysctl(name string) (string, error) {
	b, err := os.ReadFile("/proc/sys/" + name)
	return strings.TrimSpace(string(b)), err
}

func seccompMode() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
