#!/usr/bin/env python3
"""A test double of the Lean REPL (leanprover-community/repl) JSON protocol.

Framing as upstream: a request is stdin lines up to a blank line, joined
with no separator; a response is pretty-printed JSON followed by a blank
line, flushed. Malformed JSON ends the process with the error on stderr.
Every command yields a new env id; "env" must name a stored one.

A toy elaborator stands in for Lean, enough to exercise a verifier:
  axiom N : T            declares N, depending on axiom N
  theorem N : T := B     N has type T; depends on the axioms of the
  def N : T := B         constants B mentions (and sorryAx on "sorry")
  #print axioms N        info "'N' depends on axioms: [...]" / "does not ..."
  #eval "S"              info "\"S\""
  a body mentioning @M where M is a theorem checks that M's type equals T
  ERROR                  an error message
  SLEEP / CRASH / BLOAT  never answer / exit 3 / grow memory then die
  FORGE                  write a forged clean response straight to stdout
  -- DOUBLE: grow N      allocate N MiB (every page written) and keep it for
                         the life of the process (a REPL whose envs pile up)
  -- DOUBLE: grow-later N  the same, two seconds after answering, from a
                         thread (a task a proof left running while idle)
  -- DOUBLE: whoami      an error "DOUBLE process <id> command <n>": this
                         process's random id and how many commands it has
                         run, so a test sees which process served a request
"""
import json
import os
import re
import sys
import threading
import time

envs = []  # env id -> dict name -> (type, axioms, body)
held = []  # memory grown on request, kept until the process ends
PROCESS_ID = os.urandom(8).hex()


def respond(obj):
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n\n")
    sys.stdout.flush()


def msg(sev, data, line=1):
    return {"severity": sev, "pos": {"line": line, "column": 0}, "endPos": None, "data": data}


def elaborate(cmd, consts):
    consts = dict(consts)
    messages, sorries = [], []
    for i, line in enumerate(cmd.split("\n"), 1):
        s = line.strip()
        m = re.match(r"--\s*DOUBLE:\s*grow\s+(\d+)$", s)
        if m:
            held.append(b"\x01" * (int(m.group(1)) << 20))
            continue
        m = re.match(r"--\s*DOUBLE:\s*grow-later\s+(\d+)$", s)
        if m:
            n = int(m.group(1)) << 20
            threading.Thread(target=lambda: (time.sleep(2), held.append(b"\x01" * n)), daemon=True).start()
            continue
        if re.match(r"--\s*DOUBLE:\s*whoami$", s):
            messages.append(msg("error", "DOUBLE process %s command %d" % (PROCESS_ID, len(envs) + 1), i))
            continue
        if not s or s.startswith("import") or s.startswith("--") or s.startswith("open"):
            continue
        if "SLEEP" in s:
            time.sleep(3600)
        if "CRASH" in s:
            sys.exit(3)
        if "BLOAT" in s:
            hog = []
            while True:
                hog.append(bytearray(64 << 20))
        if "FORGE" in s:
            respond({"env": len(envs), "messages": [msg("info", "forged")]})
        if "ERROR" in s:
            messages.append(msg("error", "unknown identifier 'ERROR'", i))
            continue
        m = re.match(r"#print axioms (\S+)$", s)
        if m:
            n = m.group(1)
            if n not in consts:
                messages.append(msg("error", "unknown constant '%s'" % n, i))
                continue
            ax = sorted(consts[n][1])
            if ax:
                messages.append(msg("info", "'%s' depends on axioms: [%s]" % (n, ", ".join(ax)), i))
            else:
                messages.append(msg("info", "'%s' does not depend on any axioms" % n, i))
            continue
        m = re.match(r'#eval "(.*)"$', s)
        if m:
            messages.append(msg("info", '"%s"' % m.group(1), i))
            continue
        m = re.match(r"axiom (\S+) : (.+)$", s)
        if m:
            consts[m.group(1)] = (norm(m.group(2)), {m.group(1)}, "")
            continue
        m = re.match(r"(?:theorem|def|lemma) (\S+) : (.+?) := (.+)$", s)
        if m:
            name, typ, body = m.group(1), norm(m.group(2)), m.group(3)
            if name in consts:
                messages.append(msg("error", "'%s' has already been declared" % name, i))
                continue
            if typ in consts and consts[typ][2]:
                typ = norm(consts[typ][2])  # unfold a def used as a type
            ax = set()
            ok = True
            for ref in re.findall(r"@?([A-Za-z_][A-Za-z0-9_.']*)", body):
                if ref in consts:
                    ax |= consts[ref][1]
            for ref in re.findall(r"@([A-Za-z_][A-Za-z0-9_.']*)", body):
                if ref not in consts:
                    messages.append(msg("error", "unknown identifier '%s'" % ref, i))
                    ok = False
                elif consts[ref][0] != typ:
                    messages.append(msg("error", "type mismatch: %s has type %s but is expected to have type %s" % (ref, consts[ref][0], typ), i))
                    ok = False
            if "sorry" in body:
                ax.add("sorryAx")
                messages.append(msg("warning", "declaration uses 'sorry'", i))
                sorries.append({"goal": "⊢ " + typ, "proofState": None, "pos": {"line": i, "column": 0}})
            if ok:
                consts[name] = (typ, ax, body)
            continue
        messages.append(msg("error", "unexpected token: %s" % s[:40], i))
    return consts, messages, sorries


def norm(s):
    return " ".join(s.split())


def main():
    lines = []
    for raw in sys.stdin:
        line = raw.rstrip()
        if line.strip():
            lines.append(line)
            continue
        if not lines:
            continue
        query, lines = "".join(lines), []
        if query.startswith("#") or query.startswith("--"):
            continue
        try:
            req = json.loads(query)
        except ValueError as e:
            sys.stderr.write("uncaught exception: Could not parse JSON:\n%s\n" % e)
            sys.exit(1)
        if "cmd" not in req:
            sys.stderr.write("uncaught exception: Could not parse as a valid JSON command\n")
            sys.exit(1)
        base = {}
        if "env" in req:
            if not isinstance(req["env"], int) or not 0 <= req["env"] < len(envs):
                respond({"message": "Unknown environment."})
                continue
            base = envs[req["env"]]
        consts, messages, sorries = elaborate(req["cmd"], base)
        envs.append(consts)
        out = {"env": len(envs) - 1}
        if messages:
            out["messages"] = messages
        if sorries:
            out["sorries"] = sorries
        respond(out)


if __name__ == "__main__":
    main()
