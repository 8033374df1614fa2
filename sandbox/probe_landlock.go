package sandbox

import (
	"context"
	"fmt"
	"strings"
)

// landlockStatus is the Landlock part of the host probe (`warren doctor`).
type landlockStatus struct {
	KernelABI int      `json:"kernel_abi"`
	ABI       int      `json:"abi"` // effective (after errata)
	Errata    int      `json:"errata"`
	MinABI    int      `json:"min_abi"`
	Features  []string `json:"features"`
	Error     string   `json:"error,omitempty"` // why the mode is refused
	// Modes says what each isolation value gives on this host.
	Modes map[Isolation]string `json:"modes"`
}

// landlockReport probes Landlock and says what each mode gives here, given
// the configured floor and whether the namespace mode and the Landlock
// mode work (the caller's own probe sandboxes): a mode whose probe failed
// is refused, whatever the ABI allows.
func landlockReport(minABI int, namespaces, landlockRan bool) landlockStatus {
	if minABI == 0 {
		minABI = landlockMinABIDefault
	}
	abi := landlockABI()
	st := landlockStatus{KernelABI: abi.Kernel, ABI: abi.Effective, Errata: abi.Errata, MinABI: minABI, Modes: map[Isolation]string{}}
	for v := 1; v <= abi.Effective && v < len(landlockABIFeatures); v++ {
		st.Features = append(st.Features, landlockABIFeatures[v])
	}
	llErr := abi.require(minABI)
	if llErr != nil {
		st.Error = llErr.Error()
	}
	if llErr == nil && !landlockRan {
		st.Modes[IsolationLandlock] = "refused: its probe sandbox failed (see landlock mode)"
		st.Modes[IsolationNamespace] = nsRefused
		st.Modes[IsolationAuto] = "refused (no isolation available)"
		if namespaces {
			st.Modes[IsolationNamespace] = layersLayered.String()
			st.Modes[IsolationAuto] = layersLayered.String()
		}
		return st
	}
	switch {
	case namespaces && llErr == nil:
		st.Modes[IsolationNamespace] = layersLayered.String()
		st.Modes[IsolationLandlock] = layersLandlockOnly.String()
		st.Modes[IsolationAuto] = layersLayered.String()
	case namespaces:
		st.Modes[IsolationNamespace] = "namespace (no Landlock layer: " + shortReason(llErr) + ")"
		st.Modes[IsolationLandlock] = "refused: " + shortReason(llErr)
		st.Modes[IsolationAuto] = "namespace"
	case llErr == nil:
		st.Modes[IsolationNamespace] = nsRefused
		st.Modes[IsolationLandlock] = layersLandlockOnly.String()
		st.Modes[IsolationAuto] = layersLandlockOnly.String()
	default:
		st.Modes[IsolationNamespace] = nsRefused
		st.Modes[IsolationLandlock] = "refused: " + shortReason(llErr)
		st.Modes[IsolationAuto] = "refused (no isolation available)"
	}
	return st
}

// nsRefused is what isolation namespace gives when the namespace mode's
// probe sandbox did not run, whatever the cause.
const nsRefused = "refused (its probe sandbox failed: see namespace mode)"

func shortReason(err error) string {
	s := err.Error()
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i]
	}
	return strings.TrimPrefix(s, ErrUnavailable.Error()+": ")
}

// Lines renders the status for `warren doctor`.
func (s landlockStatus) Lines() []string {
	out := []string{fmt.Sprintf("landlock: kernel ABI %d, effective %d, errata %#x, floor %d; features: %s",
		s.KernelABI, s.ABI, s.Errata, s.MinABI, strings.Join(s.Features, ","))}
	if s.Error != "" {
		out = append(out, "landlock: "+s.Error)
	}
	for _, m := range []Isolation{IsolationAuto, IsolationNamespace, IsolationLandlock} {
		out = append(out, fmt.Sprintf("isolation %s: %s", m, s.Modes[m]))
	}
	return out
}

// probeLandlock is the Landlock part of Probe (`warren doctor`): the ABI,
// errata and features against the floor, a real probe sandbox in the
// Landlock mode (it counts as working only if /bin/true ran under it), and
// what each isolation value gives on this host. namespaces is the outcome
// of the namespace probe.
func probeLandlock(ctx context.Context, cfg Config, namespaces bool) (checks []Check, works bool) {
	c := cfg.withDefaults()
	st := landlockReport(c.LandlockMinABI, namespaces, true)
	lines := st.Lines()
	abi := Check{Name: "landlock layer", OK: st.Error == "", Detail: strings.TrimPrefix(lines[0], "landlock: ")}
	if !abi.OK {
		abi.Fix = st.Error
	}
	checks = append(checks, abi)
	mode := Check{Name: "landlock mode"}
	var r *Runner
	if abi.OK {
		c.Isolation = IsolationLandlock
		c.Prestart = 0
		// As the namespace probe: the worker's own scratch root.
		c.ScratchRoot = cfg.ScratchRoot
		var err error
		r, err = New(c)
		if err == nil {
			defer r.Close()
			err = r.Start(ctx)
		}
		if err == nil {
			var res *Result
			res, err = r.Run(ctx, Spec{Argv: []string{"/bin/true"}, Isolation: IsolationLandlock, Limits: Limits{Wall: probeTimeout}})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("probe exited %d", res.ExitCode)
			}
			if err == nil {
				mode.OK, mode.Detail = true, "probe sandbox ran: "+res.InForce
			}
		}
		if err != nil {
			mode.Detail, mode.Fix = err.Error(), setupFix(err)
		}
	} else {
		mode.Detail = "refused below the ABI floor"
		mode.Fix = abi.Fix
	}
	checks = append(checks, mode)
	if mode.OK {
		checks = append(checks, landlockIPCCheck(r))
	}
	// What each isolation value gives, from the probes that ran.
	st = landlockReport(c.LandlockMinABI, namespaces, mode.OK)
	for _, m := range []Isolation{IsolationAuto, IsolationNamespace, IsolationLandlock} {
		checks = append(checks, Check{Name: "isolation " + string(m), OK: !strings.HasPrefix(st.Modes[m], "refused"), Detail: st.Modes[m]})
	}
	return checks, mode.OK
}

// landlockIPCCheck says how r's Landlock-mode runs keep SysV IPC and
// POSIX message queues private: both ways are safe, so it is always ok.
func landlockIPCCheck(r *Runner) Check {
	c := Check{Name: "landlock-mode IPC", OK: true, Detail: "private: an IPC namespace per run"}
	if !r.landlockOwnIPC() {
		c.Detail = "refused by seccomp (this worker cannot make an IPC namespace)"
	}
	return c
}
