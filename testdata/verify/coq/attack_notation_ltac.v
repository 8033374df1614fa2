(* The theorem is an abbreviation whose expansion runs a tactic: a checker
   that elaborates @Proof.add_zero runs this tactic in its trusted step
   (and here the tactic finds a library proof, so it would be accepted). *)
Notation add_zero := ltac:(idtac "the proof's tactic runs"; exact (fun n : nat => eq_sym (plus_n_O n))) (only parsing).
