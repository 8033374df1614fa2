/-
warren-lean-check: the trusted third step of Warren's lean-file checker
(docs/verify.md, "Lean"). Modelled on lean4checker and SafeVerify.

  warren-lean-check PROOF.olean TARGET.olean THEOREM TARGET_CONST OUT.json

Warren runs it in a sandbox, in a directory holding only the two .olean
files, under `lake -d <project> env` (so LEAN_PATH names the project's
oleans). It

* reads both .olean files as data (`Lean.readModuleData`). Neither module
  is imported, so none of the proof's code runs here: no `initialize`, no
  attribute handler, no macro, no `#eval`;
* builds the environment of the modules PROOF imports (`Lean.importModules`,
  which is `importModulesCore` followed by `finalizeImport`; `[init]`
  declarations run only after `enableInitializersExecution`, which this
  program never calls, and those modules are the project's, not the proof's);
* requires that environment to include every module TARGET imports (the
  task's header), so every constant the statement names means the same in
  both, and the proof cannot bring its own `Nat` (say, after `prelude`);
* replays every constant of PROOF through the kernel
  (`Lean.Environment.replay`): a declaration the elaborator admitted without
  a kernel check (`debug.skipKernelTC`, `addDeclWithoutChecking`, a
  metaprogram writing the environment) is rejected here;
* checks that PROOF itself declares THEOREM, that it is a theorem, and that
  its type and universe parameters equal (`Expr` `==`) those of TARGET_CONST,
  which Warren elaborated from the statement alone, in a module that never
  saw the proof;
* collects the axioms THEOREM depends on in the replayed environment;

and writes ONE JSON object to OUT.json (never to stdout, which library code
could also print to). It exits 0 whenever it wrote the report; a report
with `"ok": false` says why it could not check.

NOT COMPILED. This file was written without a Lean toolchain (none could be
installed where it was written), against the Lean 4 core API of about
v4.20-v4.27: `Lean.Environment.replay` taking and returning a
`Kernel.Environment` (v4.19 and later; before that it took an
`Environment`: drop `.toKernelEnv`), single-file .olean (modules that do not
use the `module` keyword). Later toolchains may store auxiliary constants
in several modules ("realizations"): the replay then refuses the proof's
copy of one its imports already hold, a false reject to handle there. Build it with the project's toolchain and run
TestLeanFileReal (verify/lean_file_test.go) before trusting it.
-/
import Lean
import Lean.Replay

open Lean

namespace WarrenLeanCheck

/-- The report schema version; verify/lean_file_report.go checks it. -/
def reportVersion : Nat := 1

/-- The report. docs/verify.md documents each field. -/
structure Report where
  ok : Bool := false
  error : String := ""
  importsCover : Bool := false
  replayError : String := ""
  theoremFound : Bool := false
  kind : String := ""
  isTheorem : Bool := false
  typeMatches : Bool := false
  axioms : Array Name := #[]

/-- Every field, always: Warren refuses a report that lacks one. -/
def Report.json (r : Report) : Json :=
  Json.mkObj [
    ("version", Lean.toJson reportVersion),
    ("ok", Lean.toJson r.ok),
    ("error", Lean.toJson r.error),
    ("imports_cover", Lean.toJson r.importsCover),
    ("replay_error", Lean.toJson r.replayError),
    ("theorem_found", Lean.toJson r.theoremFound),
    ("kind", Lean.toJson r.kind),
    ("is_theorem", Lean.toJson r.isTheorem),
    ("type_matches", Lean.toJson r.typeMatches),
    ("axioms", Lean.toJson (r.axioms.map (·.toString)))]

def kindOf : ConstantInfo → String
  | .axiomInfo _  => "axiom"
  | .defnInfo _   => "def"
  | .thmInfo _    => "theorem"
  | .opaqueInfo _ => "opaque"
  | .quotInfo _   => "quot"
  | .inductInfo _ => "inductive"
  | .ctorInfo _   => "constructor"
  | .recInfo _    => "recursor"

/-- The constant `n` as declared by the module itself (not by its imports). -/
def findIn (mod : ModuleData) (n : Name) : Option ConstantInfo := Id.run do
  for name in mod.constNames, ci in mod.constants do
    if name == n then
      return some ci
  return none

structure AxiomState where
  visited : NameSet := {}
  axioms : Array Name := #[]
  missing : Array Name := #[]

/--
The axioms `c` depends on: the walk of `Lean.CollectAxioms.collect` (types
and values of every constant reached, constructors of every inductive), but
over the kernel environment the replay produced, and recording a name it
cannot find instead of skipping it. We do not call `CollectAxioms` itself:
its monad is over the elaborator's `Environment`, and recent versions answer
for imported constants from an environment extension this program does not
load.
-/
partial def collectAxioms (env : Kernel.Environment) (c : Name) : StateM AxiomState Unit := do
  if (← get).visited.contains c then
    return
  modify fun s => { s with visited := s.visited.insert c }
  let walk (e : Expr) : StateM AxiomState Unit := e.getUsedConstants.forM (collectAxioms env)
  match env.find? c with
  | some (.axiomInfo _)  => modify fun s => { s with axioms := s.axioms.push c }
  | some (.defnInfo v)   => walk v.type *> walk v.value
  | some (.thmInfo v)    => walk v.type *> walk v.value
  | some (.opaqueInfo v) => walk v.type *> walk v.value
  | some (.quotInfo v)   => walk v.type
  | some (.ctorInfo v)   => walk v.type
  | some (.recInfo v)    => walk v.type
  | some (.inductInfo v) => walk v.type *> v.ctors.forM (collectAxioms env)
  | none                 => modify fun s => { s with missing := s.missing.push c }

/-- The checks after a successful replay. -/
def judge (kenv : Kernel.Environment) (proof : ModuleData) (thm : Name) (target : ConstantInfo) : Report := Id.run do
  let base : Report := { ok := true, importsCover := true }
  -- Declared by the proof's own module: a library theorem does not count.
  let some _ := findIn proof thm
    | return base
  -- The kernel-checked copy, not the olean's.
  let some ci := kenv.find? thm
    | return { base with theoremFound := true, replayError := s!"{thm} was not replayed (unsafe or partial)" }
  let isTheorem := ci matches .thmInfo _
  let typeMatches := ci.type == target.type && ci.levelParams == target.levelParams
  let (_, st) := Id.run ((collectAxioms kenv thm).run {})
  if !st.missing.isEmpty then
    return { error := s!"constants missing from the replayed environment: {st.missing}" }
  return { base with theoremFound := true, kind := kindOf ci, isTheorem := isTheorem,
                     typeMatches := typeMatches, axioms := st.axioms }

def check (proofFile targetFile : System.FilePath) (thm target : Name) : IO Report := do
  -- Read as data; never imported.
  let (proof, _) ← readModuleData proofFile
  let (tgt, _) ← readModuleData targetFile
  let some targetCi := findIn tgt target
    | return { error := s!"{targetFile} declares no {target}" }
  let env ← importModules proof.imports {} 0
  let closure := env.header.moduleNames
  unless tgt.imports.all (fun i => closure.contains i.module) do
    return { ok := true }
  let mut newConstants : Std.HashMap Name ConstantInfo := {}
  for name in proof.constNames, ci in proof.constants do
    newConstants := newConstants.insert name ci
  match (← (Lean.Environment.replay newConstants env.toKernelEnv).toBaseIO) with
  | .error e => return { ok := true, importsCover := true, replayError := toString e }
  | .ok kenv => return judge kenv proof thm targetCi

def run (proofFile targetFile thm target : String) : IO Report := do
  try
    initSearchPath (← findSysroot)
    check ⟨proofFile⟩ ⟨targetFile⟩ thm.toName target.toName
  catch e =>
    return { error := toString e }

end WarrenLeanCheck

def main (args : List String) : IO UInt32 := do
  match args with
  | [proofFile, targetFile, thm, target, out] =>
    let report ← WarrenLeanCheck.run proofFile targetFile thm target
    IO.FS.writeFile ⟨out⟩ (report.json.compress ++ "\n")
    return 0
  | _ =>
    IO.eprintln "usage: warren-lean-check PROOF.olean TARGET.olean THEOREM TARGET_CONST OUT.json"
    return 2
