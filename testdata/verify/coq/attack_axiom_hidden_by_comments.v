(* a comment with a string "*)" and (* a nested *) comment *)
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed. (* "Axiom" *) Conjecture (* *) junk (* " *)" *) : False.
