(* Warren's policy plugin for the untrusted Coq compile.

   coqc hands every sentence it is about to run to Stm.add, which calls
   Stm.document_add_hook with the sentence as Coq's own parser read it
   (a Vernacexpr.vernac_control) before anything of it runs: the state
   then holds every earlier sentence, notations included. This plugin is
   loaded ahead of the proof (coqc -l prelude.v) and sets that hook, so
   sentence boundaries and command kinds are Coq's, never a second reading.

   Configuration, from the environment (set by Warren's checker):
     WARREN_COQ_POLICY_OUT      file the records go to (required)
     WARREN_COQ_POLICY_HOST_IO  "reject" refuses host I/O commands
     WARREN_COQ_POLICY_PLUGINS  native plugins Declare ML Module may name,
                                separated by commas
     WARREN_COQ_POLICY_HEADER_LINES  how many lines of the file are the
                                task's header (0: none)
   Records are JSON lines:
     {"kind":"ready"}                                     the hook is set
     {"kind":"refused","line":L,"command":C,"why":W}      host_io: reject
     {"kind":"declared","line":L,"command":C,"names":[..]} an assumption the
        proof declares outside a section and a module type, not under Fail
        or Succeed (which leave nothing)
     {"kind":"module","line":L,"names":[..]}               Declare Module
     {"kind":"origin","line":L,"command":C,"names":[..]}   where axioms that
        coqchk's summary lists come from, to name their line (Admitted, Admit
        Obligations, Include of a module type): no verdict of its own
     {"kind":"header","line":L,"command":C}   the header declares what is
        made anew each time it is compiled (an inductive type, a module,
        an opaque constant, an assumption): the statement, elaborated with
        its own copy of the header, could never match
   Inside the body of a functor (a module with parameters, not a module
   type), what becomes an assumption when the functor is applied is a
   declaration too: Declare Module, Include of a module type, Admitted,
   Admit Obligations (coqchk's summary never lists an unapplied functor).
   A refused command raises before it runs, so coqc stops there. *)

open Vernacexpr

let json_string s =
  let b = Buffer.create (String.length s + 2) in
  Buffer.add_char b '"';
  String.iter
    (fun c ->
      match c with
      | '"' -> Buffer.add_string b "\\\""
      | '\\' -> Buffer.add_string b "\\\\"
      | c when Char.code c < 0x20 || Char.code c = 0x7f ->
          Buffer.add_string b (Printf.sprintf "\\u%04x" (Char.code c))
      | c -> Buffer.add_char b c)
    s;
  Buffer.add_char b '"';
  Buffer.contents b

let fail_config msg = CErrors.user_err (Pp.str ("warren policy plugin: " ^ msg))

let out =
  match Sys.getenv_opt "WARREN_COQ_POLICY_OUT" with
  | None | Some "" -> fail_config "WARREN_COQ_POLICY_OUT is not set"
  | Some path -> (
      try open_out_gen [ Open_wronly; Open_creat; Open_excl; Open_text ] 0o600 path
      with Sys_error e -> fail_config ("cannot create the record file: " ^ e))

let host_io_reject = Sys.getenv_opt "WARREN_COQ_POLICY_HOST_IO" = Some "reject"

let header_lines =
  match Sys.getenv_opt "WARREN_COQ_POLICY_HEADER_LINES" with
  | Some s -> ( try int_of_string s with Failure _ -> fail_config "WARREN_COQ_POLICY_HEADER_LINES is not a number")
  | None -> 0

let allowed_plugins =
  match Sys.getenv_opt "WARREN_COQ_POLICY_PLUGINS" with
  | None | Some "" -> []
  | Some s -> String.split_on_char ',' s

let emit fields =
  output_string out ("{" ^ String.concat "," fields ^ "}\n");
  flush out

let line_of loc = match loc with Some l -> l.Loc.line_nb | None -> 0

let record_names kind line command names =
  emit
    [
      "\"kind\":" ^ json_string kind;
      "\"line\":" ^ string_of_int line;
      "\"command\":" ^ json_string command;
      "\"names\":[" ^ String.concat "," (List.map json_string names) ^ "]";
    ]

let refuse ?loc command why =
  emit
    [
      "\"kind\":\"refused\"";
      "\"line\":" ^ string_of_int (line_of loc);
      "\"command\":" ^ json_string command;
      "\"why\":" ^ json_string why;
    ];
  CErrors.user_err ?loc
    (Pp.str (Printf.sprintf "Warren refuses %s: it %s (profile policy host_io: reject)." command why))

(* The host I/O a command does, if any: its name as written and why it is
   refused. Everything not listed here is allowed. *)
let host_io expr =
  match expr with
  | VernacLoad _ -> [ ("Load", "reads a .v file from the host") ]
  | VernacChdir (Some _) -> [ ("Cd", "changes the working directory") ]
  | VernacAddLoadPath _ -> [ ("Add LoadPath", "adds a host directory to the load path") ]
  | VernacRemoveLoadPath _ -> [ ("Remove LoadPath", "changes the load path") ]
  | VernacAddMLPath _ -> [ ("Add ML Path", "adds a host directory to the native plugin path") ]
  | VernacExtraDependency _ -> [ ("Extra Dependency", "makes the proof depend on a file on the load path") ]
  | VernacDeclareMLModule l ->
      List.filter_map
        (fun m ->
          if List.mem m allowed_plugins then None
          else
            Some
              ( Printf.sprintf "Declare ML Module %S" m,
                "loads a native plugin that is not on the profile's coq.plugins allow-list" ))
        l
  | VernacPrint (PrintUniverses (_, _, Some _)) ->
      [ ("Print Universes to a file", "writes the universe graph to a file") ]
  | VernacLocate (LocateFile _) ->
      [ ("Locate File", "tells whether a host file exists (under Fail or Succeed, the verdict would depend on it)") ]
  | VernacSetOption (_, ("NativeCompute" :: _ as name), _) ->
      [ ("Set " ^ String.concat " " name, "makes native_compute write profiling files") ]
  | VernacSetOption (_, [ "Dump"; "Arith" ], v) when v <> OptionUnset ->
      [ ("Set Dump Arith", "makes lia, nia and psatz write their problems to files") ]
  | VernacExtend (("Extraction", 2), _) -> [ ("Extraction \"file\"", "writes the extracted code to a file") ]
  | VernacExtend (("Extraction", 3), _) -> [ ("Extraction TestCompile", "runs the OCaml compiler") ]
  | VernacExtend (("SeparateExtraction", _), _) -> [ ("Separate Extraction", "writes one file per module") ]
  | VernacExtend (("ExtractionLibrary", _), _) -> [ ("Extraction Library", "writes a file per library") ]
  | VernacExtend (("RecursiveExtractionLibrary", _), _) ->
      [ ("Recursive Extraction Library", "writes a file per library") ]
  | _ -> []

let control_io control =
  List.filter_map
    (function ControlRedirect _ -> Some ("Redirect", "writes a file") | _ -> None)
    control

let discards control = List.exists (function ControlFail | ControlSucceed -> true | _ -> false) control

let id_names l = List.map (fun ((id : Names.Id.t CAst.t), _) -> Names.Id.to_string id.CAst.v) l

let binder_names bs =
  List.concat_map
    (function
      | Constrexpr.CLocalAssum (names, _, _) ->
          List.map (fun (n : Names.Name.t CAst.t) -> Names.Name.print n.CAst.v |> Pp.string_of_ppcmds) names
      | Constrexpr.CLocalDef (n, _, _) -> [ Names.Name.print n.CAst.v |> Pp.string_of_ppcmds ]
      | Constrexpr.CLocalPattern _ -> [ "_" ])
    bs

let assumption_word = function
  | NoDischarge, Decls.Logical -> "Axiom"
  | NoDischarge, Decls.Definitional -> "Parameter"
  | NoDischarge, Decls.Conjectural -> "Conjecture"
  | DoDischarge, Decls.Logical -> "Hypothesis"
  | DoDischarge, Decls.Definitional -> "Variable"
  | _, (Decls.Context | Decls.Conjectural) -> "Context"

(* An assumption is a declaration of the proof unless it leaves nothing
   (Fail, Succeed), is an interface (anywhere inside a module type), or is
   a section variable a closed section discharges. *)
let counts ~discharged control =
  (not (discards control)) && (not (Lib.is_modtype ())) && not (discharged && Global.sections_are_opened ())

(* Inside the body of a functor: an enclosing module (not a module type)
   has parameters. *)
let in_functor_body () =
  let env = Global.safe_env () in
  let params = Safe_typing.module_num_parameters env and modtypes = Safe_typing.module_is_modtype env in
  (not (Lib.is_modtype ()))
  && List.length params = List.length modtypes
  && List.exists2 (fun n is_modtype -> n > 0 && not is_modtype) params modtypes

let names_of_module_type (m : Constrexpr.module_ast) =
  match m.CAst.v with
  | Constrexpr.CMident qid -> (
      try
        ignore (Nametab.locate_modtype qid);
        Some (Libnames.string_of_qualid qid)
      with Not_found -> None)
  | Constrexpr.CMwith _ -> Some "a module type"
  | Constrexpr.CMapply _ -> None

(* The fields of a module type, by label: what an Include of it adds. *)
let modtype_fields (m : Constrexpr.module_ast) =
  match m.CAst.v with
  | Constrexpr.CMident qid -> (
      try
        let mp = Nametab.locate_modtype qid in
        match (Environ.lookup_modtype mp (Global.env ())).Declarations.mod_type with
        | Declarations.NoFunctor fields -> List.map (fun (l, _) -> Names.Label.to_string l) fields
        | Declarations.MoreFunctor _ -> []
      with Not_found -> [])
  | _ -> []

let current_proof_names () =
  try [ Names.Id.to_string (Vernacstate.Declare.get_current_proof_name ()) ] with _ -> []

(* Where an axiom that coqchk lists comes from, outside what declarations
   records: only to name its line in a rejection. *)
let origins line control expr =
  if (not (discards control)) && not (Lib.is_modtype ()) then
    match expr with
    | VernacEndProof Admitted -> record_names "origin" line "Admitted" (current_proof_names ())
    | VernacExtend (("Admit_Obligations", _), _) -> record_names "origin" line "Admit Obligations" []
    | VernacInclude mods -> (
        match List.concat_map (fun (m, _) -> modtype_fields m) mods with
        | [] -> ()
        | fields -> record_names "origin" line "Include" fields)
    | _ -> ()

let declarations line control expr =
  match expr with
  | VernacAssumption (((d, _) as kind), _, items) when counts ~discharged:(d = DoDischarge) control ->
      record_names "declared" line (assumption_word kind) (List.concat_map (fun (_, (ids, _)) -> id_names ids) items)
  | VernacContext bs when counts ~discharged:true control -> record_names "declared" line "Context" (binder_names bs)
  | VernacDeclareInstance ((id, _), _, _, _) when counts ~discharged:false control ->
      record_names "declared" line "Declare Instance" [ Names.Id.to_string id.CAst.v ]
  | VernacDeclareModule (_, id, _, _) when (not (discards control)) && in_functor_body () ->
      record_names "declared" line "Declare Module in a functor" [ Names.Id.to_string id.CAst.v ]
  | VernacDeclareModule (_, id, _, _) when (not (discards control)) && not (Lib.is_modtype ()) ->
      record_names "module" line "Declare Module" [ Names.Id.to_string id.CAst.v ]
  | VernacInclude mods when (not (discards control)) && in_functor_body () -> (
      match List.filter_map (fun (m, _) -> names_of_module_type m) mods with
      | [] -> ()
      | types -> record_names "declared" line "Include of a module type in a functor" types)
  | VernacEndProof Admitted when (not (discards control)) && in_functor_body () ->
      record_names "declared" line "Admitted in a functor" []
  | VernacExtend (("Admit_Obligations", _), _) when (not (discards control)) && in_functor_body () ->
      record_names "declared" line "Admit Obligations in a functor" []
  | _ -> ()

(* What the header makes anew each time it is compiled: generative
   (inductive types, modules, assumptions) or opaque (a proof ended with
   Qed or Admitted, a Proof term). *)
let header_generative expr =
  match expr with
  | VernacInductive _ -> Some "an inductive type or record"
  | VernacAssumption _ | VernacDeclareInstance _ | VernacContext _ -> Some "an assumption"
  | VernacDefineModule _ | VernacDeclareModule _ -> Some "a module"
  | VernacEndProof (Proved (Opaque, _)) | VernacExactProof _ -> Some "an opaque constant (Qed)"
  | VernacEndProof Admitted -> Some "an assumption (Admitted)"
  | _ -> None

let header_check line control expr =
  if line > 0 && line <= header_lines && not (discards control) then
    match header_generative expr with
    | Some what ->
        emit [ "\"kind\":\"header\""; "\"line\":" ^ string_of_int line; "\"command\":" ^ json_string what ]
    | None -> ()

let check (ast : vernac_control) _ =
  let loc = ast.CAst.loc in
  let { control; expr; _ } = ast.CAst.v in
  (if host_io_reject then
     match control_io control @ host_io expr with
     | (command, why) :: _ -> refuse ?loc command why
     | [] -> ());
  header_check (line_of loc) control expr;
  declarations (line_of loc) control expr;
  origins (line_of loc) control expr

let () =
  Hook.set Stm.document_add_hook check;
  emit [ "\"kind\":\"ready\"" ]
