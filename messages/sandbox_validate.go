package messages

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeSandboxRequest turns a request body into a request validated for
// op. Any refusal is an *Error with a stable code and the field's path.
func DecodeSandboxRequest(op SandboxOp, data []byte) (*SandboxRequest, error) {
	if len(data) > MaxSandboxRequestBytes {
		return nil, fieldErr(CodeTooLarge, "", "request is %d bytes, at most %d; send files in chunks of at most %d bytes", len(data), MaxSandboxRequestBytes, MaxSandboxChunk)
	}
	if !utf8.Valid(data) {
		return nil, fieldErr(CodeInvalidUTF8, "", "request is not valid UTF-8; binary data goes base64-encoded in data and stdin")
	}
	var r SandboxRequest
	if err := decodeStrict(data, &r); err != nil {
		return nil, err
	}
	if err := r.Validate(op); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeSandboxReply decodes a reply; unknown fields are tolerated (a newer
// host may add some). A reply carrying an error is returned as that error.
func DecodeSandboxReply(data []byte) (*SandboxReply, error) {
	var r SandboxReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fieldErr(CodeMalformed, "", "not a JSON sandbox reply: %v", err)
	}
	if r.V != Version {
		return nil, fieldErr(CodeVersion, "v", "sandbox reply version %d is not supported", r.V)
	}
	if r.Error != nil {
		if r.Error.Code == "" {
			r.Error.Code = CodeInternal
		}
		return nil, r.Error
	}
	return &r, nil
}

// DecodeSandboxEvent decodes an exec output event.
func DecodeSandboxEvent(data []byte) (*SandboxEvent, error) {
	var e SandboxEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fieldErr(CodeMalformed, "", "not a JSON sandbox event: %v", err)
	}
	if e.V != Version {
		return nil, fieldErr(CodeVersion, "v", "sandbox event version %d is not supported", e.V)
	}
	return &e, nil
}

// Validate checks the request for op: the session named (ids, token), the
// op's section present and no other, and every field in its domain.
func (r *SandboxRequest) Validate(op SandboxOp) error {
	if r.V != Version {
		return fieldErr(CodeVersion, "v", "version %d is not supported; send %d", r.V, Version)
	}
	if !op.Valid() {
		return fieldErr(CodeInvalidField, "op", "%q is not a sandbox operation", op)
	}
	if op.needsSandbox() {
		if r.ID == "" {
			return fieldErr(CodeMissingField, "id", "required: the sandbox id warren sandbox create printed")
		}
		if _, _, err := ParseSandboxID(r.ID); err != nil {
			return err
		}
		if r.Token == "" {
			return fieldErr(CodeMissingField, "token", "required: the token create returned (--token, WARREN_SANDBOX_TOKEN)")
		}
		if len(r.Token) > MaxSandboxTokenBytes {
			return fieldErr(CodeTokenInvalid, "token", "longer than %d bytes", MaxSandboxTokenBytes)
		}
	}
	want := map[SandboxOp]string{SbxCreate: "create", SbxExec: "exec", SbxKill: "kill",
		SbxRead: "file", SbxWrite: "file", SbxList: "file", SbxStat: "file", SbxMkdir: "file", SbxRemove: "file"}[op]
	for name, present := range map[string]bool{"create": r.Create != nil, "exec": r.Exec != nil, "kill": r.Kill != nil, "file": r.File != nil} {
		switch {
		case name == want && !present && name != "create" && !(name == "file" && op == SbxList):
			return fieldErr(CodeMissingField, name, "%s needs its %s section", op, name)
		case name != want && present:
			return fieldErr(CodeContradictory, name, "%s takes no %s section", op, name)
		}
	}
	switch {
	case r.Create != nil:
		return r.Create.validate()
	case r.Exec != nil:
		return r.Exec.validate()
	case r.Kill != nil:
		return r.Kill.validate()
	case r.File != nil:
		return r.File.validate(op)
	}
	return nil
}

func (c *SandboxCreate) validate() error {
	if c.Profile != "" && !ValidName(c.Profile) {
		return fieldErr(CodeInvalidField, "create.profile", "must match %s", namePattern)
	}
	for _, f := range []struct {
		name string
		v    int64
		max  int64
	}{
		{"create.idle_ms", c.IdleMS, MaxLimitMillis},
		{"create.ttl_ms", c.TTLMS, 30 * 24 * 3600 * 1000},
		{"create.memory_bytes", c.MemoryBytes, 1 << 40},
		{"create.disk_bytes", c.DiskBytes, 1 << 44},
	} {
		if f.v < 0 || f.v > f.max {
			return fieldErr(CodeInvalidField, f.name, "%d is outside 0..%d (0 = the host's default)", f.v, f.max)
		}
	}
	switch c.Network {
	case "", NetworkNone, NetworkLoopback:
	default:
		return fieldErr(CodeInvalidField, "create.network", "%q is not a network policy; use none or loopback", c.Network)
	}
	return checkSessionEnv("create.env", c.Env)
}

func checkSessionEnv(field string, env map[string]string) error {
	if len(env) > MaxEnvVars {
		return fieldErr(CodeTooLarge, field, "%d variables, at most %d", len(env), MaxEnvVars)
	}
	for k, v := range env {
		if err := checkEnvVars(field+"."+k, map[string]string{k: v}); err != nil {
			return err
		}
		if len(k)+len(v)+1 >= MaxArgStrlen {
			return fieldErr(CodeTooLarge, field+"."+k, "NAME=value is %d bytes, at most %d", len(k)+len(v)+1, MaxArgStrlen-1)
		}
	}
	return nil
}

func (e *SandboxExec) validate() error {
	switch {
	case len(e.Argv) == 0:
		return fieldErr(CodeMissingField, "exec.argv", "the command to run")
	case len(e.Argv) > MaxArgs:
		return fieldErr(CodeTooLarge, "exec.argv", "%d arguments, at most %d", len(e.Argv), MaxArgs)
	case e.Argv[0] == "":
		return fieldErr(CodeInvalidField, "exec.argv[0]", "the program name is empty")
	case e.TimeoutMS < 0 || e.TimeoutMS > MaxLimitMillis:
		return fieldErr(CodeInvalidField, "exec.timeout_ms", "%d is outside 0..%d (0 = no timeout)", e.TimeoutMS, MaxLimitMillis)
	case !e.Background && e.Reply == "":
		return fieldErr(CodeMissingField, "exec.reply", "a foreground exec needs a reply subject for its output (an inbox of yours)")
	case e.Reply != "" && (len(e.Reply) > 256 || !replyPattern.MatchString(e.Reply)):
		return fieldErr(CodeInvalidField, "exec.reply", "must be a NATS subject without wildcards, at most 256 bytes")
	case len(e.Stdin) > MaxSandboxChunk:
		return fieldErr(CodeTooLarge, "exec.stdin", "%d bytes, at most %d; write larger input to a file first", len(e.Stdin), MaxSandboxChunk)
	}
	for i, a := range e.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fieldErr(CodeNULByte, argField(i), "contains a NUL byte, which exec cannot pass")
		}
		if len(a) >= MaxArgStrlen {
			return fieldErr(CodeTooLarge, argField(i), "%d bytes, at most %d", len(a), MaxArgStrlen-1)
		}
	}
	if strings.IndexByte(e.Cwd, 0) >= 0 || len(e.Cwd) > MaxPathBytes {
		return fieldErr(CodeInvalidField, "exec.cwd", "a path in the home without NUL, at most %d bytes", MaxPathBytes)
	}
	return checkSessionEnv("exec.env", e.Env)
}

func argField(i int) string { return "exec.argv[" + strconv.Itoa(i) + "]" }

func (k *SandboxKill) validate() error {
	if k.PID <= 0 {
		return fieldErr(CodeInvalidField, "kill.pid", "%d is not a pid of this sandbox (see ps)", k.PID)
	}
	if k.Signal != "" && !slices.Contains(SandboxSignals, k.Signal) {
		return fieldErr(CodeInvalidField, "kill.signal", "%q is not one of %s", k.Signal, strings.Join(SandboxSignals, ", "))
	}
	return nil
}

func (f *SandboxFile) validate(op SandboxOp) error {
	switch {
	case strings.IndexByte(f.Path, 0) >= 0:
		return fieldErr(CodeNULByte, "file.path", "contains a NUL byte")
	case len(f.Path) > MaxPathBytes:
		return fieldErr(CodeTooLarge, "file.path", "longer than %d bytes", MaxPathBytes)
	case f.Path == "" && op != SbxList && op != SbxStat:
		return fieldErr(CodeMissingField, "file.path", "a path in the sandbox's home")
	case f.Offset < 0:
		return fieldErr(CodeInvalidField, "file.offset", "must not be negative")
	case f.Length < 0 || f.Length > MaxSandboxChunk:
		return fieldErr(CodeInvalidField, "file.length", "%d is outside 0..%d; read larger files in ranges", f.Length, MaxSandboxChunk)
	case len(f.Data) > MaxSandboxChunk:
		return fieldErr(CodeTooLarge, "file.data", "%d bytes, at most %d; write larger files in ranges", len(f.Data), MaxSandboxChunk)
	case len(f.Data) > 0 && op != SbxWrite:
		return fieldErr(CodeContradictory, "file.data", "only write takes data")
	case f.Mode > 0o777:
		return fieldErr(CodeInvalidField, "file.mode", "%o is not a permission (0..0777)", f.Mode)
	case f.Limit < 0 || f.Limit > MaxSandboxListLimit:
		return fieldErr(CodeInvalidField, "file.limit", "%d is outside 0..%d", f.Limit, MaxSandboxListLimit)
	case strings.Contains(f.After, "/") || strings.IndexByte(f.After, 0) >= 0:
		return fieldErr(CodeInvalidField, "file.after", "a name in the directory, as the previous page's next")
	}
	return nil
}
