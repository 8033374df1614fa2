"""The toy Lean shared by the lean-file test doubles (see README.md).

Not Lean: a line-based stand-in with just enough structure to exercise
Warren's lean-file pipeline. The fake .olean it writes is a small JSON file.
"""
import ctypes
import json
import re

OLEAN_TAG = "warren-lean-file-double-olean"

# What each importable module declares: name -> (kind, type, uses).
MODULES = {
    "Init": {
        "propext": ("axiom", "∀ {a b : Prop}, (a ↔ b) → a = b", []),
        "Classical.choice": ("axiom", "∀ {α : Sort u}, Nonempty α → α", []),
        "Quot.sound": ("axiom", "∀ {α : Sort u} {r : α → α → Prop} {a b : α}, r a b → Quot.mk r a = Quot.mk r b", []),
        "sorryAx": ("axiom", "(α : Sort u) → optParam Bool false → α", []),
        "Lean.ofReduceBool": ("axiom", "∀ (a b : Bool), Lean.reduceBool a = b → a = b", []),
        "True": ("inductive", "Prop", []),
        "trivial": ("theorem", "True", []),
        "Classical.em": ("theorem", "∀ (p : Prop), p ∨ ¬p", ["propext", "Classical.choice", "Quot.sound"]),
    },
    "Mathlib": {
        "Real.pi": ("def", "ℝ", ["Classical.choice"]),
    },
}

KEYWORDS = ("prelude", "import", "namespace", "end", "open", "set_option", "notation",
            "axiom", "theorem", "lemma", "def", "opaque", "#eval", "run_cmd", "initialize")

# Commands real Lean runs at elaboration (they can do IO); the toy accepts
# and ignores them, as a Lean that ran them successfully would.
RUN_AT_ELABORATION = ("#eval", "run_cmd", "initialize")


class CompileError(Exception):
    pass


def norm(t):
    """Normalise a type: collapse whitespace, drop parentheses around all of it."""
    t = " ".join(t.split())
    while t.startswith("(") and t.endswith(")") and balanced(t[1:-1]):
        t = t[1:-1].strip()
    return t


def balanced(s):
    depth = 0
    for c in s:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


def markers(src):
    """The `-- DOUBLE: <what> [arg]` lines of a source file."""
    out = []
    for line in src.split("\n"):
        m = re.match(r"\s*-- DOUBLE: (\S+)(?: (\S+))?\s*$", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def commands(src):
    """Split a source into (line, text) commands: a command starts at a line
    beginning with a keyword; other non-comment lines continue it."""
    cmds = []
    for i, line in enumerate(src.split("\n"), 1):
        s = line.strip()
        if not s or s.startswith("--"):
            continue
        if s.split()[0] in KEYWORDS or not cmds:
            cmds.append([i, s])
        else:
            cmds[-1][1] += "\n" + s
    return cmds


def imported(imports):
    env = {}
    for mod in imports:
        if mod not in MODULES:
            raise CompileError("unknown module prefix '%s'" % mod)
        for name, (kind, typ, uses) in MODULES[mod].items():
            env[name] = {"name": name, "kind": kind, "type": norm(typ), "uses": list(uses)}
    return env


def elaborate(src, fname):
    """Elaborate a toy source; return (olean dict, warnings)."""
    imports, implicit_init, seen_command = [], True, False
    env, consts, warnings, ns, notations = None, [], [], [], {}
    for line, text in commands(src):
        word = text.split()[0]
        where = "%s:%d:0: " % (fname, line)
        if "ERROR" in text:
            raise CompileError(where + "error: unknown identifier 'ERROR'")
        if word == "prelude":
            if seen_command or imports:
                raise CompileError(where + "error: 'prelude' must come first")
            implicit_init = False
            continue
        if word == "import":
            if seen_command:
                raise CompileError(where + "error: invalid 'import' command, it must be used in the beginning of the file")
            imports.extend(text.split()[1:])
            continue
        if not seen_command:
            seen_command = True
            if implicit_init and "Init" not in imports:
                imports.insert(0, "Init")
            env = imported(imports)
        if word in ("open", "set_option") or word in RUN_AT_ELABORATION:
            continue
        if word == "notation":
            m = re.match(r"notation (\S+) => (.+)$", text, re.S)
            if not m:
                raise CompileError(where + "error: bad notation")
            notations[m.group(1)] = m.group(2)
            continue
        if word == "namespace":
            ns.append(text.split()[1])
            continue
        if word == "end":
            if not ns:
                raise CompileError(where + "error: invalid 'end', no open namespace")
            ns.pop()
            continue
        m = re.match(r"axiom (\S+) : (.+)$", text, re.S)
        if m:
            add(env, consts, ns, m.group(1), "axiom", m.group(2), [], where)
            continue
        m = re.match(r"(theorem|lemma|def|opaque) (\S+) : (.+?) := (.+)$", text, re.S)
        if not m:
            raise CompileError(where + "error: unexpected token")
        kind = {"lemma": "theorem"}.get(m.group(1), m.group(1))
        typ, body = norm(expand(m.group(3), notations)), m.group(4)
        uses = []
        for ref in re.findall(r"@?([A-Za-z_][A-Za-z0-9_.']*)", body):
            if ref == "sorry":
                uses.append("sorryAx")
            elif ref in env:
                uses.append(ref)
        for ref in re.findall(r"@([A-Za-z_][A-Za-z0-9_.']*)", body):
            if ref not in env:
                raise CompileError(where + "error: unknown identifier '%s'" % ref)
            if env[ref]["type"] != typ:
                raise CompileError(where + "error: type mismatch: %s has type %s but is expected to have type %s" % (ref, env[ref]["type"], typ))
        if "sorryAx" in uses:
            warnings.append(where + "warning: declaration uses 'sorry'")
        add(env, consts, ns, m.group(2), kind, typ, uses, where)
    if env is None:
        imports = (["Init"] if implicit_init and "Init" not in imports else []) + imports
    return {"tag": OLEAN_TAG, "imports": imports, "constants": consts, "markers": []}, warnings


def expand(text, notations):
    """Apply the file's notations to a type, as the elaborator would."""
    for tok, rhs in notations.items():
        text = re.sub(r"(?<![A-Za-z0-9_.'])%s(?![A-Za-z0-9_.'])" % re.escape(tok), rhs, text)
    return text


def add(env, consts, ns, name, kind, typ, uses, where):
    full = ".".join(ns + [name])
    if full in env:
        raise CompileError(where + "error: '%s' has already been declared" % full)
    c = {"name": full, "kind": kind, "type": norm(typ), "uses": sorted(set(uses)), "kernel_ok": True}
    env[full] = c
    consts.append(c)


def read_olean(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("tag") != OLEAN_TAG:
        raise ValueError("%s: not a double .olean (bad header)" % path)
    return data


def segfault():
    """Die of a real SIGSEGV. kill(getpid(), SIGSEGV) would not do: in a
    sandbox the process may be its PID namespace's init, which ignores
    signals it has no handler for unless the kernel forces them."""
    ctypes.string_at(0)
