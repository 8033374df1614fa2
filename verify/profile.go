package verify

import (
	"cmp"
	"fmt"
	"github.com/warrenhq/warren/messages"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/warrenhq/warren/sandbox"
)

// Kind names the checker a profile uses.
type Kind string

// Checker kinds.
const (
	KindCoq      Kind = "coq"       // coqc + trusted statement check + coqchk audit
	KindLeanFile Kind = "lean-file" // lake env lean + trusted kernel audit in a separate process
	KindLeanREPL Kind = "lean-repl" // warm pool of Lean REPL processes
)

// DefaultLeanAxioms are the axioms a Lean profile allows when it lists none.
var DefaultLeanAxioms = []string{"propext", "Classical.choice", "Quot.sound"}

// Profiles is a worker's profile file: the checkers it offers.
type Profiles struct {
	Profiles []Profile `json:"profiles"`
}

// Profile is one checker configuration. Every untrusted step runs in a
// sandbox that sees Toolchain read-only.
type Profile struct {
	// Name is what tasks ask for (Task.Profile). Required; [a-z0-9-].
	Name string `json:"name"`
	// Kind selects the checker. Required.
	Kind Kind `json:"kind"`
	// Toolchain lists host paths mounted read-only in every sandbox of this
	// profile. Defaults to the kind's usual install paths (Coq:
	// /usr/lib/ocaml and /etc/ocamlfind.conf, as Debian installs them).
	Toolchain []string `json:"toolchain,omitempty"`
	// Env is added to every step's environment (e.g. LEAN_PATH). Defaults
	// to none.
	Env map[string]string `json:"env,omitempty"`
	// Limits bound each step. Defaults to DefaultStepLimits.
	Limits StepLimits `json:"limits,omitzero"`
	// AllowedAxioms are the fully qualified axioms a proof may depend on.
	// Defaults to none for Coq and to DefaultLeanAxioms for Lean. Use
	// ["none"] to allow none for Lean explicitly.
	AllowedAxioms []string `json:"allowed_axioms,omitempty"`
	// DeclaredAxioms is the policy for axioms the proof declares but the
	// theorem does not use: reject (any Axiom, Parameter, Conjecture,
	// Declare Module, or assumption anywhere in the proof's modules) or
	// used_only (only the theorem's own dependencies are audited).
	// Defaults to reject.
	DeclaredAxioms AxiomPolicy `json:"declared_axioms,omitempty"`
	// HostIO is the policy for commands that read or write host files,
	// change the load path, load native plugins or change directory (Coq),
	// or run code at elaboration (Lean: #eval, run_cmd, initialize):
	// reject (disallowed_command) or allow. Defaults to reject.
	HostIO HostIOPolicy `json:"host_io,omitempty"`
	// Coq configures kind coq.
	Coq *CoqConfig `json:"coq,omitempty"`
	// Lean configures kinds lean-file and lean-repl.
	Lean *LeanConfig `json:"lean,omitempty"`
	// Pool configures kind lean-repl.
	Pool *PoolConfig `json:"pool,omitempty"`
}

// StepLimits bound one sandboxed step.
type StepLimits struct {
	// Wall is the wall-clock limit of one step. Defaults to 60s.
	Wall Duration `json:"wall,omitzero"`
	// CPU is RLIMIT_CPU of one step. Defaults to Wall.
	CPU Duration `json:"cpu,omitzero"`
	// MemoryBytes is the address-space / cgroup memory limit. Defaults to 2 GiB.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Processes bounds processes and threads. Defaults to 64.
	Processes int64 `json:"processes,omitempty"`
	// FileSizeBytes bounds any file a step writes. Defaults to 64 MiB.
	FileSizeBytes int64 `json:"file_size_bytes,omitempty"`
	// OutputBytes is how much stdout/stderr is kept per step. Defaults to 64 KiB.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// DiskBytes bounds what a step writes into its home (a size-capped
	// tmpfs, counted against MemoryBytes too). Defaults to the runner's
	// (the worker's --disk, 1 GiB).
	DiskBytes int64 `json:"disk_bytes,omitempty"`
}

// DefaultStepLimits apply to zero fields of Profile.Limits.
var DefaultStepLimits = StepLimits{
	Wall:          Duration(60e9),
	MemoryBytes:   2 << 30,
	Processes:     64,
	FileSizeBytes: 64 << 20,
	OutputBytes:   64 << 10,
}

// CoqConfig configures the Coq checker.
type CoqConfig struct {
	// Coqc is the compiler. Defaults to /usr/bin/coqc.
	Coqc string `json:"coqc,omitempty"`
	// Coqchk is the independent kernel checker. Defaults to /usr/bin/coqchk.
	Coqchk string `json:"coqchk,omitempty"`
	// Prlimit, when set, wraps every step in `prlimit --as --cpu --fsize` as
	// a second line of defence beside the sandbox's own limits. Defaults to
	// /usr/bin/prlimit when it exists; "none" disables it.
	Prlimit string `json:"prlimit,omitempty"`
	// Flags are added to every coqc and coqchk call, e.g. -Q for trusted
	// libraries. Defaults to none.
	Flags []string `json:"flags,omitempty"`
	// Library is the logical root the proof is compiled under (the proof
	// becomes <Library>.Proof). Defaults to WarrenProof.
	Library string `json:"library,omitempty"`
	// Ocamlfind builds Warren's policy plugin against this Coq (the
	// compile loads it ahead of the proof; package coqpolicy). Defaults to
	// the ocamlfind beside Coqc, else /usr/bin/ocamlfind; the Coq
	// development files must be installed (Debian: libcoq-core-ocaml-dev).
	Ocamlfind string `json:"ocamlfind,omitempty"`
	// Plugins are the native plugins (findlib names, e.g.
	// coq-core.plugins.ltac2) a proof may load with Declare ML Module
	// under host_io: reject. Defaults to none.
	Plugins []string `json:"plugins,omitempty"`
}

// AxiomPolicy is a profile's declared_axioms policy.
type AxiomPolicy string

// Axiom policies.
const (
	AxiomsReject   AxiomPolicy = "reject"
	AxiomsUsedOnly AxiomPolicy = "used_only"
)

// HostIOPolicy is a profile's host_io policy.
type HostIOPolicy string

// Host I/O policies.
const (
	HostIOReject HostIOPolicy = "reject"
	HostIOAllow  HostIOPolicy = "allow"
)

// LeanConfig configures the Lean checkers.
type LeanConfig struct {
	// Lake is the lake binary. Defaults to "lake" on the sandbox PATH.
	Lake string `json:"lake,omitempty"`
	// Project is the Lean project directory (with its .lake oleans); it must
	// be inside Toolchain. Required for Lean kinds.
	Project string `json:"project"`
	// REPL is the REPL binary (lean-repl). Required for lean-repl unless
	// REPLArgv is set.
	REPL string `json:"repl,omitempty"`
	// REPLArgv, when set, is the whole command that starts a REPL (e.g. a
	// protocol test double). Defaults to [lake, -d, project, env, repl].
	REPLArgv []string `json:"repl_argv,omitempty"`
	// Header is the default header (imports) when a task has none. Defaults
	// to "import Mathlib" for lean-repl and none for lean-file.
	Header string `json:"header,omitempty"`
	// Checker is the warren-lean-check binary (deploy/lean/warren-lean-check,
	// built with the project's toolchain) that replays the compiled proof
	// through the kernel (lean-file). Required for lean-file; absolute, and
	// inside Toolchain so the sandbox sees it.
	Checker string `json:"checker,omitempty"`
}

// PoolConfig configures a warm REPL pool.
type PoolConfig struct {
	// Size is the number of REPL processes. Defaults to 1.
	Size int `json:"size,omitempty"`
	// MaxRequests recycles a process after that many proofs. Defaults to 200.
	MaxRequests int `json:"max_requests,omitempty"`
	// MaxMemoryBytes recycles a process whose memory (its sandbox's
	// anonymous + shmem + swap, sandbox.Handle.Memory) is above it after a
	// proof or before the next. Defaults to 80% of Limits.MemoryBytes.
	MaxMemoryBytes int64 `json:"max_memory_bytes,omitempty"`
	// HeaderTimeout bounds importing the header in a fresh process.
	// Defaults to 5m.
	HeaderTimeout Duration `json:"header_timeout,omitzero"`
	// Prewarm is how many processes start with the header imported before
	// the first proof. Defaults to Size.
	Prewarm *int `json:"prewarm,omitempty"`
}

var profileName = messages.NewLazyRegexp(`^[a-z0-9][a-z0-9-]{0,63}$`)

// LoadProfiles reads a profile file, YAML or JSON (JSON is YAML), refusing
// unknown fields, and returns it with defaults filled and validated.
func LoadProfiles(path string) (*Profiles, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("verify: read profiles: %w", err)
	}
	ps, err := ParseProfiles(data)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", path, err)
	}
	return ps, nil
}

// ParseProfiles parses and validates profile file content.
func ParseProfiles(data []byte) (*Profiles, error) {
	var ps Profiles
	if err := yaml.UnmarshalStrict(data, &ps); err != nil {
		return nil, &ProfileError{Field: "", Msg: err.Error()}
	}
	seen := map[string]bool{}
	for i := range ps.Profiles {
		p := &ps.Profiles[i]
		p.applyDefaults()
		if err := p.validate(); err != nil {
			var pe *ProfileError
			if ok := asProfileError(err, &pe); ok {
				pe.Field = fmt.Sprintf("profiles[%d].%s", i, pe.Field)
			}
			return nil, err
		}
		if seen[p.Name] {
			return nil, &ProfileError{Field: fmt.Sprintf("profiles[%d].name", i), Msg: fmt.Sprintf("duplicate profile %q", p.Name)}
		}
		seen[p.Name] = true
	}
	return &ps, nil
}

// Get returns the named profile or nil.
func (ps *Profiles) Get(name string) *Profile {
	for i := range ps.Profiles {
		if ps.Profiles[i].Name == name {
			return &ps.Profiles[i]
		}
	}
	return nil
}

// Names lists the profiles, for a worker to advertise.
func (ps *Profiles) Names() []string {
	out := make([]string, len(ps.Profiles))
	for i, p := range ps.Profiles {
		out[i] = p.Name
	}
	return out
}

func (p *Profile) applyDefaults() {
	d := DefaultStepLimits
	p.Limits.Wall = cmp.Or(p.Limits.Wall, d.Wall)
	p.Limits.CPU = cmp.Or(p.Limits.CPU, p.Limits.Wall)
	p.Limits.MemoryBytes = cmp.Or(p.Limits.MemoryBytes, d.MemoryBytes)
	p.Limits.Processes = cmp.Or(p.Limits.Processes, d.Processes)
	p.Limits.FileSizeBytes = cmp.Or(p.Limits.FileSizeBytes, d.FileSizeBytes)
	p.Limits.OutputBytes = cmp.Or(p.Limits.OutputBytes, d.OutputBytes)
	p.DeclaredAxioms = cmp.Or(p.DeclaredAxioms, AxiomsReject)
	p.HostIO = cmp.Or(p.HostIO, HostIOReject)
	switch p.Kind {
	case KindCoq:
		if p.Coq == nil {
			p.Coq = &CoqConfig{}
		}
		c := p.Coq
		c.Coqc = cmp.Or(c.Coqc, "/usr/bin/coqc")
		c.Coqchk = cmp.Or(c.Coqchk, "/usr/bin/coqchk")
		if c.Ocamlfind == "" {
			c.Ocamlfind = "/usr/bin/ocamlfind"
			if beside := filepath.Join(filepath.Dir(c.Coqc), "ocamlfind"); filepath.IsAbs(c.Coqc) && fileExists(beside) {
				c.Ocamlfind = beside
			}
		}
		c.Library = cmp.Or(c.Library, "WarrenProof")
		if c.Prlimit == "" {
			if _, err := os.Stat("/usr/bin/prlimit"); err == nil {
				c.Prlimit = "/usr/bin/prlimit"
			} else {
				c.Prlimit = "none"
			}
		}
		if len(p.Toolchain) == 0 {
			// coqc finds its plugins through findlib, which needs its config.
			p.Toolchain = []string{"/usr/lib/ocaml", "/etc/ocamlfind.conf"}
		}
	case KindLeanFile, KindLeanREPL:
		if p.Lean == nil {
			p.Lean = &LeanConfig{}
		}
		p.Lean.Lake = cmp.Or(p.Lean.Lake, "lake")
		if p.Kind == KindLeanREPL {
			p.Lean.Header = cmp.Or(p.Lean.Header, "import Mathlib")
			if p.Pool == nil {
				p.Pool = &PoolConfig{}
			}
			pc := p.Pool
			pc.Size = cmp.Or(pc.Size, 1)
			pc.MaxRequests = cmp.Or(pc.MaxRequests, 200)
			pc.MaxMemoryBytes = cmp.Or(pc.MaxMemoryBytes, p.Limits.MemoryBytes/5*4)
			pc.HeaderTimeout = cmp.Or(pc.HeaderTimeout, Duration(300e9))
			if pc.Prewarm == nil {
				n := pc.Size
				pc.Prewarm = &n
			}
		}
		if len(p.AllowedAxioms) == 0 {
			p.AllowedAxioms = append([]string(nil), DefaultLeanAxioms...)
		}
	}
	if len(p.AllowedAxioms) == 1 && p.AllowedAxioms[0] == "none" {
		p.AllowedAxioms = nil
	}
}

func (p *Profile) validate() error {
	bad := func(field, format string, args ...any) error {
		return &ProfileError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if !profileName.MatchString(p.Name) {
		return bad("name", "%q must match %s", p.Name, profileName)
	}
	switch p.Kind {
	case KindCoq, KindLeanFile, KindLeanREPL:
	case "":
		return bad("kind", "required: coq, lean-file or lean-repl")
	default:
		return bad("kind", "%q is not coq, lean-file or lean-repl", p.Kind)
	}
	for i, t := range p.Toolchain {
		if !filepath.IsAbs(t) {
			return bad(fmt.Sprintf("toolchain[%d]", i), "%q must be an absolute path", t)
		}
	}
	if p.Limits.Wall <= 0 || p.Limits.CPU <= 0 || p.Limits.MemoryBytes <= 0 || p.Limits.Processes <= 0 ||
		p.Limits.FileSizeBytes <= 0 || p.Limits.OutputBytes <= 0 {
		return bad("limits", "every limit must be positive")
	}
	if p.Limits.DiskBytes < 0 {
		return bad("limits.disk_bytes", "must not be negative (got %d); leave it out for the worker's --disk", p.Limits.DiskBytes)
	}
	if p.DeclaredAxioms != AxiomsReject && p.DeclaredAxioms != AxiomsUsedOnly {
		return bad("declared_axioms", "%q is not reject or used_only", p.DeclaredAxioms)
	}
	if p.HostIO != HostIOReject && p.HostIO != HostIOAllow {
		return bad("host_io", "%q is not reject or allow", p.HostIO)
	}
	for i, a := range p.AllowedAxioms {
		if a == "" || strings.ContainsAny(a, " \t\n") {
			return bad(fmt.Sprintf("allowed_axioms[%d]", i), "%q is not a qualified name", a)
		}
	}
	switch p.Kind {
	case KindCoq:
		if p.Lean != nil || p.Pool != nil {
			return bad("lean", "a coq profile takes a coq section only")
		}
		for _, f := range []struct{ name, v string }{{"coq.coqc", p.Coq.Coqc}, {"coq.coqchk", p.Coq.Coqchk}} {
			if !filepath.IsAbs(f.v) {
				return bad(f.name, "%q must be an absolute path", f.v)
			}
		}
		if p.Coq.Prlimit != "none" && !filepath.IsAbs(p.Coq.Prlimit) {
			return bad("coq.prlimit", "%q must be an absolute path or none", p.Coq.Prlimit)
		}
		if !coqIdent.MatchString(p.Coq.Library) {
			return bad("coq.library", "%q must be one Coq identifier", p.Coq.Library)
		}
		for i, a := range p.AllowedAxioms {
			if strings.HasPrefix(a, p.Coq.Library) {
				// A proof's own axioms live under Library; allowing one would allow them all.
				return bad(fmt.Sprintf("allowed_axioms[%d]", i), "%q is inside the proof library %s", a, p.Coq.Library)
			}
			if !strings.Contains(a, ".") {
				return bad(fmt.Sprintf("allowed_axioms[%d]", i), "%q must be fully qualified, e.g. Coq.Logic.Classical_Prop.classic", a)
			}
		}
	case KindLeanFile, KindLeanREPL:
		if p.Coq != nil {
			return bad("coq", "a %s profile takes a lean section, not coq", p.Kind)
		}
		if !filepath.IsAbs(p.Lean.Project) {
			return bad("lean.project", "%q must be an absolute path to the Lean project", p.Lean.Project)
		}
		if p.Kind == KindLeanREPL {
			if p.Lean.REPL == "" && len(p.Lean.REPLArgv) == 0 {
				return bad("lean.repl", "required: the REPL binary (or lean.repl_argv)")
			}
			if p.Pool.Size < 1 || p.Pool.MaxRequests < 1 || p.Pool.MaxMemoryBytes < 1 || p.Pool.HeaderTimeout <= 0 {
				return bad("pool", "size, max_requests, max_memory_bytes and header_timeout must be positive")
			}
			if *p.Pool.Prewarm < 0 || *p.Pool.Prewarm > p.Pool.Size {
				return bad("pool.prewarm", "must be between 0 and size (%d)", p.Pool.Size)
			}
		} else if p.Pool != nil {
			return bad("pool", "only lean-repl profiles take a pool section")
		}
		if p.Kind == KindLeanFile && !filepath.IsAbs(p.Lean.Checker) {
			return bad("lean.checker", "%q must be an absolute path to the built warren-lean-check (deploy/lean/README.md)", p.Lean.Checker)
		}
	}
	return nil
}

// allowed reports whether axiom is on the profile's allow-list.
func (p *Profile) allowed(axiom string) bool {
	for _, a := range p.AllowedAxioms {
		if a == axiom {
			return true
		}
	}
	return false
}

// sandboxLimits converts the step limits to the sandbox's.
func (p *Profile) sandboxLimits() sandbox.Limits {
	return sandbox.Limits{
		Wall:      p.Limits.Wall.D(),
		CPU:       p.Limits.CPU.D(),
		Memory:    p.Limits.MemoryBytes,
		Processes: p.Limits.Processes,
		FileSize:  p.Limits.FileSizeBytes,
		Disk:      p.Limits.DiskBytes,
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
