(* The theorem asked for leans on an axiom; a clean, weaker constant with
   the same short name sits in a module, so `Print Assumptions add_zero`
   after `Import M` would look at the wrong one. *)
Axiom cheat : forall n : nat, n + 0 = n.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. exact cheat. Qed.

Module M.
  Theorem add_zero : 0 + 0 = 0.
  Proof. reflexivity. Qed.
End M.
Export M.
