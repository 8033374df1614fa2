(* Program Mode and an obligation tactic survive Require: a checker that
   elaborates `check : {n | n = 6} := @six` in Program Mode turns the
   mismatch into an obligation and runs this tactic in its trusted step. *)
Require Coq.Program.Tactics.
Global Set Program Mode.
#[global] Obligation Tactic := idtac "the proof's obligation tactic runs"; reflexivity.
Definition six : nat := 6.
